/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* drain_budget.h: how much of the ring buffer one loop turn reads before serving the rest. */
#ifndef GS_DRAIN_BUDGET_H
#define GS_DRAIN_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

/*
 * A flood fills the ring buffer faster than records are handled: read without bound, one
 * turn never ends, and control requests, timers and OOM reports wait behind it. A turn stops
 * after max_records records or max_ns, whichever comes first; the rest is read next turn.
 */
#define GS_DRAIN_MAX_RECORDS 65536
#define GS_DRAIN_MAX_NS	     (20 * 1000 * 1000ULL)
#define GS_DRAIN_CLOCK_EVERY 16 /* records between two clock readings */

struct gs_drain_budget {
	uint64_t max_records;	 /* 0: GS_DRAIN_MAX_RECORDS */
	uint64_t max_ns;	 /* 0: GS_DRAIN_MAX_NS */
	uint64_t (*clock)(void); /* NULL: CLOCK_MONOTONIC; tests give their own */
	uint64_t start_ns;
	uint64_t used; /* records taken this turn */
	bool spent;
};

/* A new turn: nothing used, the time counted from now. */
void gs_drain_budget__start(struct gs_drain_budget *b);
/* Counts one record; true when it was the turn's last (the reader should stop after it). */
bool gs_drain_budget__take(struct gs_drain_budget *b);

#endif /* GS_DRAIN_BUDGET_H */
