// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* out_dir.c: report files under one directory, created safely, oldest removed past a cap. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/log.h"
#include "user/out_dir.h"
#include "user/out_file.h"

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

/* Whether a file name is a temporary this module (gs_tmp_create) made for prefix. */
static bool is_own_temp(const char *name, const char *prefix)
{
	return name[0] == '.' && !strncmp(name + 1, prefix, strlen(prefix)) &&
	       strstr(name, ".tmp.");
}

/* Temporaries of a run that was killed while writing: nobody else writes here. */
static void remove_stale_temps(struct gs_out_dir *d)
{
	struct dirent *de;
	DIR *dir;
	int fd = dup(d->fd);

	if (fd < 0 || !(dir = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(dir)))
		if (is_own_temp(de->d_name, d->prefix) && !unlinkat(d->fd, de->d_name, 0))
			gs_info("output directory %s: removed %s, left unfinished", d->path,
				de->d_name);
	closedir(dir);
}

/* The directory must be this process's alone: nobody else may add, swap or remove files. */
static int check_private(const char *path, int fd)
{
	struct stat st;

	if (fstat(fd, &st)) {
		gs_err("output directory %s: %s", path, strerror(errno));
		return -errno;
	}
	if (st.st_uid != geteuid()) {
		char me[32] = "root";

		if (geteuid())
			snprintf(me, sizeof(me), "uid %u", (unsigned int)geteuid());
		gs_err("output directory %s: owned by uid %u, not by %s: refused", path,
		       (unsigned int)st.st_uid, me);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		gs_err("output directory %s: writable by group or others (mode %04o): refused "
		       "(chmod go-w)",
		       path, (unsigned int)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

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
	/* checked on the descriptor every file is created through, not on the name again */
	err = check_private(path, d->fd);
	if (err) {
		gs_out_dir__free(d);
		return err;
	}
	remove_stale_temps(d);
	*out = d;
	return 0;
}

/* prefix + name, and the path shown for it. Returns 0 or -ENAMETOOLONG (logged). */
static int file_name(struct gs_out_dir *d, const char *name, char *file, size_t file_len,
		     char *path_out, size_t len)
{
	if ((size_t)snprintf(file, file_len, "%s%s", d->prefix, name) >= file_len ||
	    (size_t)snprintf(path_out, len, "%s/%s", d->path, file) >= len) {
		gs_err("output file name too long: %s%s", d->prefix, name);
		return -ENAMETOOLONG;
	}
	return 0;
}

int gs_out_dir__create(struct gs_out_dir *d, const char *name, struct gs_out **out, char *path_out,
		       size_t len)
{
	char file[256];
	int err = file_name(d, name, file, sizeof(file), path_out, len);

	if (err)
		return err;
	return gs_out__openat(out, d->fd, file, path_out, 0600, GS_OUT_NOREPLACE);
}

int gs_out_dir__create_tmp(struct gs_out_dir *d, const char *name, char *tmp, size_t tmp_len,
			   char *path_out, size_t len)
{
	char file[256];
	int fd = file_name(d, name, file, sizeof(file), path_out, len);

	if (fd)
		return fd;
	fd = gs_tmp_create(d->fd, file, 0600, tmp, tmp_len);
	if (fd < 0)
		gs_err("%s: creating a temporary for it: %s", path_out, strerror(-fd));
	return fd;
}

int gs_out_dir__commit(struct gs_out_dir *d, const char *tmp, const char *name)
{
	char file[256], path[512];
	int err = file_name(d, name, file, sizeof(file), path, sizeof(path));

	if (err) {
		unlinkat(d->fd, tmp, 0);
		return err;
	}
	err = gs_tmp_commit(d->fd, tmp, file, true);
	if (err)
		gs_err("%s: %s", path, strerror(-err));
	return err;
}

void gs_out_dir__discard(struct gs_out_dir *d, const char *tmp)
{
	if (unlinkat(d->fd, tmp, 0) && errno != ENOENT)
		gs_warn("output directory %s: removing %s: %s", d->path, tmp, strerror(errno));
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
