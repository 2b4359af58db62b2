// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* out_dir.c: report files under one directory, created safely, oldest removed past a cap. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/log.h"
#include "user/out_dir.h"

struct gs_out_dir {
	int fd;
	char *path;
	char *prefix;
	uint64_t max_bytes;
};

struct dir_file {
	char name[256];
	struct timespec mtime;
	uint64_t bytes;
};

int gs_out_dir__open(struct gs_out_dir **out, const char *path, const char *prefix,
		     uint64_t max_bytes)
{
	struct gs_out_dir *d;
	int err;

	if (mkdir(path, 0700) && errno != EEXIST) {
		err = -errno;
		gs_err("output directory %s: %s", path, strerror(errno));
		return err;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	/* O_NOFOLLOW refuses a symlink as the last component (ENOTDIR with O_DIRECTORY) */
	d->fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	d->path = strdup(path);
	d->prefix = strdup(prefix);
	d->max_bytes = max_bytes;
	if (d->fd < 0 || !d->path || !d->prefix) {
		struct stat st;

		err = d->fd < 0 ? -errno : -ENOMEM;
		gs_err("output directory %s: %s", path,
		       !lstat(path, &st) && S_ISLNK(st.st_mode) ? "is a symlink" : strerror(-err));
		gs_out_dir__free(d);
		return err;
	}
	*out = d;
	return 0;
}

FILE *gs_out_dir__create(struct gs_out_dir *d, const char *name, char *path_out, size_t len)
{
	char file[256];
	FILE *f;
	int fd;

	if ((size_t)snprintf(file, sizeof(file), "%s%s", d->prefix, name) >= sizeof(file) ||
	    (size_t)snprintf(path_out, len, "%s/%s", d->path, file) >= len) {
		gs_err("output file name too long: %s%s", d->prefix, name);
		return NULL;
	}
	fd = openat(d->fd, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		gs_err("%s: %s", path_out, strerror(errno));
		return NULL;
	}
	f = fdopen(fd, "w");
	if (!f) {
		gs_err("%s: %s", path_out, strerror(errno));
		close(fd);
	}
	return f;
}

static int cmp_oldest_first(const void *a, const void *b)
{
	const struct dir_file *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

void gs_out_dir__retain(struct gs_out_dir *d, const char *sub, size_t keep, uint64_t keep_bytes)
{
	char match[512];
	struct dir_file *files = NULL;
	size_t nr = 0, cap = 0;
	uint64_t total = 0;
	struct dirent *de;
	DIR *dir;
	int fd;

	snprintf(match, sizeof(match), "%s%s", d->prefix, sub);
	fd = dup(d->fd);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		gs_warn("output directory %s: cannot list it: %s", d->path, strerror(errno));
		return;
	}
	rewinddir(dir);
	while ((de = readdir(dir))) {
		struct stat st;

		if (strncmp(de->d_name, match, strlen(match)) ||
		    strlen(de->d_name) >= sizeof(files->name) ||
		    fstatat(d->fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (nr == cap) {
			size_t grown_cap = cap ? cap * 2 : 64;
			struct dir_file *grown = realloc(files, grown_cap * sizeof(*files));

			if (!grown)
				break;
			files = grown;
			cap = grown_cap;
		}
		strcpy(files[nr].name, de->d_name);
		files[nr].mtime = st.st_mtim;
		files[nr].bytes = (uint64_t)st.st_size;
		total += files[nr].bytes;
		nr++;
	}
	closedir(dir);
	qsort(files, nr, sizeof(*files), cmp_oldest_first);
	/* the newest file stays even alone over the cap: it is the report just written */
	for (size_t i = 0;
	     i + 1 < nr && ((keep && nr - i > keep) || (keep_bytes && total > keep_bytes)); i++) {
		if (unlinkat(d->fd, files[i].name, 0) && errno != ENOENT) {
			gs_warn("output directory %s: removing %s: %s", d->path, files[i].name,
				strerror(errno));
			continue;
		}
		gs_info("output directory %s: removed %s (retention)", d->path, files[i].name);
		total -= files[i].bytes;
	}
	free(files);
}

void gs_out_dir__enforce_cap(struct gs_out_dir *d)
{
	gs_out_dir__retain(d, "", 0, d->max_bytes);
}

void gs_out_dir__free(struct gs_out_dir *d)
{
	if (!d)
		return;
	if (d->fd >= 0)
		close(d->fd);
	free(d->path);
	free(d->prefix);
	free(d);
}
