/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* trace_writer.h: one Chrome trace written in timestamp order: render, reorder, emit. */
#ifndef GS_TRACE_WRITER_H
#define GS_TRACE_WRITER_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "stitch/chrome_trace.h"

/*
 * Events come nearly sorted (several CPUs' ring buffer, several input files): each is
 * rendered alone to JSON text, held in a gs_reorder window until the caller's clock is
 * window_ns past it, and then appended to the document in (timestamp, arrival) order. The
 * metadata goes last, after everything held was written.
 */
struct gs_trace_writer;

/*
 * The most the window holds, in bytes: at a flood's rate (a million events a second of ~600
 * bytes) the 500 ms window would hold 300 MB; past 16 MiB (a window of ~30k events), the oldest events go out before
 * their window passed (gs_trace_writer__early()), and memory stays bounded at any rate.
 */
#define GS_TRACE_WRITER_MAX_HELD_BYTES (16u << 20)

struct gs_reorder_budget;

/* Begins the document on out (borrowed). Caller frees with gs_trace_writer__free(). NULL
 * with errno set. */
struct gs_trace_writer *gs_trace_writer__new(FILE *out, uint64_t window_ns);
void gs_trace_writer__free(struct gs_trace_writer *w); /* what is still held is not written */
/*
 * w's window counts its events in b (stitch/reorder.h), shared with other writers, instead of
 * its own GS_TRACE_WRITER_MAX_HELD_BYTES: several files, one bound. Before the first event.
 */
void gs_trace_writer__share_budget(struct gs_trace_writer *w, struct gs_reorder_budget *b);

/*
 * Starts rendering one event that goes out in order of ts_ns: write exactly one event
 * through the returned trace (gs_chrome_trace__event() ... __end_event(), or a shorthand
 * such as gs_chrome_trace__counter()), then call gs_trace_writer__end().
 */
struct gs_chrome_trace *gs_trace_writer__begin(struct gs_trace_writer *w, uint64_t ts_ns);
/* Puts the event rendered since __begin() into the window. Returns 0 or -ENOMEM. */
int gs_trace_writer__end(struct gs_trace_writer *w);
/* An event rendered elsewhere (JSON text of one object, len bytes) into the window. */
int gs_trace_writer__push(struct gs_trace_writer *w, uint64_t ts_ns, const char *json, size_t len);
/* The document itself, for timeless events (process names) written at once, unordered. */
struct gs_chrome_trace *gs_trace_writer__trace(struct gs_trace_writer *w);

/* Writes, in order, every held event window_ns or more older than now_ns. */
void gs_trace_writer__advance(struct gs_trace_writer *w, uint64_t now_ns);
/* Writes everything held, in order (at the end). */
void gs_trace_writer__flush(struct gs_trace_writer *w);
/* Flushes, closes the events and opens the "metadata" object for the caller to fill. */
struct gs_json *gs_trace_writer__metadata(struct gs_trace_writer *w);
/* Closes the document (flushing first when the metadata was never opened). */
void gs_trace_writer__finish(struct gs_trace_writer *w);

/*
 * Writes no more ordered events: those held and those pushed later are only counted (the
 * output reached its size cap); timeless events and the metadata still go out.
 */
void gs_trace_writer__close_window(struct gs_trace_writer *w);
/*
 * Asks over(ctx) every few events written whether the output reached its cap (true: the
 * window closes); a cap checked only now and then would let a fast stream write past it.
 */
void gs_trace_writer__watch_size(struct gs_trace_writer *w, bool (*over)(void *ctx), void *ctx);
/*
 * Hands each ordered event, as it leaves the window, to row() (len bytes, borrowed for the
 * call) instead of the document: another encoding of the same rows (record --format
 * perfetto). Events rendered through gs_trace_writer__begin() from now on are tapes of typed
 * tokens (user/json_tape.h: the structured row, no JSON text to parse again); pushed ones
 * stay JSON text. Timeless events and the metadata still go to the document.
 */
void gs_trace_writer__row_sink(struct gs_trace_writer *w,
			       int (*row)(void *ctx, const char *json, size_t len), void *ctx);
/* Events counted, not written, since gs_trace_writer__close_window(). */
uint64_t gs_trace_writer__not_written(const struct gs_trace_writer *w);
/* Events written to the document so far, timeless ones included. */
uint64_t gs_trace_writer__events(const struct gs_trace_writer *w);
/* Events written out of order: older than one already written when they arrived. */
uint64_t gs_trace_writer__late(const struct gs_trace_writer *w);
/* Events written before their window passed, to keep under GS_TRACE_WRITER_MAX_HELD_BYTES. */
uint64_t gs_trace_writer__early(const struct gs_trace_writer *w);
/* The most bytes the window held at once. */
size_t gs_trace_writer__peak_bytes(const struct gs_trace_writer *w);
/* The most events the window held at once. */
size_t gs_trace_writer__max_held(const struct gs_trace_writer *w);

#endif /* GS_TRACE_WRITER_H */
