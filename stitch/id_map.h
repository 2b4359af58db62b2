/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* id_map.h: each input's numeric flow/async ids renumbered 1, 2, ... so inputs never share one. */
#ifndef GS_ID_MAP_H
#define GS_ID_MAP_H

#include <stddef.h>
#include <stdint.h>
#include "user/hash_index.h"

/*
 * (input, id) -> a new id, given in order of first appearance from 1: the same pair always
 * gets the same id (a flow's start and end, an async begin and end stay matched), two pairs
 * never do, whatever the ids were (gpusnoop's are sparse, up to 2^53). New ids stay small,
 * exact as JSON numbers. Memory: 16 bytes a pair (up to twice that as the array doubles) and
 * 32 to 64 in the hash index: under 100 bytes per distinct pair, up to max pairs.
 */
struct gs_id_pair;

struct gs_id_map {
	struct gs_id_pair *pairs; /* by new id - 1 */
	size_t nr, cap, max;
	struct gs_hash_index index;
};

/* An empty map taking at most max distinct pairs. */
void gs_id_map__init(struct gs_id_map *m, size_t max);
/* The new id of (input, id), given it now if it has none: 0, -E2BIG past max, -ENOMEM. */
int gs_id_map__get(struct gs_id_map *m, uint32_t input, int64_t id, int64_t *out);
void gs_id_map__release(struct gs_id_map *m);

#endif /* GS_ID_MAP_H */
