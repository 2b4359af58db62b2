// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* reorder.c: a min-heap keyed by (timestamp, push sequence) that emits behind a time window. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "stitch/reorder.h"
#include "user/array.h"

struct held {
	uint64_t ts_ns;
	uint64_t seq; /* push order: breaks timestamp ties so the output is stable */
	size_t len;
	unsigned char data[];
};

struct gs_reorder {
	uint64_t window_ns;
	gs_reorder_emit_fn emit;
	void *ctx;
	struct held **heap; /* min-heap on (ts_ns, seq) */
	size_t nr, cap, max_held;
	uint64_t next_seq;
	uint64_t last_ts; /* timestamp of the last in-order emission */
	bool emitted_any;
	uint64_t late, emitted;
};

static bool before(const struct held *a, const struct held *b)
{
	return a->ts_ns < b->ts_ns || (a->ts_ns == b->ts_ns && a->seq < b->seq);
}

static void sift_up(struct held **h, size_t i)
{
	struct held *e = h[i];

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!before(e, h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = e;
}

static void sift_down(struct held **h, size_t nr, size_t i)
{
	struct held *e = h[i];

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= nr)
			break;
		if (child + 1 < nr && before(h[child + 1], h[child]))
			child++;
		if (!before(h[child], e))
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

static void emit_one(struct gs_reorder *r, const struct held *e)
{
	r->emitted++;
	r->emit(r->ctx, e->data, e->len, e->ts_ns);
}

/* Removes the earliest held event and emits it. */
static void pop_emit(struct gs_reorder *r)
{
	struct held *e = r->heap[0];

	r->nr--;
	if (r->nr) {
		r->heap[0] = r->heap[r->nr];
		sift_down(r->heap, r->nr, 0);
	}
	r->last_ts = e->ts_ns;
	r->emitted_any = true;
	emit_one(r, e);
	free(e);
}

int gs_reorder__push(struct gs_reorder *r, uint64_t ts_ns, const void *rec, size_t len)
{
	struct held *e;

	if (len > SIZE_MAX - sizeof(*e))
		return -ENOMEM;
	e = malloc(sizeof(*e) + len);
	if (!e)
		return -ENOMEM;
	e->ts_ns = ts_ns;
	e->seq = r->next_seq++;
	e->len = len;
	if (len)
		memcpy(e->data, rec, len);

	if (r->emitted_any && ts_ns < r->last_ts) {
		/* its place in the stream is gone: write it now rather than lose it */
		r->late++;
		emit_one(r, e);
		free(e);
		return 0;
	}
	if (GS_ARRAY_RESERVE(r->heap, r->nr, r->cap, 64)) {
		free(e);
		return -ENOMEM;
	}
	r->heap[r->nr] = e;
	sift_up(r->heap, r->nr);
	r->nr++;
	if (r->nr > r->max_held)
		r->max_held = r->nr;
	return 0;
}

void gs_reorder__advance(struct gs_reorder *r, uint64_t now_ns)
{
	uint64_t limit;

	/* ts + window <= now, written so that neither side can overflow */
	if (now_ns < r->window_ns)
		return;
	limit = now_ns - r->window_ns;
	while (r->nr && r->heap[0]->ts_ns <= limit)
		pop_emit(r);
}

void gs_reorder__flush(struct gs_reorder *r)
{
	while (r->nr)
		pop_emit(r);
}

uint64_t gs_reorder__late(const struct gs_reorder *r)
{
	return r->late;
}

size_t gs_reorder__held(const struct gs_reorder *r)
{
	return r->nr;
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
		free(r->heap[i]);
	free(r->heap);
	free(r);
}
