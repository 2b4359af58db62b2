/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* merge.h: several gpusnoop and Kineto traces merged into one Chrome trace on one clock. */
#ifndef GS_MERGE_H
#define GS_MERGE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Clocks. A gpusnoop trace's "ts" is CLOCK_MONOTONIC of its host, and its metadata records
 * monotonic_to_realtime_ns. A Kineto trace's "ts" is microseconds of the wall clock
 * (CLOCK_REALTIME, std::chrono::system_clock) since the Unix epoch, or since
 * baseTimeNanoseconds when the trace has that key. Every event goes to realtime, then to
 * the output clock:
 *
 *   output ns = realtime ns - base
 *
 * where base is the monotonic_to_realtime_ns of the first gpusnoop input, so the output clock
 * is that host's CLOCK_MONOTONIC and its events keep their exact timestamps; when an input
 * has events from before that host booted, base moves back to the earliest of them so that
 * no timestamp is negative. Traces of one host and one boot (the same host name, offsets
 * within same_boot_ns) share one offset, so they keep their exact relative timing. The
 * output's metadata.monotonic_to_realtime_ns is base: the output can be stitched again.
 *
 * Processes. The first clock domain keeps its pids; domain i (in order of first appearance)
 * has i * GS_STITCH_PID_STRIDE added, so the same pid on two hosts is two processes. With
 * more than one domain, every process is named "NAME (pid P on HOST)".
 *
 * Flow and async ids: every numeric "id" is renumbered 1, 2, ... by (input, id) in order of
 * first appearance (stitch/id_map.h), so an id links the same events as in its input and
 * never another input's: the ac2g flows of two Kineto traces (correlation ids from 1), or of
 * two gpusnoop traces (process number << 32 | correlation id) stay apart. At most
 * opts->max_ids distinct ones (GS_STITCH_IDS_MAX: a table of 256 MiB at most); beyond that
 * the merge fails with -E2BIG.
 */
#define GS_STITCH_PID_STRIDE 10000000
#define GS_STITCH_IDS_MAX    (1UL << 23)

struct gs_stitch_input {
	const char *name; /* file name, for messages and metadata */
	void *ctx;
	/* reads up to len bytes: the count, 0 at the end, or -errno */
	long (*read)(void *ctx, void *buf, size_t len);
	/* back to the start for the second pass: 0 or -errno */
	int (*rewind)(void *ctx);
	/* optional: what went wrong with the last failed read ("invalid compressed data") */
	const char *(*read_error)(void *ctx);
	/* for a Kineto trace: its host (NULL: the first gpusnoop input's), and nanoseconds
	 * added to each of its timestamps (after its base) */
	const char *kineto_host;
	int64_t kineto_offset_ns;
};

struct gs_stitch_opts {
	uint64_t window_ns;		   /* reorder window (each input is nearly sorted) */
	uint64_t same_boot_ns;		   /* one host, offsets this close: one clock */
	const volatile sig_atomic_t *stop; /* optional: non-zero stops the merge (-EINTR) */
	size_t max_ids;			   /* distinct flow/async ids (0: GS_STITCH_IDS_MAX) */
	int argc;			   /* the command line, for the metadata */
	char **argv;
};

struct gs_stitch_stats {
	uint64_t events;   /* events written, metadata (M) events included */
	uint64_t late;	   /* written out of order: later than the window */
	uint64_t dropped;  /* dropped_events summed over the inputs */
	size_t domains;	   /* clock domains (hosts/boots) */
	size_t max_held;   /* most events the window held at once */
	char warning[256]; /* "" or one line for the user (a Kineto clock that looks wrong) */
};

#define GS_STITCH_DEFAULT_WINDOW_NS    2000000000ULL
#define GS_STITCH_DEFAULT_SAME_BOOT_NS 1000000000ULL

/*
 * Reads every input twice (metadata first, then events) and writes the merged trace to
 * out. Returns 0 or -errno; on failure err holds one line, "FILE: offset N: what" for
 * malformed input, and out holds an incomplete document the caller must discard.
 */
int gs_stitch(const struct gs_stitch_input *in, size_t nr, const struct gs_stitch_opts *opts,
	      FILE *out, struct gs_stitch_stats *stats, char *err, size_t errlen);

#endif /* GS_MERGE_H */
