/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_maps.h: a snapshot of /proc/PID/maps, the address-to-file map of a process. */
#ifndef GS_PROC_MAPS_H
#define GS_PROC_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
 * Writes into buf a path by which this process can open the mapped file: the
 * /proc/PID/map_files link (valid even for deleted files) when it can be opened, else the
 * path resolved through /proc/PID/root (the target's mount namespace). Returns 0 or -errno.
 */
int gs_mapping__open_path(const struct gs_maps *maps, const struct gs_mapping *m, char *buf,
			  size_t len);

#endif /* GS_PROC_MAPS_H */
