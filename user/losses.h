/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* losses.h: what the kernel side lost, said the same way in every report, trace and summary. */
#ifndef GS_LOSSES_H
#define GS_LOSSES_H

#include <stdint.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

struct gs_json;

/* Events lost whole (ring buffer or per-thread state full): counts may be incomplete. */
uint64_t gs_losses_dropped(const uint64_t stats[GS_STAT__MAX]);
/*
 * Writes "dropped_events" and the "lost" object (one member per named counter, see
 * gs_stat_name()) into the object j is in: leak reports and trace metadata alike.
 */
void gs_losses_write_json(struct gs_json *j, const uint64_t stats[GS_STAT__MAX]);

/*
 * A report's window: from the previous report of the same writer (or the start) to now.
 * Each report says how many events were lost in it, not only since the start.
 */
struct gs_loss_window {
	uint64_t start_ns; /* CLOCK_MONOTONIC; 0: not begun */
	uint64_t dropped;  /* gs_losses_dropped() at start_ns */
};

/* Events lost in w up to now (stats: now's counters); the next window starts at now. */
uint64_t gs_loss_window__take(struct gs_loss_window *w, const uint64_t stats[GS_STAT__MAX],
			      uint64_t now_ns, uint64_t *start_ns);

#endif /* GS_LOSSES_H */
