/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* reorder.h: a bounded reorder window that turns nearly sorted events into a sorted stream. */
#ifndef GS_REORDER_H
#define GS_REORDER_H

#include <stddef.h>
#include <stdint.h>

/*
 * Events from several ring buffers, CPUs or files arrive slightly out of order. The window
 * holds each pushed event until the caller's clock has moved window_ns past it, then emits
 * the held events in (ts_ns, push order): ties keep push order. An event pushed with a
 * timestamp older than the last one emitted cannot be put back in order any more: it is
 * emitted at once and counted late, never dropped. Memory is what the window holds (one
 * copy per held event, in a binary heap).
 *
 * emit receives a borrowed copy of the record, valid for that call only. It must not call
 * back into the same gs_reorder.
 */
struct gs_reorder;
typedef void (*gs_reorder_emit_fn)(void *ctx, const void *rec, size_t len, uint64_t ts_ns);

/* caller frees with gs_reorder__free(); NULL with errno set on failure */
struct gs_reorder *gs_reorder__new(uint64_t window_ns, gs_reorder_emit_fn emit, void *ctx);
/* copies rec; an event older than the last emitted timestamp is emitted at once and counted
 * late. Returns 0 or -ENOMEM (the event is then neither held nor emitted). */
int gs_reorder__push(struct gs_reorder *r, uint64_t ts_ns, const void *rec, size_t len);
/* emits, in timestamp order, every held event with ts_ns + window_ns <= now_ns */
void gs_reorder__advance(struct gs_reorder *r, uint64_t now_ns);
void gs_reorder__flush(struct gs_reorder *r); /* emits everything held, in order */
/* events pushed older than the last emitted timestamp (emitted out of order) */
uint64_t gs_reorder__late(const struct gs_reorder *r);
size_t gs_reorder__held(const struct gs_reorder *r);
/* events emitted so far, late ones included */
uint64_t gs_reorder__emitted(const struct gs_reorder *r);
/* the largest number of events held at once (for sizing the window) */
size_t gs_reorder__max_held(const struct gs_reorder *r);
/*
 * Bounds the memory the window holds: once the held events take more than max_bytes (their
 * copies and bookkeeping), the oldest are emitted before their window passed (counted early;
 * events older than them that come later are then late: written out of order, never lost).
 * 0: no cap (the default).
 */
void gs_reorder__cap_bytes(struct gs_reorder *r, size_t max_bytes);
/*
 * One cap for several windows (record -o DIR/: one window per rank file, however many ranks):
 * a push that takes their total past max emits the pushing window's oldest events early (the
 * one just pushed last of all) until the total is under max again or that window is empty.
 * The caller owns it (max set, the rest zero) and keeps it until every window sharing it is
 * freed. The total stays under max plus one event, however many windows share it.
 */
struct gs_reorder_budget {
	size_t max, held, peak;
};
/* r's held events count in b, which then caps r instead of r's own cap. Before any push. */
void gs_reorder__share_budget(struct gs_reorder *r, struct gs_reorder_budget *b);
uint64_t gs_reorder__early(const struct gs_reorder *r);
/*
 * The most bytes the held events took at once (a peak past the cap by one event at most);
 * with a shared budget, those of all its windows together.
 */
size_t gs_reorder__peak_bytes(const struct gs_reorder *r);
void gs_reorder__free(struct gs_reorder *r); /* frees held events without emitting them */

#endif /* GS_REORDER_H */
