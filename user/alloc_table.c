// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* alloc_table.c: sharded open addressing, linear probing, backward-shift deletion. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/alloc_table.h"

/*
 * Memory per outstanding allocation is what this table is about (a training job can hold a
 * million): slot counts grow by half, not by doubling, so that no count of allocations sits
 * just past a power of two with half the table empty, and the table is cut into shards that
 * grow one at a time, so that a growth holds an old and a new copy of one shard, not of
 * everything. 32-byte slots at 53..80% load: 40..60 bytes per allocation.
 */
#define NR_SHARDS    16
#define SHARD_BITS   4
#define MIN_SLOTS    16 /* per shard */
#define MAX_LOAD_NUM 4	/* grow past 4/5 full */
#define MAX_LOAD_DEN 5

struct shard {
	struct gs_alloc *slots;
	size_t nr_slots; /* any size >= MIN_SLOTS */
	size_t count;
};

struct gs_alloc_table {
	struct shard shards[NR_SHARDS];
	size_t count;
	uint64_t bytes;
};

/* device pointers are aligned and close together: mix every bit into every bit (fmix64) */
static uint64_t hash_ptr(uint64_t ptr)
{
	ptr ^= ptr >> 33;
	ptr *= 0xff51afd7ed558ccdULL;
	ptr ^= ptr >> 33;
	ptr *= 0xc4ceb9fe1a85ec53ULL;
	return ptr ^ (ptr >> 33);
}

static struct shard *shard_of(const struct gs_alloc_table *t, uint64_t hash)
{
	return (struct shard *)&t->shards[hash >> (64 - SHARD_BITS)];
}

/* the bits below the shard's, scaled onto [0, nr_slots) (Lemire's multiply-shift) */
static size_t home_of(uint64_t hash, size_t nr_slots)
{
	return (size_t)(((unsigned __int128)(hash << SHARD_BITS) * nr_slots) >> 64);
}

static size_t next_slot(const struct shard *s, size_t i)
{
	return i + 1 == s->nr_slots ? 0 : i + 1;
}

/* how far slot j is past slot from, along the probe order */
static size_t distance(const struct shard *s, size_t from, size_t j)
{
	return j >= from ? j - from : j + s->nr_slots - from;
}

static int shard_init(struct shard *s, size_t nr_slots)
{
	s->slots = calloc(nr_slots, sizeof(*s->slots));
	if (!s->slots)
		return -ENOMEM;
	s->nr_slots = nr_slots;
	s->count = 0;
	return 0;
}

struct gs_alloc_table *gs_alloc_table__new(void)
{
	struct gs_alloc_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	for (int i = 0; i < NR_SHARDS; i++) {
		if (shard_init(&t->shards[i], MIN_SLOTS)) {
			gs_alloc_table__free(t);
			return NULL;
		}
	}
	return t;
}

void gs_alloc_table__free(struct gs_alloc_table *t)
{
	if (!t)
		return;
	for (int i = 0; i < NR_SHARDS; i++)
		free(t->shards[i].slots);
	free(t);
}

static size_t find_slot(const struct shard *s, uint64_t hash, uint64_t ptr)
{
	size_t i = home_of(hash, s->nr_slots);

	while (s->slots[i].in_use && s->slots[i].ptr != ptr)
		i = next_slot(s, i);
	return i;
}

static int grow(struct shard *s)
{
	struct shard bigger;

	if (shard_init(&bigger, s->nr_slots + s->nr_slots / 2))
		return -ENOMEM;
	for (size_t i = 0; i < s->nr_slots; i++) {
		const struct gs_alloc *a = &s->slots[i];

		if (a->in_use)
			bigger.slots[find_slot(&bigger, hash_ptr(a->ptr), a->ptr)] = *a;
	}
	bigger.count = s->count;
	free(s->slots);
	*s = bigger;
	return 0;
}

int gs_alloc_table__insert(struct gs_alloc_table *t, const struct gs_alloc *a, bool *replaced)
{
	uint64_t hash = hash_ptr(a->ptr);
	struct shard *s = shard_of(t, hash);
	size_t i;

	*replaced = false;
	if ((s->count + 1) * MAX_LOAD_DEN > s->nr_slots * MAX_LOAD_NUM && grow(s))
		return -ENOMEM;
	i = find_slot(s, hash, a->ptr);
	if (s->slots[i].in_use) {
		*replaced = true;
		t->bytes -= s->slots[i].size;
		t->count--;
		s->count--;
	}
	s->slots[i] = *a;
	s->slots[i].in_use = 1;
	t->bytes += a->size;
	t->count++;
	s->count++;
	return 0;
}

const struct gs_alloc *gs_alloc_table__find(const struct gs_alloc_table *t, uint64_t ptr)
{
	uint64_t hash = hash_ptr(ptr);
	const struct shard *s = shard_of(t, hash);
	const struct gs_alloc *a = &s->slots[find_slot(s, hash, ptr)];

	return a->in_use ? a : NULL;
}

bool gs_alloc_table__contains(const struct gs_alloc_table *t, uint64_t ptr)
{
	return gs_alloc_table__find(t, ptr) != NULL;
}

bool gs_alloc_table__remove(struct gs_alloc_table *t, uint64_t ptr, struct gs_alloc *out)
{
	uint64_t hash = hash_ptr(ptr);
	struct shard *s = shard_of(t, hash);
	size_t hole = find_slot(s, hash, ptr), j = hole;

	if (!s->slots[hole].in_use)
		return false;
	if (out)
		*out = s->slots[hole];
	t->bytes -= s->slots[hole].size;
	t->count--;
	s->count--;
	/* shift back later members of the probe run so lookups never stop at the hole */
	for (;;) {
		size_t home;

		j = next_slot(s, j);
		if (!s->slots[j].in_use)
			break;
		home = home_of(hash_ptr(s->slots[j].ptr), s->nr_slots);
		if (distance(s, home, j) >= distance(s, hole, j)) {
			s->slots[hole] = s->slots[j];
			hole = j;
		}
	}
	memset(&s->slots[hole], 0, sizeof(s->slots[hole]));
	return true;
}

void gs_alloc_table__clear(struct gs_alloc_table *t)
{
	for (int i = 0; i < NR_SHARDS; i++) {
		struct shard *s = &t->shards[i];

		memset(s->slots, 0, s->nr_slots * sizeof(*s->slots));
		s->count = 0;
	}
	t->count = 0;
	t->bytes = 0;
}

size_t gs_alloc_table__count(const struct gs_alloc_table *t)
{
	return t->count;
}

uint64_t gs_alloc_table__bytes(const struct gs_alloc_table *t)
{
	return t->bytes;
}

size_t gs_alloc_table__slots(const struct gs_alloc_table *t)
{
	size_t n = 0;

	for (int i = 0; i < NR_SHARDS; i++)
		n += t->shards[i].nr_slots;
	return n;
}

const struct gs_alloc *gs_alloc_table__at(const struct gs_alloc_table *t, size_t slot)
{
	for (int i = 0; i < NR_SHARDS; i++) {
		const struct shard *s = &t->shards[i];

		if (slot < s->nr_slots)
			return s->slots[slot].in_use ? &s->slots[slot] : NULL;
		slot -= s->nr_slots;
	}
	return NULL;
}
