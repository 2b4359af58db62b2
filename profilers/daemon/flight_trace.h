/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* flight_trace.h: a process's flight-recorder window as a Chrome/Perfetto trace. */
#ifndef GS_FLIGHT_TRACE_H
#define GS_FLIGHT_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct gs_flight_recorder;
struct gs_leak_trigger;
struct gs_stack_table;
struct gs_symcache;
struct gs_tracker;

/* What one trace shows: a process's window and what the daemon knows beside it. */
struct gs_flight_trace {
	const struct gs_flight_recorder *fr;
	pid_t pid;
	uint64_t now_ns;	  /* the window's end (CLOCK_MONOTONIC) */
	uint64_t outstanding_now; /* device bytes pid holds now (pinned host memory excluded) */
	const struct gs_leak_trigger *trigger;
	/* the daemon's: the process's label (NULL: its comm is unknown, "?"), the stacks the
	 * recorder's ids name (interning a stack's frames again finds its id), their symbols */
	struct gs_tracker *tracker;
	struct gs_stack_table *stacks;
	struct gs_symcache *symcache;
	bool perfetto; /* Perfetto's protobuf trace, not Chrome Trace Event JSON */
	/* losses: the session's counters (GS_STAT__MAX of them; NULL: none), and the events lost
	 * since window_start_ns (the previous report), as the report beside the trace says */
	const uint64_t *stats;
	uint64_t window_lost, window_start_ns;
	uint64_t flight_nomem; /* events the flight recorder had no memory for */
};

/*
 * Writes the events pid had in the window ending at now_ns, rendered by the timeline engine
 * as record renders them (one slice per call on its thread, the process's CUDA memory
 * counters, stacks), the trigger as an instant and the window's losses in the metadata.
 * Returns 0 or -errno (of the stream, or -ENOMEM).
 */
int gs_flight_trace__write(FILE *f, const struct gs_flight_trace *ft);

#endif /* GS_FLIGHT_TRACE_H */
