/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_ids.h: trace ids that one process's numbers never share with another's. */
#ifndef GS_TIMELINE_PROC_IDS_H
#define GS_TIMELINE_PROC_IDS_H

#include <stdint.h>
#include <sys/types.h>
#include "user/addr_map.h"

/* processes numbered in ids: id << 32 stays below 2^53 (exact as a JSON number) */
#define GS_PROC_IDS_MAX (1u << 21)

/*
 * A flow's or an async range's id in the trace: the process's own number (1, 2, ... in order
 * of first sight, kept in m at (pid, key); a new one after the caller forgets pid at an exit
 * or exec) above its own id's low 32 bits. Processes' ids restart (CUPTI's correlation ids,
 * NVTX's range ids), and a trace holds several: Perfetto never joins two processes' rows.
 * 0 when memory ran out: no link rather than a wrong one.
 */
static inline uint64_t gs_proc_id(struct gs_addr_map *m, uint64_t key, uint64_t *seen, pid_t pid,
				  uint64_t id)
{
	uint64_t nr;

	if (!gs_addr_map__get(m, pid, key, &nr)) {
		nr = (*seen)++ % (GS_PROC_IDS_MAX - 1) + 1;
		if (gs_addr_map__set(m, pid, key, nr))
			return 0;
	}
	return nr << 32 | (id & 0xffffffffu);
}

#endif /* GS_TIMELINE_PROC_IDS_H */
