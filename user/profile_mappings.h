/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* profile_mappings.h: where a sampled address's file lies in its process, for pprof. */
#ifndef GS_PROFILE_MAPPINGS_H
#define GS_PROFILE_MAPPINGS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "user/profile.h"

struct gs_symcache;
struct gs_profile_mappings;

/* Reads mappings from cache's snapshots (borrowed: it must outlive the result). */
struct gs_profile_mappings *gs_profile_mappings__new(struct gs_symcache *cache);
void gs_profile_mappings__free(struct gs_profile_mappings *pm);

/*
 * Fills *out with the mapping of pid's file that holds addr: its range and file offset
 * (from /proc/PID/maps), the file's GNU build id (read once per file, through the descriptor
 * the snapshot verifies) and whether it is the process's executable. out->build_id is
 * borrowed until gs_profile_mappings__free(). false when no file is mapped at addr.
 */
bool gs_profile_mappings__lookup(struct gs_profile_mappings *pm, pid_t pid, uint64_t addr,
				 struct gs_profile_mapping *out);

/*
 * The GNU build id (NT_GNU_BUILD_ID) of the ELF file open at fd, in lowercase hex, into hex
 * (at least 2 * GS_BUILD_ID_MAX + 1 bytes). Returns 0, -ENOENT without one, or -errno.
 */
#define GS_BUILD_ID_MAX 64
int gs_read_build_id(int fd, char *hex, size_t size);

#endif /* GS_PROFILE_MAPPINGS_H */
