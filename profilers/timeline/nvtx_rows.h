/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* nvtx_rows.h: `record -e nvtx`: NVTX ranges and marks as trace rows (category "nvtx"). */
#ifndef GS_TIMELINE_NVTX_ROWS_H
#define GS_TIMELINE_NVTX_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "stitch/chrome_trace.h"

/*
 * The rows, all with "cat": "nvtx", on the process and thread that made the call:
 *   push/pop ranges    "X" (ts: the push, dur: to the pop) on the pushing thread; nested
 *                      as the calls were, so the launch slices a range made sit inside it;
 *   start/end ranges   "b" at the start, "e" at the end (either thread), with one "id";
 *   marks              "i" with "s": "t" (thread scope).
 * args: "domain" (a named domain's name), "category" (its name, else its number),
 * "color" ("#rrggbb"), "payload" (a number). Ranges still open when their process ends or
 * the recording stops end there, with args "unfinished": true. nvtxNameOsThread names the
 * thread's track. Counts and losses go to the trace's metadata ("nvtx").
 */

/* How record renders one event of a process into its time-ordered output. */
struct gs_nvtx_rows_emit {
	void *ctx;
	struct gs_chrome_trace *(*begin)(void *ctx, pid_t pid, uint64_t ts_ns);
	void (*end)(void *ctx);
	/* names the process's and the thread's tracks, the first time each is seen */
	void (*track)(void *ctx, pid_t pid, pid_t tid, uint64_t ts_ns);
	/* the thread's track is called name from now on */
	void (*name_thread)(void *ctx, pid_t pid, pid_t tid, const char *name, uint64_t ts_ns);
};

struct gs_nvtx_rows;

/* NULL with errno set. */
struct gs_nvtx_rows *gs_nvtx_rows__new(const struct gs_nvtx_rows_emit *emit);
void gs_nvtx_rows__free(struct gs_nvtx_rows *n);
/* A GS_EV_NVTX record as it came from the tracker (size checked here too). */
void gs_nvtx_rows__event(struct gs_nvtx_rows *n, const struct gs_event_hdr *hdr, size_t size);
/* pid exited or replaced its image: its open ranges end at now_ns. */
void gs_nvtx_rows__proc_gone(struct gs_nvtx_rows *n, pid_t pid, uint64_t now_ns);
/* The recording stops: every open range ends at now_ns. */
void gs_nvtx_rows__finish(struct gs_nvtx_rows *n, uint64_t now_ns);
/* An "nvtx" object in the trace's metadata: counts and losses. */
void gs_nvtx_rows__metadata(const struct gs_nvtx_rows *n, struct gs_json *j);
/* One line of record's summary; nothing for n NULL, or without NVTX calls unless named (-e nvtx). */
void gs_nvtx_rows__summary(const struct gs_nvtx_rows *n, FILE *f, bool named);

#endif /* GS_TIMELINE_NVTX_ROWS_H */
