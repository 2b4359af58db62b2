/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* safe_open.h: open files that other processes name, as regular files only, never a device. */
#ifndef GS_SAFE_OPEN_H
#define GS_SAFE_OPEN_H

#include <stdint.h>
#include <sys/stat.h>

/*
 * A name that another process chose (a mapped file's path, its perf map, its PyTorch's
 * version.py) may lead to a FIFO, which blocks an open, or to a device, whose open alone
 * acts (a watchdog starts counting; a tape rewinds), for instance through a directory
 * symlink swapped in, or a bind mount in the user's own namespace. So these files are looked
 * up as O_PATH (no open of the file itself), checked with fstat to be regular, and only then
 * opened for reading, through /proc/self/fd: the inode that was checked.
 */

/*
 * The O_PATH descriptor pathfd reopened for reading if it is a regular file (its stat in
 * *st); pathfd is closed either way. Returns the descriptor, -EINVAL when it is not a
 * regular file, or another -errno.
 */
int gs_reopen_regular(int pathfd, struct stat *st);

/*
 * Opens path under dirfd for reading, as a regular file only (see above); resolve is
 * openat2()'s RESOLVE_* flags (before Linux 5.6 openat() with no symlink in the last
 * component). The last component is never followed as a symlink. Returns the descriptor
 * (its stat in *st) or -errno: -EINVAL when it is not a regular file, -ELOOP a symlink.
 */
int gs_open_regular_at(int dirfd, const char *path, uint64_t resolve, struct stat *st);

/*
 * An O_PATH descriptor of the directory path under dirfd, resolved as by
 * gs_open_regular_at(). Returns it or -errno.
 */
int gs_open_dir_at(int dirfd, const char *path, uint64_t resolve);

/*
 * Opens path for reading as if root (a directory; NULL: "/") were "/": symlinks and ".."
 * never lead out of it, no magic link is followed, the last component is no symlink, and
 * only a regular file is opened. Returns the descriptor (its stat in *st) or -errno.
 */
int gs_open_in_root(const char *root, const char *path, struct stat *st);

#endif /* GS_SAFE_OPEN_H */
