// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* safe_open.c: look up as O_PATH, check for a regular file, then open for reading. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>
#include "user/safe_open.h"

int gs_reopen_regular(int pathfd, struct stat *st)
{
	char self[32];
	int fd, err = 0;

	if (fstat(pathfd, st))
		err = -errno;
	else if (!S_ISREG(st->st_mode))
		err = -EINVAL;
	if (err) {
		close(pathfd);
		return err;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pathfd);
	/* the inode checked above; O_NONBLOCK only as a second guard */
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	err = fd < 0 ? -errno : 0;
	close(pathfd);
	return fd < 0 ? err : fd;
}

/* openat2() with O_PATH and no symlink as the last component; openat() before Linux 5.6 */
static int open_path_at(int dirfd, const char *path, int flags, uint64_t resolve)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_PATH | O_CLOEXEC | O_NOFOLLOW),
		.resolve = resolve,
	};
	/* glibc 2.36 has no openat2() wrapper */
	int fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	if (fd < 0 && errno == ENOSYS)
		fd = openat(dirfd, path, flags | O_PATH | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

int gs_open_dir_at(int dirfd, const char *path, uint64_t resolve)
{
	return open_path_at(dirfd, path, O_DIRECTORY, resolve);
}

int gs_open_regular_at(int dirfd, const char *path, uint64_t resolve, struct stat *st)
{
	int fd = open_path_at(dirfd, path, 0, resolve);

	if (fd < 0)
		return fd;
	/* O_PATH|O_NOFOLLOW opens a symlink itself: refuse it as one */
	if (fstat(fd, st) == 0 && S_ISLNK(st->st_mode)) {
		close(fd);
		return -ELOOP;
	}
	return gs_reopen_regular(fd, st);
}

int gs_open_in_root(const char *root, const char *path, struct stat *st)
{
	int dirfd = open(root ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC), fd;

	if (dirfd < 0)
		return -errno;
	fd = gs_open_regular_at(dirfd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS, st);
	close(dirfd);
	return fd;
}
