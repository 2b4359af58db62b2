// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* id_map.c: an open-addressing table of (input, id) -> sequential new id. */
#include <errno.h>
#include <stdlib.h>
#include "stitch/id_map.h"

struct gs_id_slot {
	int64_t id;
	uint32_t input;
	uint32_t out; /* 0: an empty slot (new ids start at 1) */
};

/* splitmix64's finalizer: sparse ids (pid << 32 | n) spread over the table */
static size_t slot_of(uint32_t input, int64_t id, size_t cap)
{
	uint64_t x = (uint64_t)id ^ ((uint64_t)input << 56 | (uint64_t)input);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return (size_t)(x ^ (x >> 31)) & (cap - 1);
}

static struct gs_id_slot *probe(struct gs_id_slot *slots, size_t cap, uint32_t input, int64_t id)
{
	size_t i = slot_of(input, id, cap);

	while (slots[i].out && (slots[i].id != id || slots[i].input != input))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

/* doubles the table (kept at most half full, so a probe always ends at an empty slot) */
static int grow(struct gs_id_map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct gs_id_slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].out)
			*probe(slots, cap, m->slots[i].input, m->slots[i].id) = m->slots[i];
	free(m->slots);
	m->slots = slots;
	m->cap = cap;
	return 0;
}

void gs_id_map__init(struct gs_id_map *m, size_t max)
{
	/* new ids are 32-bit in the table */
	*m = (struct gs_id_map){ .max = max < UINT32_MAX ? max : UINT32_MAX - 1 };
}

int gs_id_map__get(struct gs_id_map *m, uint32_t input, int64_t id, int64_t *out)
{
	struct gs_id_slot *s;
	int err;

	if (m->cap) {
		s = probe(m->slots, m->cap, input, id);
		if (s->out) {
			*out = s->out;
			return 0;
		}
	}
	if (m->nr >= m->max)
		return -E2BIG;
	if (2 * (m->nr + 1) > m->cap) {
		err = grow(m);
		if (err)
			return err;
	}
	s = probe(m->slots, m->cap, input, id);
	*s = (struct gs_id_slot){ .id = id, .input = input, .out = (uint32_t)++m->nr };
	*out = s->out;
	return 0;
}

void gs_id_map__release(struct gs_id_map *m)
{
	free(m->slots);
	*m = (struct gs_id_map){ .max = m->max };
}
