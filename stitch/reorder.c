// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* reorder.c: events held behind a time window and emitted in (timestamp, push sequence) order. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "stitch/reorder.h"
#include "user/array.h"

struct held {
	size_t len;
	unsigned char data[];
};

/*
 * A heap slot carries its key: the sift loops compare slots without following pointers
 * into scattered records (with ~50k events held, those cache misses made pop the drain's
 * top cost).
 */
struct slot {
	uint64_t ts_ns;
	uint64_t seq; /* push order: breaks timestamp ties so the output is stable */
	struct held *e;
};

struct gs_reorder {
	uint64_t window_ns;
	gs_reorder_emit_fn emit;
	void *ctx;
	struct slot *heap; /* min-heap on (ts_ns, seq): the events that came out of order */
	size_t nr, cap, max_held;
	/*
	 * Events that arrive in order (nearly all: one ring buffer, stamped just before their
	 * reserve) wait in this ring of slots, sorted, each in and out in O(1) time; the heap
	 * then holds only the few stragglers.
	 */
	struct slot *fifo;
	size_t fifo_head, fifo_nr, fifo_cap;
	uint64_t next_seq;
	uint64_t last_ts; /* timestamp of the last in-order emission */
	bool emitted_any;
	uint64_t late, emitted;
	size_t held_bytes, max_bytes, peak_bytes; /* what the held events take; the cap (0: none) */
	uint64_t early; /* emitted before their window passed, to stay under max_bytes */
	struct gs_reorder_budget *budget; /* shared with other windows; NULL: max_bytes alone */
};

/* What one held event takes: its copy, malloc's header, its slot. */
static size_t cost(size_t len)
{
	return sizeof(struct held) + len + 16 + sizeof(struct slot);
}

static bool before(const struct slot *a, const struct slot *b)
{
	return a->ts_ns < b->ts_ns || (a->ts_ns == b->ts_ns && a->seq < b->seq);
}

