// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* busy_union.c: a bounded, sorted set of disjoint pieces; merges the closest when full. */
#include <string.h>
#include "user/busy_union.h"

/* The first piece whose end reaches start (pieces are sorted and disjoint). */
static size_t first_reaching(const struct gs_busy_union *u, uint64_t start)
{
	size_t lo = 0, hi = u->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->pieces[mid].end < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Joins the two neighbours with the smallest gap; that gap now counts as covered. */
static void merge_closest(struct gs_busy_union *u)
{
	size_t best = 0;
	uint64_t gap = UINT64_MAX;

	for (size_t i = 0; i + 1 < u->nr; i++) {
		uint64_t g = u->pieces[i + 1].start - u->pieces[i].end;

		if (g < gap) {
			gap = g;
			best = i;
		}
	}
	u->err_ns += gap;
	u->pieces[best].end = u->pieces[best + 1].end;
	memmove(&u->pieces[best + 1], &u->pieces[best + 2],
		(u->nr - best - 2) * sizeof(u->pieces[0]));
	u->nr--;
}

void gs_busy_union__add(struct gs_busy_union *u, uint64_t start, uint64_t end)
{
	size_t i, j;

	if (end < start)
		end = start;
	if (!u->count++ || start < u->first)
		u->first = start;
	if (end > u->last)
		u->last = end;
	if (end == start)
		return;
	i = first_reaching(u, start);
	/* pieces i..j-1 touch or overlap [start, end): they become one */
	for (j = i; j < u->nr && u->pieces[j].start <= end; j++) {
		if (u->pieces[j].start < start)
			start = u->pieces[j].start;
		if (u->pieces[j].end > end)
			end = u->pieces[j].end;
	}
	if (j == i) { /* nothing touched: a new piece at i (room for one past the cap) */
		memmove(&u->pieces[i + 1], &u->pieces[i], (u->nr - i) * sizeof(u->pieces[0]));
		u->nr++;
	} else if (j > i + 1) {
		memmove(&u->pieces[i + 1], &u->pieces[j], (u->nr - j) * sizeof(u->pieces[0]));
		u->nr -= j - i - 1;
	}
	u->pieces[i] = (struct gs_busy_piece){ start, end };
	if (u->nr > GS_BUSY_PIECES)
		merge_closest(u);
}

uint64_t gs_busy_union__busy(const struct gs_busy_union *u)
{
	uint64_t busy = 0;

	for (size_t i = 0; i < u->nr; i++)
		busy += u->pieces[i].end - u->pieces[i].start;
	return busy;
}
