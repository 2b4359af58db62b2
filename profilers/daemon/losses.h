/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* losses.h: the daemon's losses, logged (once a minute at most) and counted for metrics. */
#ifndef GS_DAEMON_LOSSES_H
#define GS_DAEMON_LOSSES_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

/* at most one loss line per this many ns */
#define GS_DAEMON_LOSS_LOG_NS (60 * 1000000000ULL)

/* Losses of the daemon's own, beside the kernel's counters (enum gs_stat). */
enum gs_daemon_loss {
	GS_DAEMON_LOSS_FLIGHT_NOMEM, /* events the flight recorder had no memory for */
	GS_DAEMON_LOSS_MODEL_NOMEM,  /* memory events the model had no memory for */
	GS_DAEMON_LOSS__MAX,
};

struct gs_daemon_losses {
	uint64_t own[GS_DAEMON_LOSS__MAX]; /* counted by the daemon */
	uint64_t logged[GS_STAT__MAX];	   /* the kernel's counters at the last line */
	uint64_t own_logged[GS_DAEMON_LOSS__MAX];
	uint64_t last_log_ns; /* 0: none yet */
};

/* "ringbuf" setting: MiB, a power of 2 from 1 to 1024 (the kernel's ring buffers need one). */
int gs_daemon_parse_ringbuf(void *dst, const char *value, char *msg, size_t msg_len);
/* The name of an own loss in metrics and logs ("flight_recorder_nomem"). */
const char *gs_daemon_loss_name(int loss);
/*
 * Logs one line of what was lost since the previous line, by kind, when something was and
 * the previous line is GS_DAEMON_LOSS_LOG_NS old (stats: the kernel's counters now).
 * Writes the line into line (when given) too; returns whether it logged.
 */
int gs_daemon_losses__tick(struct gs_daemon_losses *l, const uint64_t stats[GS_STAT__MAX],
			   uint64_t now_ns, char *line, size_t len);

#endif /* GS_DAEMON_LOSSES_H */
