/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* run_loop.h: the poll, drain and stop loop every tracing command runs over its session. */
#ifndef GS_RUN_LOOP_H
#define GS_RUN_LOOP_H

#include <stdint.h>

struct gs_tracker;

/* why gs_run_loop() stopped */
enum gs_run_end {
	GS_RUN_SIGNALED,     /* SIGINT or SIGTERM (gs_stop_requested) */
	GS_RUN_DURATION,     /* -d ran out */
	GS_RUN_TARGETS_GONE, /* every -p/-- target exited (never under -a) */
	GS_RUN_FAILED,	     /* a read, a hook or the caller's error */
};

struct gs_run_loop {
	struct gs_tracker *tracker;
	uint64_t start_ns; /* CLOCK_MONOTONIC the duration counts from; 0: the loop's start */
	double duration_s; /* -d; 0: until something else stops it */
	int poll_ms;	   /* the longest one wait lasts, so the tick's resolution */
	const int *error;  /* optional: the caller's first fatal error; non-zero stops the loop */
	void *ctx;	   /* handed to the hooks */
	/*
	 * Optional: waits at most timeout_ms for the session's descriptor (gs_tracker__fd()) and
	 * descriptors of the caller's own; 0 or -errno (logged). The loop then drains with
	 * gs_tracker__poll(t, 0). Without it, gs_tracker__poll() waits.
	 */
	int (*wait)(void *ctx, int timeout_ms);
	/* Optional: after each wait and drain; 0 goes on, -errno (logged) stops the loop. */
	int (*tick)(void *ctx, uint64_t now_ns);
};

/*
 * Waits for records and hands them to the session's ops until a signal, -d, the last
 * target's exit or an error; then drains what arrived before the stop (not after a failed
 * read). *end (optional) says why it stopped. Returns 0, or the -errno of the failure: a
 * failed read (logged here), a hook's, or *error.
 */
int gs_run_loop(const struct gs_run_loop *l, enum gs_run_end *end);

#endif /* GS_RUN_LOOP_H */
