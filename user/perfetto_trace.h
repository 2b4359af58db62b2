/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* perfetto_trace.h: timeline rows encoded as Perfetto's native trace (TracePacket/TrackEvent). */
#ifndef GS_PERFETTO_TRACE_H
#define GS_PERFETTO_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

/*
 * The second encoding of the timeline's rows (the first is Chrome Trace Event JSON): the
 * same rows, written as a stream of trace packets on one sequence, with interned event
 * names, categories, debug-annotation names, string values and callstacks, and timestamps
 * as deltas on an incremental clock defined against CLOCK_MONOTONIC. Memory is bounded:
 * the intern tables start over (SEQ_INCREMENTAL_STATE_CLEARED) when full, open slices and
 * tracks have caps beyond which output is only larger, never lost.
 *
 * Rows map as: X -> SLICE_BEGIN + SLICE_END (an X of no duration -> INSTANT), B/E -> SLICE_BEGIN/
 * SLICE_END, b/e -> SLICE_BEGIN/SLICE_END on a track per (pid, id) under the process, i ->
 * INSTANT, C -> one counter track per (pid, name, series), s/t/f -> an INSTANT named after the
 * flow carrying flow_ids / terminating_flow_ids, M process_name/thread_name -> named track
 * descriptors. args.stack (and args.kernel_stack) -> an interned callstack.
 */
struct gs_perfetto;

struct gs_perfetto_row {
	char ph;		/* 'X', 'B', 'E', 'b', 'e', 'i', 'C', 's', 't', 'f', 'M' */
	const char *name, *cat; /* may be NULL */
	int64_t pid, tid;
	uint64_t ts_ns, dur_ns;
	uint64_t id;		       /* flows, async ranges (b/e) */
	const struct yajl_val_s *args; /* an object, or NULL; borrowed for the call */
};

/* Writes to out (borrowed). Caller frees with gs_perfetto__free(). NULL with errno set. */
struct gs_perfetto *gs_perfetto__new(FILE *out);
void gs_perfetto__free(struct gs_perfetto *p);
/* Encodes one row. Returns 0, -ENOMEM, or 1 when the row has no Perfetto form (skipped). */
int gs_perfetto__row(struct gs_perfetto *p, const struct gs_perfetto_row *row);
/* A top-level value of the trace (its metadata, JSON text): an instant on a "gpusnoop" track. */
int gs_perfetto__top_level(struct gs_perfetto *p, const char *key, const char *json, size_t len);
/* Ends what is still open (slices ending later than the last row). Returns 0 or -ENOMEM. */
int gs_perfetto__finish(struct gs_perfetto *p);
/* Rows encoded, rows skipped, and packets written. */
uint64_t gs_perfetto__rows(const struct gs_perfetto *p);
uint64_t gs_perfetto__skipped(const struct gs_perfetto *p);
uint64_t gs_perfetto__packets(const struct gs_perfetto *p);

#endif /* GS_PERFETTO_TRACE_H */
