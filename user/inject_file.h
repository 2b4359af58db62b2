/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* inject_file.h: is the library --inject loads a file root owns, and is it what got loaded. */
#ifndef GS_INJECT_FILE_H
#define GS_INJECT_FILE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct gs_maps;

struct gs_file_id {
	uint64_t dev, inode;
};

/*
 * Why the file st describes may not be loaded into another process by root: not a regular
 * file, not owned by root, or writable by group or others. NULL when it may.
 */
const char *gs_inject_file__why_not(const struct stat *st);
/*
 * Checks path as a process whose root directory is root_fd sees it: resolved inside root_fd
 * (openat2 RESOLVE_IN_ROOT: symbolic links followed as the process's dlopen follows them,
 * never out of its root; no /proc magic links). Returns 0 with the file's identity in *id,
 * -EPERM with the reason in *why, or -errno (the file could not be opened).
 */
int gs_inject_file__check_at(int root_fd, const char *path, struct gs_file_id *id,
			     const char **why);
/* The same, for the mount namespace and root of pid (through /proc/PID/root). */
int gs_inject_file__check(pid_t pid, const char *path, struct gs_file_id *id, const char **why);
/* Whether a mapping of maps is of the file id (device and inode). */
bool gs_inject_file__mapped(const struct gs_maps *maps, const struct gs_file_id *id);

#endif /* GS_INJECT_FILE_H */
