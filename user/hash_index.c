// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* hash_index.c: (hash, position) slots, linear probing, backward-shift deletion. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/hash_index.h"

#define MIN_CAP 16

uint64_t gs_hash_u64(uint64_t v)
{
	v ^= v >> 30;
	v *= 0xbf58476d1ce4e5b9ULL;
	v ^= v >> 27;
	v *= 0x94d049bb133111ebULL;
	v ^= v >> 31;
	return v;
}

uint64_t gs_hash_combine(uint64_t h, uint64_t v)
{
	return gs_hash_u64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

/* the slot of (hash, pos), or NULL */
static struct gs_hash_slot *slot_at(const struct gs_hash_index *x, uint64_t hash, size_t pos)
{
	size_t mask = x->cap - 1;

	if (!x->cap)
		return NULL;
	for (size_t i = hash & mask; x->slots[i].pos_plus1; i = (i + 1) & mask)
		if (x->slots[i].hash == hash && x->slots[i].pos_plus1 - 1 == pos)
			return &x->slots[i];
	return NULL;
}

bool gs_hash_index__find(const struct gs_hash_index *x, uint64_t hash, gs_hash_match_fn match,
			 const void *ctx, size_t *pos)
{
	size_t mask = x->cap - 1;

	if (!x->cap)
		return false;
	for (size_t i = hash & mask; x->slots[i].pos_plus1; i = (i + 1) & mask) {
		const struct gs_hash_slot *s = &x->slots[i];

		if (s->hash == hash && (!match || match(ctx, s->pos_plus1 - 1))) {
			*pos = s->pos_plus1 - 1;
			return true;
		}
	}
	return false;
}

static void put(struct gs_hash_slot *slots, size_t cap, struct gs_hash_slot s)
{
	size_t i = s.hash & (cap - 1);

	while (slots[i].pos_plus1)
		i = (i + 1) & (cap - 1);
	slots[i] = s;
}

static int grow(struct gs_hash_index *x)
{
	size_t cap = x->cap ? x->cap * 2 : MIN_CAP;
	struct gs_hash_slot *slots;

	if (cap > SIZE_MAX / sizeof(*slots))
		return -ENOMEM;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < x->cap; i++)
		if (x->slots[i].pos_plus1)
			put(slots, cap, x->slots[i]);
	free(x->slots);
	x->slots = slots;
	x->cap = cap;
	return 0;
}

int gs_hash_index__add(struct gs_hash_index *x, uint64_t hash, size_t pos)
{
	if (pos >= UINT32_MAX)
		return -ENOMEM;
	/* at most half full, so probe runs stay short */
	if ((x->nr + 1) * 2 > x->cap && grow(x))
		return -ENOMEM;
	put(x->slots, x->cap,
	    (struct gs_hash_slot){ .hash = hash, .pos_plus1 = (uint32_t)pos + 1 });
	x->nr++;
	return 0;
}

bool gs_hash_index__move(struct gs_hash_index *x, uint64_t hash, size_t from, size_t to)
{
	struct gs_hash_slot *s = slot_at(x, hash, from);

	if (!s || to >= UINT32_MAX)
		return false;
	s->pos_plus1 = (uint32_t)to + 1;
	return true;
}

bool gs_hash_index__remove(struct gs_hash_index *x, uint64_t hash, size_t pos)
{
	struct gs_hash_slot *s = slot_at(x, hash, pos);
	size_t mask = x->cap - 1, hole, i;

	if (!s)
		return false;
	hole = (size_t)(s - x->slots);
	x->slots[hole].pos_plus1 = 0;
	x->nr--;
	/* pull back each later entry of the run whose home does not lie between hole and it */
	for (i = (hole + 1) & mask; x->slots[i].pos_plus1; i = (i + 1) & mask) {
		size_t h = x->slots[i].hash & mask;

		if (((i - h) & mask) < ((i - hole) & mask))
			continue;
		x->slots[hole] = x->slots[i];
		x->slots[i].pos_plus1 = 0;
		hole = i;
	}
	return true;
}

void gs_hash_index__clear(struct gs_hash_index *x)
{
	if (x->cap)
		memset(x->slots, 0, x->cap * sizeof(*x->slots));
	x->nr = 0;
}

void gs_hash_index__release(struct gs_hash_index *x)
{
	free(x->slots);
	*x = (struct gs_hash_index){ 0 };
}
