/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* trace_stats.h: the one summary engine over trace rows: record's end-of-run summary, stats. */
#ifndef GS_TRACE_STATS_H
#define GS_TRACE_STATS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/*
 * One row of a gpusnoop trace, as written: `record` hands each row to the engine as it
 * renders it, `gpusnoop stats` as it parses it back from the file, so the two summaries are
 * made of the same facts by the same code and cannot differ. Strings are borrowed for the
 * call. Rows of other categories (torch, cpu samples, flows, counters) are ignored.
 */
struct gs_stats_row {
	/* 'X' a slice, 'M' metadata (process_name), 'b'/'e' an async range's begin/end (nvtx) */
	char ph;
	const char *name; /* the API ("cudaMalloc"), kernel, "Memcpy HtoD", NVTX range */
	const char *cat;  /* cuda_runtime, cuda_driver, kernel, gpu_memcpy, gpu_memset, nvtx */
	int64_t pid;	  /* the process; the device for GPU rows (Kineto's convention) */
	int64_t ts_ns;
	uint64_t dur_ns;
	const char *kernel; /* args.kernel of a launch */
	const char *kind;   /* args.kind of a copy ("HtoD") */
	bool has_bytes;
	uint64_t bytes;	   /* args.bytes */
	bool error;	   /* args.error: the call failed */
	const char *label; /* 'M' process_name: args.name */
	uint64_t id;	   /* 'b'/'e': the range's id (a string id: its hash) */
};

enum gs_stats_format { GS_STATS_TEXT, GS_STATS_CSV, GS_STATS_JSON };

struct gs_trace_stats;

/* NULL on allocation failure; free with gs_trace_stats__free(). */
struct gs_trace_stats *gs_trace_stats__new(void);
void gs_trace_stats__free(struct gs_trace_stats *s);
/* Counts one row. Returns 0 or -ENOMEM (the row is then not counted). */
int gs_trace_stats__add(struct gs_trace_stats *s, const struct gs_stats_row *row);
/* Async ranges begun and never ended (or past the cap of open ones), not in the tables. */
uint64_t gs_trace_stats__unended(const struct gs_trace_stats *s);
/* Rows counted, and rows dropped from the tables past their caps (counted as "[other]"). */
uint64_t gs_trace_stats__rows(const struct gs_trace_stats *s);

/*
 * record's end-of-run summary: top kernels by launches, sync time per process, bytes per
 * copy kind, GPU kernel time, device busy fraction, GPU copies. The first line (events,
 * seconds, drops) is the caller's. Call once: it sorts what it prints.
 */
void gs_trace_stats__print_summary(struct gs_trace_stats *s, FILE *f);
/*
 * The record summary the engine feeds, for what record counts beside the rows (torch-mem
 * tensor events: counters in the trace), printed with gs_record_summary__print_torch().
 */
struct gs_record_summary *gs_trace_stats__record_summary(struct gs_trace_stats *s);
/*
 * `gpusnoop stats`: CUDA API calls (count, total, mean, p50, p99), kernels by GPU time, copies
 * by kind and size, memory operations, NVTX ranges by time, each per process (or device),
 * as aligned text, CSV (one header, then a row per entry, its table's id first) or one JSON
 * object (tables by id, each with its unit and rows).
 * Names from the trace are escaped for the format. Returns 0 or -errno of the stream.
 */
int gs_trace_stats__print(struct gs_trace_stats *s, FILE *f, enum gs_stats_format fmt);

#endif /* GS_TRACE_STATS_H */
