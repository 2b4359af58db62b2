// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* pid_index.c: pid -> array position, open addressing with backward-shift deletion. */
#include <errno.h>
#include <stdlib.h>
#include "user/pid_index.h"

static size_t home(pid_t pid, size_t cap)
{
	return (size_t)(((uint64_t)(uint32_t)pid * 0x9E3779B97F4A7C15ULL) >> 32) & (cap - 1);
}

/* pid's slot, or the empty slot where it would go (cap > 0, and never full) */
static struct gs_pid_slot *slot_of(const struct gs_pid_index *x, pid_t pid)
{
	size_t i = home(pid, x->cap);

	while (x->slots[i].pos_plus1 && x->slots[i].pid != pid)
		i = (i + 1) & (x->cap - 1);
	return &x->slots[i];
}

static int grow(struct gs_pid_index *x)
{
	struct gs_pid_index bigger = { .cap = x->cap ? x->cap * 2 : 64, .nr = x->nr };

	bigger.slots = calloc(bigger.cap, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < x->cap; i++)
		if (x->slots[i].pos_plus1)
			*slot_of(&bigger, x->slots[i].pid) = x->slots[i];
	free(x->slots);
	*x = bigger;
	return 0;
}

bool gs_pid_index__get(const struct gs_pid_index *x, pid_t pid, size_t *pos)
{
	const struct gs_pid_slot *s;

	if (!x->cap)
		return false;
	s = slot_of(x, pid);
	if (!s->pos_plus1)
		return false;
	*pos = s->pos_plus1 - 1;
	return true;
}

int gs_pid_index__set(struct gs_pid_index *x, pid_t pid, size_t pos)
{
	struct gs_pid_slot *s = x->cap ? slot_of(x, pid) : NULL;

	if (pos >= UINT32_MAX)
		return -ENOMEM;
	if (!s || !s->pos_plus1) {
		/* a new pid: at most half full, so probe runs stay short */
		if ((x->nr + 1) * 2 > x->cap && grow(x))
			return -ENOMEM;
		s = slot_of(x, pid);
		x->nr++;
	}
	*s = (struct gs_pid_slot){ .pid = pid, .pos_plus1 = (uint32_t)pos + 1 };
	return 0;
}

void gs_pid_index__remove(struct gs_pid_index *x, pid_t pid)
{
	size_t mask = x->cap - 1, hole, i;

	if (!x->cap || !slot_of(x, pid)->pos_plus1)
		return;
	hole = (size_t)(slot_of(x, pid) - x->slots);
	x->slots[hole].pos_plus1 = 0;
	x->nr--;
	/* pull back each later entry of the run whose home does not lie between hole and it */
	for (i = (hole + 1) & mask; x->slots[i].pos_plus1; i = (i + 1) & mask) {
		size_t h = home(x->slots[i].pid, x->cap);

		if (((i - h) & mask) < ((i - hole) & mask))
			continue;
		x->slots[hole] = x->slots[i];
		x->slots[i].pos_plus1 = 0;
		hole = i;
	}
}

void gs_pid_index__release(struct gs_pid_index *x)
{
	free(x->slots);
	*x = (struct gs_pid_index){ 0 };
}
