/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* chrome_trace.h: a streaming writer of Chrome Trace Event JSON (opens in ui.perfetto.dev). */
#ifndef GS_CHROME_TRACE_H
#define GS_CHROME_TRACE_H

#include <stdint.h>
#include <stdio.h>
#include "user/json.h"

/*
 * Events are written as they come, so memory stays flat however long the trace; the
 * metadata (which needs totals) comes last. Timestamps are CLOCK_MONOTONIC nanoseconds,
 * written as the format's microseconds with nanosecond decimals.
 */
struct gs_chrome_trace {
	struct gs_json json;
	uint64_t nr_events;
	int state; /* internal: events, metadata, finished */
};

void gs_chrome_trace__begin(struct gs_chrome_trace *t, FILE *f);
/*
 * Starts an event object with its common fields; the caller may add more ("dur", "args",
 * "id"...) through the returned writer, then calls gs_chrome_trace__end_event().
 */
struct gs_json *gs_chrome_trace__event(struct gs_chrome_trace *t, const char *ph, const char *name,
				       const char *cat, int64_t pid, int64_t tid, uint64_t ts_ns);
void gs_chrome_trace__end_event(struct gs_chrome_trace *t);
/* Writes one complete event object given as JSON text (the caller guarantees it is valid). */
void gs_chrome_trace__raw_event(struct gs_chrome_trace *t, const char *json, size_t len);

/* Shorthands for the common kinds. */
void gs_chrome_trace__process_name(struct gs_chrome_trace *t, int64_t pid, const char *name);
void gs_chrome_trace__thread_name(struct gs_chrome_trace *t, int64_t pid, int64_t tid,
				  const char *name);
void gs_chrome_trace__counter(struct gs_chrome_trace *t, int64_t pid, const char *name,
			      uint64_t ts_ns, const char *series, uint64_t value);

/*
 * Closes traceEvents and returns the writer at the top level, for keys of the caller's
 * (Kineto's "deviceProperties", "distributedInfo"); call before gs_chrome_trace__metadata().
 */
struct gs_json *gs_chrome_trace__top_level(struct gs_chrome_trace *t);
/* Closes traceEvents and opens the top-level "metadata" object for the caller to fill. */
struct gs_json *gs_chrome_trace__metadata(struct gs_chrome_trace *t);
/* Closes the document (and the metadata object when open). */
void gs_chrome_trace__finish(struct gs_chrome_trace *t);

/* Writes a nanosecond count as microseconds with three decimals, e.g. "1234.567". */
void gs_chrome_trace_format_us(uint64_t ns, char *buf, size_t len);

#endif /* GS_CHROME_TRACE_H */
