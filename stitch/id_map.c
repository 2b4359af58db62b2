// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* id_map.c: (input, id) pairs in order of first appearance; a pair's new id is its place + 1. */
#include <errno.h>
#include <stdlib.h>
#include "stitch/id_map.h"
#include "user/array.h"

struct gs_id_pair {
	int64_t id;
	uint32_t input;
};

struct pair_key {
	const struct gs_id_map *m;
	uint32_t input;
	int64_t id;
};

static uint64_t pair_hash(uint32_t input, int64_t id)
{
	return gs_hash_combine(gs_hash_u64((uint64_t)id), input);
}

static bool same_pair(const void *ctx, size_t pos)
{
	const struct pair_key *k = ctx;

	return k->m->pairs[pos].id == k->id && k->m->pairs[pos].input == k->input;
}

void gs_id_map__init(struct gs_id_map *m, size_t max)
{
	/* new ids stay 32-bit: the index holds positions as uint32 */
	*m = (struct gs_id_map){ .max = max < UINT32_MAX ? max : UINT32_MAX - 1 };
}

int gs_id_map__get(struct gs_id_map *m, uint32_t input, int64_t id, int64_t *out)
{
	struct pair_key k = { .m = m, .input = input, .id = id };
	uint64_t hash = pair_hash(input, id);
	size_t pos;
	int err;

	if (!gs_hash_index__find(&m->index, hash, same_pair, &k, &pos)) {
		if (m->nr >= m->max)
			return -E2BIG;
		err = GS_ARRAY_RESERVE(m->pairs, m->nr, m->cap, 1024);
		if (!err)
			err = gs_hash_index__add(&m->index, hash, m->nr);
		if (err)
			return err;
		m->pairs[m->nr] = (struct gs_id_pair){ .id = id, .input = input };
		pos = m->nr++;
	}
	*out = (int64_t)pos + 1;
	return 0;
}

void gs_id_map__release(struct gs_id_map *m)
{
	free(m->pairs);
	gs_hash_index__release(&m->index);
	*m = (struct gs_id_map){ .max = m->max };
}
