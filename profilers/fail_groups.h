/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* fail_groups.h: a process's failed allocation calls, grouped by stack and error, bounded. */
#ifndef GS_FAIL_GROUPS_H
#define GS_FAIL_GROUPS_H

#include <stddef.h>
#include <stdint.h>
#include "user/hash_index.h"

/*
 * A process failing from ever new call sites (JIT code, a hostile loop) must cost neither a
 * scan per failure nor unbounded memory: groups are found by hash, and past max the new ones
 * are folded into one counted "[other failures]" group (stack_id GS_FAIL_OTHER_STACK).
 */
#define GS_FAIL_GROUPS_MAX  1024
#define GS_FAIL_OTHER_STACK UINT32_MAX

/* failed allocation calls from one stack with one error */
struct gs_fail_group {
	uint64_t count;
	uint64_t bytes_requested;
	uint32_t stack_id; /* GS_FAIL_OTHER_STACK: the folded rest (api and ret then 0) */
	uint16_t api;
	int32_t ret;
};

struct gs_fail_groups {
	struct gs_fail_group *items; /* in first-seen order; the folded group among them */
	size_t nr, cap;
	struct gs_hash_index index; /* items by (stack_id, api, ret) */
	size_t max;		    /* distinct groups kept before folding; 0: GS_FAIL_GROUPS_MAX */
	uint64_t folded;	    /* failures counted in the folded group */
};

/* Counts one failure. Returns 0 or -ENOMEM (the failure then not counted). */
int gs_fail_groups__add(struct gs_fail_groups *g, uint32_t stack_id, uint16_t api, int32_t ret,
			uint64_t bytes);
/* Sorts the groups by count, most first, the folded one last (the hash follows them). */
void gs_fail_groups__sort(struct gs_fail_groups *g);
void gs_fail_groups__release(struct gs_fail_groups *g);

#endif /* GS_FAIL_GROUPS_H */
