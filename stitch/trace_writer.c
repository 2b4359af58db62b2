// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* trace_writer.c: a memstream renders each event, gs_reorder orders them, chrome_trace writes. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "stitch/reorder.h"
#include "stitch/trace_writer.h"

struct gs_trace_writer {
	struct gs_chrome_trace trace;  /* the document */
	struct gs_chrome_trace render; /* one event at a time, into render_buf */
	FILE *render_f;
	char *render_buf;
	size_t render_len;   /* what the memstream holds, as of its last fflush */
	size_t render_start; /* where the event being rendered begins */
	bool rendering;	     /* begun, not ended: an abandoned event is written over */
	uint64_t render_ts_ns;
	struct gs_reorder *reorder;
	bool closed;	      /* gs_trace_writer__close_window(): events are counted, not written */
	uint64_t not_written; /* events held or pushed after that */
	bool (*over)(void *ctx); /* gs_trace_writer__watch_size() */
	void *over_ctx;
	unsigned since_check; /* events written since over() was last asked */
	int (*row)(void *ctx, const char *json, size_t len); /* gs_trace_writer__row_sink() */
	void *row_ctx;
	uint64_t rows; /* events the row sink took */
};

/* over() is asked this often: an fstat per 64 events is nothing beside writing them */
#define SIZE_CHECK_EVENTS 64

/* An event leaving the window: appended to the document. */
static void emit(void *ctx, const void *rec, size_t len, uint64_t ts_ns)
{
	struct gs_trace_writer *w = ctx;

	(void)ts_ns;
	if (!w->closed && w->over && ++w->since_check >= SIZE_CHECK_EVENTS) {
		w->since_check = 0;
		w->closed = w->over(w->over_ctx);
	}
	if (w->closed)
		w->not_written++;
	else if (w->row)
		w->rows += !w->row(w->row_ctx, rec, len);
	else
		gs_chrome_trace__raw_event(&w->trace, rec, len);
}

struct gs_trace_writer *gs_trace_writer__new(FILE *out, uint64_t window_ns)
{
	struct gs_trace_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->reorder = gs_reorder__new(window_ns, emit, w);
	if (w->reorder)
		gs_reorder__cap_bytes(w->reorder, GS_TRACE_WRITER_MAX_HELD_BYTES);
	w->render_f = open_memstream(&w->render_buf, &w->render_len);
	if (!w->reorder || !w->render_f) {
		gs_trace_writer__free(w);
		errno = ENOMEM;
		return NULL;
	}
	gs_chrome_trace__begin(&w->trace, out);
	return w;
}

void gs_trace_writer__share_budget(struct gs_trace_writer *w, struct gs_reorder_budget *b)
{
	gs_reorder__share_budget(w->reorder, b);
}

void gs_trace_writer__free(struct gs_trace_writer *w)
{
	if (!w)
		return;
	gs_reorder__free(w->reorder);
	if (w->render_f)
		fclose(w->render_f);
	free(w->render_buf);
	free(w);
}

/* events follow each other in the memstream, which starts over only now and then */
#define RENDER_RESTART_BYTES (1u << 20)

struct gs_chrome_trace *gs_trace_writer__begin(struct gs_trace_writer *w, uint64_t ts_ns)
{
	if (w->rendering || w->render_len >= RENDER_RESTART_BYTES) {
		rewind(w->render_f);
		w->render_len = 0;
	}
	w->render_start = w->render_len;
	w->rendering = true;
	gs_json__init(&w->render.json, w->render_f);
	w->render.json.tape = w->row != NULL; /* the sink reads tokens, not text */
	w->render_ts_ns = ts_ns;
	return &w->render;
}

int gs_trace_writer__end(struct gs_trace_writer *w)
{
	const char *event;
	size_t len, skip;

	w->rendering = false;
	if (fflush(w->render_f) || w->render_len <= w->render_start)
		return -ENOMEM;
	event = w->render_buf + w->render_start;
	len = w->render_len - w->render_start;
	/* the event's own line break: the document writes one before each event */
	skip = event[0] == '\n';
	return gs_trace_writer__push(w, w->render_ts_ns, event + skip, len - skip);
}

int gs_trace_writer__push(struct gs_trace_writer *w, uint64_t ts_ns, const char *json, size_t len)
{
	return gs_reorder__push(w->reorder, ts_ns, json, len);
}

struct gs_chrome_trace *gs_trace_writer__trace(struct gs_trace_writer *w)
{
	return &w->trace;
}

void gs_trace_writer__advance(struct gs_trace_writer *w, uint64_t now_ns)
{
	gs_reorder__advance(w->reorder, now_ns);
}

void gs_trace_writer__flush(struct gs_trace_writer *w)
{
	gs_reorder__flush(w->reorder);
}

struct gs_json *gs_trace_writer__metadata(struct gs_trace_writer *w)
{
	gs_reorder__flush(w->reorder);
	return gs_chrome_trace__metadata(&w->trace);
}

void gs_trace_writer__finish(struct gs_trace_writer *w)
{
	gs_reorder__flush(w->reorder);
	gs_chrome_trace__finish(&w->trace);
}

uint64_t gs_trace_writer__events(const struct gs_trace_writer *w)
{
	return w->trace.nr_events + w->rows;
}

void gs_trace_writer__row_sink(struct gs_trace_writer *w,
			       int (*row)(void *ctx, const char *json, size_t len), void *ctx)
{
	w->row = row;
	w->row_ctx = ctx;
}

void gs_trace_writer__close_window(struct gs_trace_writer *w)
{
	w->closed = true;
}

void gs_trace_writer__watch_size(struct gs_trace_writer *w, bool (*over)(void *ctx), void *ctx)
{
	w->over = over;
	w->over_ctx = ctx;
}

uint64_t gs_trace_writer__not_written(const struct gs_trace_writer *w)
{
	return w->not_written;
}

uint64_t gs_trace_writer__late(const struct gs_trace_writer *w)
{
	return gs_reorder__late(w->reorder);
}

uint64_t gs_trace_writer__early(const struct gs_trace_writer *w)
{
	return gs_reorder__early(w->reorder);
}

size_t gs_trace_writer__peak_bytes(const struct gs_trace_writer *w)
{
	return gs_reorder__peak_bytes(w->reorder);
}

size_t gs_trace_writer__max_held(const struct gs_trace_writer *w)
{
	return gs_reorder__max_held(w->reorder);
}
