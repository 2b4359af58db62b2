/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_rows.h: `record -e gpu`'s GPU rows (Kineto's conventions), links to launches, summary. */
#ifndef GS_TIMELINE_GPU_ROWS_H
#define GS_TIMELINE_GPU_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "stitch/chrome_trace.h"

/*
 * GPU records are held this long after they arrive before they are written: the slice of
 * the call that launched them (which reaches userspace only when the call returns) must
 * have been seen by then to link them.
 */
#define GS_GPU_ROWS_LINK_DELAY_NS 500000000ULL

struct gs_stats_row;

/* How record renders one event of a process into its time-ordered output. */
struct gs_gpu_rows_emit {
	void *ctx;
	struct gs_chrome_trace *(*begin)(void *ctx, pid_t pid, uint64_t ts_ns);
	void (*end)(void *ctx);
	/* the output pid's events go to, whose GPU tracks are named once; NULL: one output */
	size_t (*output)(void *ctx, pid_t pid);
	/* optional: each GPU row as rendered, for the summary (profilers/timeline/trace_stats.h) */
	void (*row)(void *ctx, const struct gs_stats_row *row);
};

struct gs_gpu_rows;

/* NULL with errno set. */
struct gs_gpu_rows *gs_gpu_rows__new(const struct gs_gpu_rows_emit *emit);
/* The recording's CLOCK_REALTIME - CLOCK_MONOTONIC, for CUPTIs that keep their own clock. */
void gs_gpu_rows__set_clock(struct gs_gpu_rows *g, int64_t monotonic_to_realtime_ns);
void gs_gpu_rows__free(struct gs_gpu_rows *g);
/* A GS_EV_GPU_* record as it came from the tracker. Returns 0 or -ENOMEM. */
int gs_gpu_rows__event(struct gs_gpu_rows *g, const struct gs_event_hdr *hdr, size_t size);
/*
 * For the CPU slice of a call (args open in j): its CUPTI correlation id as args
 * "correlation"; returns it, 0 when the call reported none.
 */
uint32_t gs_gpu_rows__slice_args(struct gs_gpu_rows *g, struct gs_json *j,
				 const struct gs_event_hdr *hdr, uint64_t entry_ns, bool driver);
/* After that slice was rendered: the start of Kineto's "ac2g" flow to its GPU work. */
void gs_gpu_rows__slice_flow(struct gs_gpu_rows *g, const struct gs_event_hdr *hdr,
			     uint64_t entry_ns, uint32_t correlation);
/* Writes the records that arrived before now_ns - GS_GPU_ROWS_LINK_DELAY_NS; all: UINT64_MAX. */
void gs_gpu_rows__advance(struct gs_gpu_rows *g, uint64_t now_ns);
/* pid exited or replaced its image: its records are written, its ids forgotten. */
void gs_gpu_rows__proc_gone(struct gs_gpu_rows *g, pid_t pid);
/* The rank of a spawned command's environment, for processes gone before it was read. */
void gs_gpu_rows__default_rank(struct gs_gpu_rows *g);
/*
 * Top-level keys of Kineto's traces for one output: "deviceProperties" (the devices of its
 * rows) and "distributedInfo" with rank (NULL: the first process's; -1: none).
 */
void gs_gpu_rows__top_level(struct gs_gpu_rows *g, struct gs_json *j, size_t output,
			    const long *rank);
/* A "gpu" object in the trace's metadata: counts, losses, the clock mapping and its error. */
void gs_gpu_rows__metadata(struct gs_gpu_rows *g, struct gs_json *j);
/* The GPU part of record's summary; nothing for g NULL. */
void gs_gpu_rows__summary(struct gs_gpu_rows *g, FILE *f);

#endif /* GS_TIMELINE_GPU_ROWS_H */
