/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* stats_reader.h: trace events (stitch/trace_parse.h) to summary rows (trace_stats.h). */
#ifndef GS_STATS_READER_H
#define GS_STATS_READER_H

#include <stddef.h>

struct gs_trace_event;
struct gs_trace_stats;

/* Zero-initialise it with stats set; free obj when done. */
struct gs_stats_reader {
	struct gs_trace_stats *stats;
	char *obj; /* "{" + an event's fields + "}", parsed with yajl_tree */
	size_t cap;
};

/*
 * A gs_trace_parse_ops.event callback, ctx a struct gs_stats_reader: counts the event's row
 * when it is a process_name, an X slice of the counted categories or the begin or end (b/e,
 * by integer or string id) of an async NVTX range (rows carrying Kineto's
 * "External id" or "cbid" are PyTorch's own, in a stitched trace: skipped). Returns 0 or
 * -ENOMEM.
 */
int gs_stats_reader_event(void *ctx, const struct gs_trace_event *ev);

#endif /* GS_STATS_READER_H */
