// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* run_loop.c: wait, drain, tick; stop on a signal, -d, the targets' exit or an error. */
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include "profilers/options.h"
#include "profilers/run_loop.h"
#include "profilers/tracker.h"
#include "user/clock.h"
#include "user/log.h"

/* One wait and drain: the number of records handled, or -errno (logged). */
static int wait_and_drain(const struct gs_run_loop *l)
{
	int n = l->wait ? l->wait(l->ctx, l->poll_ms) : 0;

	if (n < 0)
		return n; /* logged by the hook */
	/* with a hook: what the wait found, and records below the wake-up threshold */
	n = gs_tracker__poll(l->tracker, l->wait ? 0 : l->poll_ms);
	if (n < 0)
		gs_err("reading events: %s", strerror(-n));
	return n;
}

static int failed(const struct gs_run_loop *l)
{
	return l->error ? *l->error : 0;
}

/* Runs until something stops it; returns why, with *err the failure's -errno. */
static enum gs_run_end run(const struct gs_run_loop *l, int *err, bool *read_failed)
{
	uint64_t start = l->start_ns ? l->start_ns : gs_clock_ns(CLOCK_MONOTONIC);
	uint64_t duration_ns = (uint64_t)(l->duration_s * 1e9);

	while (!gs_stop_requested && !failed(l)) {
		uint64_t now;
		int n = wait_and_drain(l);

		if (n < 0) {
			*err = n;
			*read_failed = true;
			return GS_RUN_FAILED;
		}
		if (gs_tracker__done(l->tracker))
			return GS_RUN_TARGETS_GONE;
		now = gs_clock_ns(CLOCK_MONOTONIC);
		if (duration_ns && now - start >= duration_ns)
			return GS_RUN_DURATION;
		*err = l->tick ? l->tick(l->ctx, now) : 0;
		if (*err)
			return GS_RUN_FAILED;
	}
	*err = failed(l);
	return *err ? GS_RUN_FAILED : GS_RUN_SIGNALED;
}

int gs_run_loop(const struct gs_run_loop *l, enum gs_run_end *end)
{
	bool read_failed = false;
	int err = 0;
	enum gs_run_end why = run(l, &err, &read_failed);

	if (!read_failed)
		gs_tracker__drain_all(l->tracker); /* what arrived before the stop */
	if (end)
		*end = why;
	return err;
}
