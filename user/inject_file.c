// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* inject_file.c: the library --inject loads, checked where the target sees it and once loaded. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include "user/inject_file.h"
#include "user/proc_maps.h"

const char *gs_inject_file__why_not(const struct stat *st)
{
	if (!S_ISREG(st->st_mode))
		return "not a regular file";
	if (st->st_uid != 0)
		return "not owned by root";
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return "writable by group or others";
	return NULL;
}

int gs_inject_file__check_at(int root_fd, const char *path, struct gs_file_id *id, const char **why)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK,
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	struct stat st;
	long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof(how));
	int err = 0;

	*why = NULL;
	if (fd < 0)
		return -errno;
	if (fstat((int)fd, &st))
		err = -errno;
	else if ((*why = gs_inject_file__why_not(&st)))
		err = -EPERM;
	else
		*id = (struct gs_file_id){ .dev = st.st_dev, .inode = st.st_ino };
	close((int)fd);
	return err;
}

int gs_inject_file__check(pid_t pid, const char *path, struct gs_file_id *id, const char **why)
{
	char root[64];
	int fd, err;

	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	*why = NULL;
	if (fd < 0)
		return -errno;
	err = gs_inject_file__check_at(fd, path, id, why);
	close(fd);
	return err;
}

bool gs_inject_file__mapped(const struct gs_maps *maps, const struct gs_file_id *id)
{
	for (size_t i = 0; maps && i < maps->nr; i++)
		if (maps->mappings[i].path && maps->mappings[i].dev == id->dev &&
		    maps->mappings[i].inode == id->inode)
			return true;
	return false;
}
