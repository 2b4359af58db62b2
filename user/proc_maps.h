/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_maps.h: a snapshot of /proc/PID/maps, the address-to-file map of a process. */
#ifndef GS_PROC_MAPS_H
#define GS_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct gs_mapping {
	uint64_t start, end; /* [start, end) */
	uint64_t pgoff;	     /* file offset of start */
	uint64_t dev;	     /* makedev(major, minor) */
	uint64_t inode;
	bool exec;
	bool writable;
	bool deleted; /* the file was unlinked or replaced since it was mapped */
	char *path;   /* unescaped, without " (deleted)"; NULL for anonymous memory */
};

struct gs_maps {
	pid_t pid;
	size_t nr;
	struct gs_mapping *mappings; /* sorted by start */
};

/* Reads /proc/PID/maps. Returns NULL with errno set; caller frees with gs_maps__free(). */
struct gs_maps *gs_maps__read(pid_t pid);
/* Parses maps text (the format of /proc/PID/maps); for tests and for read(). */
struct gs_maps *gs_maps__parse(pid_t pid, const char *text);
void gs_maps__free(struct gs_maps *maps);
/* The mapping containing addr, or NULL. Borrowed. */
const struct gs_mapping *gs_maps__find(const struct gs_maps *maps, uint64_t addr);

/*
 * Opens the file m maps, for reading (O_RDONLY | O_CLOEXEC), and checks that it is the file
 * the snapshot names: a regular file (checked before it is opened, user/safe_open.h) with
 * its device and inode. Opened through /proc/PID/map_files (valid even for deleted files),
 * else by its path resolved inside the target's root (/proc/PID/root, never leaving it,
 * following no magic link, no symlink as the last component), else, once the process is
 * gone, by the path in gpusnoop's root. Returns the descriptor (the caller closes it; *st
 * holds its fstat when st is given) or -errno: -ESTALE when another file is there now,
 * -ENOENT for anonymous memory or a file gone from every path.
 *
 * Everything done with a process's file (parse, probe, read) goes through this descriptor:
 * a path, even /proc/PID/map_files/A-B, may name another file by the time it is reopened.
 */
int gs_mapping__open(const struct gs_maps *maps, const struct gs_mapping *m, struct stat *st);

/*
 * Whether only root can change the file: owned by root, not writable by group or others.
 * Other files are never mapped into gpusnoop (truncation: SIGBUS) nor probed for every
 * process at once (their owner chooses their code).
 */
bool gs_is_trusted_file(const struct stat *st);

#endif /* GS_PROC_MAPS_H */
