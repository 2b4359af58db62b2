/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* record_nvtx.h: `record -e nvtx`: NVTX ranges and marks as trace rows (category "nvtx"). */
#ifndef GS_RECORD_NVTX_H
#define GS_RECORD_NVTX_H

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
struct gs_record_nvtx_emit {
	void *ctx;
	struct gs_chrome_trace *(*begin)(void *ctx, pid_t pid, uint64_t ts_ns);
	void (*end)(void *ctx);
	/* names the process's and the thread's tracks, the first time each is seen */
	void (*track)(void *ctx, pid_t pid, pid_t tid, uint64_t ts_ns);
	/* the thread's track is called name from now on */
	void (*name_thread)(void *ctx, pid_t pid, pid_t tid, const char *name, uint64_t ts_ns);
};

struct gs_record_nvtx;

/*
 * For `record -e nvtx -- CMD`: NVTX_INJECTION64_PATH names the injection library, which the
 * command inherits (NVTX reads it at its first call, so only a command started so gets it).
 * 0, or -EEXIST when it names another library and required (else a warning and 0), -ENOENT
 * when none is installed (logged).
 */
int gs_record_nvtx_setenv(bool required);

/* NULL with errno set. */
struct gs_record_nvtx *gs_record_nvtx__new(const struct gs_record_nvtx_emit *emit);
void gs_record_nvtx__free(struct gs_record_nvtx *n);
/* A GS_EV_NVTX record as it came from the tracker (size checked here too). */
void gs_record_nvtx__event(struct gs_record_nvtx *n, const struct gs_event_hdr *hdr, size_t size);
/* pid exited or replaced its image: its open ranges end at now_ns. */
void gs_record_nvtx__proc_gone(struct gs_record_nvtx *n, pid_t pid, uint64_t now_ns);
/* The recording stops: every open range ends at now_ns. */
void gs_record_nvtx__finish(struct gs_record_nvtx *n, uint64_t now_ns);
/* An "nvtx" object in the trace's metadata: counts and losses. */
void gs_record_nvtx__metadata(const struct gs_record_nvtx *n, struct gs_json *j);
/* One line of record's summary; nothing for n NULL, or without NVTX calls unless named (-e nvtx). */
void gs_record_nvtx__summary(const struct gs_record_nvtx *n, FILE *f, bool named);

#endif /* GS_RECORD_NVTX_H */
