// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* losses.c: what the daemon lost, by kind: one log line a minute at most, and the counters. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "profilers/daemon/losses.h"
#include "user/event_decode.h"
#include "user/log.h"

const char *gs_daemon_loss_name(int loss)
{
	static const char *const names[GS_DAEMON_LOSS__MAX] = {
		[GS_DAEMON_LOSS_FLIGHT_NOMEM] = "flight_recorder_nomem",
		[GS_DAEMON_LOSS_MODEL_NOMEM] = "memory_model_nomem",
	};

	return loss >= 0 && loss < GS_DAEMON_LOSS__MAX ? names[loss] : NULL;
}

/* Appends " NAME N," for a counter that moved; returns the new length. */
static size_t add_kind(char *line, size_t used, size_t len, const char *name, uint64_t now,
		       uint64_t before)
{
	int w;

	if (!name || now <= before || used >= len)
		return used;
	w = snprintf(line + used, len - used, "%s %s %" PRIu64, used ? "," : "", name,
		     now - before);
	return w > 0 && (size_t)w < len - used ? used + (size_t)w : used;
}

int gs_daemon_losses__tick(struct gs_daemon_losses *l, const uint64_t stats[GS_STAT__MAX],
			   uint64_t now_ns, char *line, size_t len)
{
	char kinds[512];
	size_t used = 0;

	if (l->last_log_ns && now_ns - l->last_log_ns < GS_DAEMON_LOSS_LOG_NS)
		return 0;
	kinds[0] = '\0';
	for (int i = 0; i < GS_STAT__MAX; i++)
		used = add_kind(kinds, used, sizeof(kinds), gs_stat_name(i), stats[i],
				l->logged[i]);
	for (int i = 0; i < GS_DAEMON_LOSS__MAX; i++)
		used = add_kind(kinds, used, sizeof(kinds), gs_daemon_loss_name(i), l->own[i],
				l->own_logged[i]);
	if (!used)
		return 0;
	if (l->last_log_ns)
		gs_warn("events lost in the last %.0f s:%s (gpusnoop_events_lost_total)",
			(double)(now_ns - l->last_log_ns) / 1e9, kinds);
	else
		gs_warn("events lost:%s (gpusnoop_events_lost_total)", kinds);
	if (line)
		snprintf(line, len, "%s", kinds);
	memcpy(l->logged, stats, sizeof(l->logged));
	memcpy(l->own_logged, l->own, sizeof(l->own_logged));
	l->last_log_ns = now_ns;
	return 1;
}
