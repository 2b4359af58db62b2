// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* alloc_table.c: open addressing with linear probing and backward-shift deletion. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/alloc_table.h"

#define MIN_SLOTS 64

struct gs_alloc_table {
	struct gs_alloc *slots;
	size_t nr_slots; /* power of two */
	size_t count;
	uint64_t bytes;
};

static size_t slot_of(uint64_t ptr, size_t nr_slots)
{
	/* device pointers are aligned: mix the high bits down (Fibonacci hashing) */
	return (size_t)((ptr * 0x9E3779B97F4A7C15ULL) >> 17) & (nr_slots - 1);
}

struct gs_alloc_table *gs_alloc_table__new(void)
{
	struct gs_alloc_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nr_slots = MIN_SLOTS;
	t->slots = calloc(t->nr_slots, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

void gs_alloc_table__free(struct gs_alloc_table *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

static size_t find_slot(const struct gs_alloc_table *t, uint64_t ptr)
{
	size_t i = slot_of(ptr, t->nr_slots);

	while (t->slots[i].in_use && t->slots[i].ptr != ptr)
		i = (i + 1) & (t->nr_slots - 1);
	return i;
}

static int grow(struct gs_alloc_table *t)
{
	struct gs_alloc *old = t->slots;
	size_t old_nr = t->nr_slots;

	t->slots = calloc(old_nr * 2, sizeof(*t->slots));
	if (!t->slots) {
		t->slots = old;
		return -ENOMEM;
	}
	t->nr_slots = old_nr * 2;
	for (size_t i = 0; i < old_nr; i++)
		if (old[i].in_use)
			t->slots[find_slot(t, old[i].ptr)] = old[i];
	free(old);
	return 0;
}

int gs_alloc_table__insert(struct gs_alloc_table *t, const struct gs_alloc *a, bool *replaced)
{
	size_t i;

	*replaced = false;
	if ((t->count + 1) * 4 > t->nr_slots * 3 && grow(t))
		return -ENOMEM;
	i = find_slot(t, a->ptr);
	if (t->slots[i].in_use) {
		*replaced = true;
		t->bytes -= t->slots[i].size;
		t->count--;
	}
	t->slots[i] = *a;
	t->slots[i].in_use = 1;
	t->bytes += a->size;
	t->count++;
	return 0;
}

bool gs_alloc_table__contains(const struct gs_alloc_table *t, uint64_t ptr)
{
	return t->slots[find_slot(t, ptr)].in_use;
}

const struct gs_alloc *gs_alloc_table__find(const struct gs_alloc_table *t, uint64_t ptr)
{
	const struct gs_alloc *a = &t->slots[find_slot(t, ptr)];

	return a->in_use ? a : NULL;
}

bool gs_alloc_table__remove(struct gs_alloc_table *t, uint64_t ptr, struct gs_alloc *out)
{
	size_t mask = t->nr_slots - 1;
	size_t hole = find_slot(t, ptr), j = hole;

	if (!t->slots[hole].in_use)
		return false;
	if (out)
		*out = t->slots[hole];
	t->bytes -= t->slots[hole].size;
	t->count--;
	/* shift back later members of the probe run so lookups never stop at the hole */
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!t->slots[j].in_use)
			break;
		home = slot_of(t->slots[j].ptr, t->nr_slots);
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			t->slots[hole] = t->slots[j];
			hole = j;
		}
	}
	memset(&t->slots[hole], 0, sizeof(t->slots[hole]));
	return true;
}

void gs_alloc_table__clear(struct gs_alloc_table *t)
{
	memset(t->slots, 0, t->nr_slots * sizeof(*t->slots));
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
	return t->nr_slots;
}

const struct gs_alloc *gs_alloc_table__at(const struct gs_alloc_table *t, size_t slot)
{
	return slot < t->nr_slots && t->slots[slot].in_use ? &t->slots[slot] : NULL;
}
