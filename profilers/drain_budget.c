// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* drain_budget.c: a turn's records counted, its time read every few hundred of them. */
#include <time.h>
#include "profilers/drain_budget.h"
#include "user/clock.h"

static uint64_t now_ns(const struct gs_drain_budget *b)
{
	return b->clock ? b->clock() : gs_clock_ns(CLOCK_MONOTONIC);
}

void gs_drain_budget__start(struct gs_drain_budget *b)
{
	b->used = 0;
	b->spent = false;
	b->start_ns = now_ns(b);
}

bool gs_drain_budget__take(struct gs_drain_budget *b)
{
	uint64_t max_records = b->max_records ? b->max_records : GS_DRAIN_MAX_RECORDS;
	uint64_t max_ns = b->max_ns ? b->max_ns : GS_DRAIN_MAX_NS;

	b->used++;
	if (b->used >= max_records)
		b->spent = true;
	else if (b->used % GS_DRAIN_CLOCK_EVERY == 0 && now_ns(b) - b->start_ns >= max_ns)
		b->spent = true;
	return b->spent;
}
