// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* losses.c: the dropped-events count and the "lost" JSON block, written in one place. */
#include "user/event_decode.h"
#include "user/json.h"
#include "user/losses.h"

uint64_t gs_losses_dropped(const uint64_t stats[GS_STAT__MAX])
{
	return stats[GS_STAT_RINGBUF_FULL] + stats[GS_STAT_INFLIGHT_FULL] +
	       stats[GS_STAT_UID_OVER_SHARE];
}

void gs_losses_write_json(struct gs_json *j, const uint64_t stats[GS_STAT__MAX])
{
	gs_json__u64(j, "dropped_events", gs_losses_dropped(stats));
	gs_json__u64(j, "process_stops", stats[GS_STAT_STOPS]);
	gs_json__begin_object(j, "lost");
	for (int i = 0; i < GS_STAT__MAX; i++)
		if (gs_stat_name(i))
			gs_json__u64(j, gs_stat_name(i), stats[i]);
	gs_json__end_object(j);
}

uint64_t gs_loss_window__take(struct gs_loss_window *w, const uint64_t stats[GS_STAT__MAX],
			      uint64_t now_ns, uint64_t *start_ns)
{
	uint64_t dropped = gs_losses_dropped(stats);
	uint64_t lost = dropped >= w->dropped ? dropped - w->dropped : dropped;

	*start_ns = w->start_ns;
	w->start_ns = now_ns;
	w->dropped = dropped;
	return lost;
}
