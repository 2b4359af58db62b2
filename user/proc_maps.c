// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc_maps.c: parse /proc/PID/maps, including escaped and deleted paths. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "user/array.h"
#include "user/proc_info.h"
#include "user/proc_maps.h"
#include "user/safe_open.h"

#define DELETED_SUFFIX " (deleted)"

/*
 * The kernel escapes only '\n' in paths, as "\012" (seq_file_path(m, file, "\n")); a
 * backslash is printed as is. Undo exactly that, in place.
 */
static void unescape_path(char *s)
{
	char *out = s;

	while (*s) {
		if (!strncmp(s, "\\012", 4)) {
			*out++ = '\n';
			s += 4;
		} else {
			*out++ = *s++;
		}
	}
	*out = '\0';
}

static int parse_line(char *line, struct gs_mapping *m)
{
	unsigned int major, minor;
	char perms[5];
	int path_at = 0;
	size_t len;

	memset(m, 0, sizeof(*m));
	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &m->start,
		   &m->end, perms, &m->pgoff, &major, &minor, &m->inode, &path_at) < 7)
		return -EINVAL;
	m->dev = makedev(major, minor);
	m->exec = perms[2] == 'x';
	m->writable = perms[1] == 'w';
	if (!path_at || line[path_at] == '\0')
		return 0;
	len = strlen(line + path_at);
	if (len && line[path_at + len - 1] == '\n')
		line[path_at + --len] = '\0';
	if (line[path_at] != '/') /* [heap], [stack], [vdso], anon names */
		return 0;
	if (len > strlen(DELETED_SUFFIX) &&
	    !strcmp(line + path_at + len - strlen(DELETED_SUFFIX), DELETED_SUFFIX)) {
		m->deleted = true;
		line[path_at + len - strlen(DELETED_SUFFIX)] = '\0';
	}
	unescape_path(line + path_at);
	m->path = strdup(line + path_at);
	return m->path ? 0 : -ENOMEM;
}

struct gs_maps *gs_maps__parse(pid_t pid, const char *text)
{
	struct gs_maps *maps = calloc(1, sizeof(*maps));
	size_t cap = 0;
	const char *p = text;

	if (!maps)
		return NULL;
	maps->pid = pid;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char *line = strndup(p, n);
		int err;

		if (!line)
			goto out_nomem;
		if (GS_ARRAY_RESERVE(maps->mappings, maps->nr, cap, 64)) {
			free(line);
			goto out_nomem;
		}
		err = parse_line(line, &maps->mappings[maps->nr]);
		free(line);
		if (err == -ENOMEM)
			goto out_nomem;
		if (!err)
			maps->nr++;
		p += n + (nl ? 1 : 0);
	}
	return maps;

out_nomem:
	gs_maps__free(maps);
	errno = ENOMEM;
	return NULL;
}

struct gs_maps *gs_maps__read(pid_t pid)
{
	char path[64], *text;
	struct gs_maps *maps;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	text = gs_read_text_file(path, &len);
	if (!text)
		return NULL;
	if (len == 0) { /* a zombie or kernel thread has no address space */
		free(text);
		errno = ESRCH;
		return NULL;
	}
	maps = gs_maps__parse(pid, text);
	free(text);
	return maps;
}

void gs_maps__free(struct gs_maps *maps)
{
	if (!maps)
		return;
	for (size_t i = 0; i < maps->nr; i++)
		free(maps->mappings[i].path);
	free(maps->mappings);
	free(maps);
}

const struct gs_mapping *gs_maps__find(const struct gs_maps *maps, uint64_t addr)
{
	size_t lo = 0, hi = maps->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct gs_mapping *m = &maps->mappings[mid];

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}

bool gs_is_trusted_file(const struct stat *st)
{
	return st->st_uid == 0 && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

static const char *root_of(const struct gs_maps *maps, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/root", (int)maps->pid);
	return buf;
}

/* m's path resolved inside the target's root: a symlink can lead nowhere outside it. */
static int open_in_root(const struct gs_maps *maps, const struct gs_mapping *m, struct stat *st)
{
	char root[64];

	return gs_open_in_root(root_of(maps, root, sizeof(root)), m->path, st);
}

int gs_mapping__open(const struct gs_maps *maps, const struct gs_mapping *m, struct stat *st)
{
	struct stat local;
	char path[96];
	int fd;

	if (!st)
		st = &local;
	if (!m->path)
		return -ENOENT;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)maps->pid,
		 m->start, m->end);
	/* the mapped file itself, looked at before it is opened (see user/safe_open.h) */
	fd = open(path, O_PATH | O_CLOEXEC);
	fd = fd < 0 ? -errno : gs_reopen_regular(fd, st);
	/* a path names another file, or none, once the mapped one was deleted */
	if (fd < 0 && !m->deleted)
		fd = open_in_root(maps, m, st);
	/*
	 * A process gone since its snapshot took its root with it; the same path in ours is
	 * often the same file (checked below like any other), so its frames still resolve.
	 */
	if (fd < 0 && !m->deleted && access(root_of(maps, path, sizeof(path)), F_OK))
		fd = gs_open_in_root(NULL, m->path, st);
	if (fd == -EINVAL) /* not a regular file */
		return -ESTALE;
	if (fd < 0)
		return fd;
	/* the range was remapped, or the path replaced, since the snapshot */
	if (st->st_dev != m->dev || st->st_ino != m->inode) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}