static void sift_up(struct slot *h, size_t i)
{
	struct slot e = h[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!before(&e, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = e;
}

static void sift_down(struct slot *h, size_t nr, size_t i)
{
	struct slot e = h[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= nr)
			break;
		if (child + 1 < nr && before(&h[child + 1], &h[child]))
			child++;
		if (!before(&h[child], &e))
			break;
		h[i] = h[child];
		i = child;
	}
	h[i] = e;
}

struct gs_reorder *gs_reorder__new(uint64_t window_ns, gs_reorder_emit_fn emit, void *ctx)
{
	struct gs_reorder *r;

	if (!emit) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->window_ns = window_ns;
	r->emit = emit;
	r->ctx = ctx;
	return r;
}

static void emit_one(struct gs_reorder *r, const struct held *e, uint64_t ts_ns)
{
	r->emitted++;
	r->emit(r->ctx, e->data, e->len, ts_ns);
}

static struct slot *fifo_at(const struct gs_reorder *r, size_t i)
{
	return &r->fifo[(r->fifo_head + i) % r->fifo_cap];
}

/* Appends s if it keeps the ring sorted; returns 1 if it does not, or -ENOMEM. */
static int fifo_push(struct gs_reorder *r, const struct slot *s)
{
	struct slot *grown;
	size_t cap;

	if (r->fifo_nr && before(s, fifo_at(r, r->fifo_nr - 1)))
		return 1;
	if (r->fifo_nr == r->fifo_cap) {
		cap = r->fifo_cap ? r->fifo_cap * 2 : 256;
		if (cap > SIZE_MAX / sizeof(*grown))
			return -ENOMEM;
		grown = malloc(cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		for (size_t i = 0; i < r->fifo_nr; i++)
			grown[i] = *fifo_at(r, i);
		free(r->fifo);
		r->fifo = grown;
		r->fifo_head = 0;
		r->fifo_cap = cap;
	}
	*fifo_at(r, r->fifo_nr++) = *s;
	return 0;
}

/* The earliest held event, NULL when none is held. */
static const struct slot *earliest(const struct gs_reorder *r)
{
	const struct slot *f = r->fifo_nr ? fifo_at(r, 0) : NULL;

	if (!r->nr)
		return f;
	return f && before(f, &r->heap[0]) ? f : &r->heap[0];
}

/* Counts bytes r now holds (add) or no longer holds, in r and in its shared budget. */
static void hold_bytes(struct gs_reorder *r, size_t bytes, bool add)
{
	r->held_bytes = add ? r->held_bytes + bytes : r->held_bytes - bytes;
	if (r->held_bytes > r->peak_bytes)
		r->peak_bytes = r->held_bytes;
	if (!r->budget)
		return;
	r->budget->held = add ? r->budget->held + bytes : r->budget->held - bytes;
	if (r->budget->held > r->budget->peak)
		r->budget->peak = r->budget->held;
}

static bool over_cap(const struct gs_reorder *r)
{
	if (r->budget)
		return r->budget->held > r->budget->max;
	return r->max_bytes && r->held_bytes > r->max_bytes;
}

/* Removes the earliest held event and emits it. */
static void pop_emit(struct gs_reorder *r)
{
	struct slot top = *earliest(r);

	if (r->fifo_nr && top.e == fifo_at(r, 0)->e) {
		r->fifo_head = (r->fifo_head + 1) % r->fifo_cap;
		r->fifo_nr--;
	} else if (--r->nr) {
		r->heap[0] = r->heap[r->nr];
		sift_down(r->heap, r->nr, 0);
	}
	r->last_ts = top.ts_ns;
	r->emitted_any = true;
	hold_bytes(r, cost(top.e->len), false);
	emit_one(r, top.e, top.ts_ns);
	free(top.e);
}

int gs_reorder__push(struct gs_reorder *r, uint64_t ts_ns, const void *rec, size_t len)
{
	struct held *e;
	struct slot s;
	int err;

	if (len > SIZE_MAX - sizeof(*e))
		return -ENOMEM;
	if (r->emitted_any && ts_ns < r->last_ts) {
		/* its place in the stream is gone: write it now rather than lose it */
		r->late++;
		r->emitted++;
		r->emit(r->ctx, rec, len, ts_ns);
		return 0;
	}
	e = malloc(sizeof(*e) + len);
	if (!e)
		return -ENOMEM;
	e->len = len;
	if (len)
		memcpy(e->data, rec, len);
	s = (struct slot){ .ts_ns = ts_ns, .seq = r->next_seq++, .e = e };
	err = fifo_push(r, &s);
	if (err == 1) {
		err = GS_ARRAY_RESERVE(r->heap, r->nr, r->cap, 64);
		if (!err) {
			r->heap[r->nr] = s;
			sift_up(r->heap, r->nr);
			r->nr++;
		}
	}
	if (err) {
		free(e);
		return err;
	}
	if (r->nr + r->fifo_nr > r->max_held)
		r->max_held = r->nr + r->fifo_nr;
	hold_bytes(r, cost(len), true);
	/* over the cap: the oldest go out now, the window shorter for as long as it takes */
	while (over_cap(r) && r->nr + r->fifo_nr) {
		r->early++;
		pop_emit(r);
	}
	return 0;
}

void gs_reorder__cap_bytes(struct gs_reorder *r, size_t max_bytes)
{
	r->max_bytes = max_bytes;
}

void gs_reorder__share_budget(struct gs_reorder *r, struct gs_reorder_budget *b)
{
	r->budget = b;
}

uint64_t gs_reorder__early(const struct gs_reorder *r)
{
	return r->early;
}

size_t gs_reorder__peak_bytes(const struct gs_reorder *r)
{
	return r->budget ? r->budget->peak : r->peak_bytes;
}

void gs_reorder__advance(struct gs_reorder *r, uint64_t now_ns)
{
	uint64_t limit;

	/* ts + window <= now, written so that neither side can overflow */
	if (now_ns < r->window_ns)
		return;
	limit = now_ns - r->window_ns;
	while (r->nr + r->fifo_nr && earliest(r)->ts_ns <= limit)
		pop_emit(r);
}

void gs_reorder__flush(struct gs_reorder *r)
{
	while (r->nr + r->fifo_nr)
		pop_emit(r);
}

uint64_t gs_reorder__late(const struct gs_reorder *r)
{
	return r->late;
}

size_t gs_reorder__held(const struct gs_reorder *r)
{
	return r->nr + r->fifo_nr;
}

uint64_t gs_reorder__emitted(const struct gs_reorder *r)
{
	return r->emitted;
}

size_t gs_reorder__max_held(const struct gs_reorder *r)
{
	return r->max_held;
}

void gs_reorder__free(struct gs_reorder *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nr; i++)
		free(r->heap[i].e);
	for (size_t i = 0; i < r->fifo_nr; i++)
		free(fifo_at(r, i)->e);
	if (r->budget) /* the other windows keep their room */
		r->budget->held -= r->held_bytes;
	free(r->fifo);
	free(r->heap);
	free(r);
}
