// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* perfetto_json.c: fopencookie over gs_trace_parser: the JSON rows, encoded by perfetto_trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "stitch/trace_parse.h"
#include "user/json_tape.h"
#include "user/log.h"
#include "user/perfetto_json.h"
#include "user/perfetto_row.h"
#include "user/perfetto_trace.h"

struct gs_perfetto_json {
	FILE *file; /* the document stream */
	struct gs_trace_parser *parser;
	struct gs_perfetto *pf;
	struct gs_row_parser *rows; /* the ordered rows, handed over whole */
	char *buf;		    /* "{" rest "}" of the row being encoded */
	size_t cap;
	int err;
};

static const char *str_of(yajl_val o, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(o, path, yajl_t_string);

	return v ? v->u.string : NULL;
}

/* A row's id when not an integer ("0x1f"): its text, hashed. */
static uint64_t id_of(yajl_val o)
{
	const char *s = str_of(o, "id");
	uint64_t h = 0xcbf29ce484222325ull;

	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/* A number of microseconds, in nanoseconds (0 when not one, or negative). */
static uint64_t us_ns(yajl_val v)
{
	int64_t ns;

	if (!YAJL_IS_NUMBER(v) || !v->u.number.r ||
	    gs_parse_us_ns(v->u.number.r, strlen(v->u.number.r), &ns) || ns < 0)
		return 0;
	return (uint64_t)ns;
}

/*
 * The row's fields from the event object o, in one pass over its keys; ph, pid, ts and an
 * integer id too when whole (the document's parser took those out of o).
 */
static void row_fields(struct gs_perfetto_row *row, yajl_val o, bool whole)
{
	for (size_t i = 0; i < o->u.object.len; i++) {
		const char *k = o->u.object.keys[i];
		yajl_val v = o->u.object.values[i];
		bool str = YAJL_IS_STRING(v), num = YAJL_IS_INTEGER(v);

		switch (k[0]) { /* the first letter first: a strcmp of each key was a twentieth */
		case 'n':
			if (!strcmp(k, "name") && str)
				row->name = v->u.string;
			break;
		case 'c':
			if (!strcmp(k, "cat") && str)
				row->cat = v->u.string;
			break;
		case 'd':
			if (!strcmp(k, "dur"))
				row->dur_ns = us_ns(v);
			break;
		case 'a':
			if (!strcmp(k, "args") && YAJL_IS_OBJECT(v))
				row->args = v;
			break;
		case 'i':
			if (!strcmp(k, "id"))
				row->id = num ? (uint64_t)v->u.number.i : id_of(o);
			break;
		case 't':
			if (!strcmp(k, "tid") && num)
				row->tid = v->u.number.i;
			else if (whole && !strcmp(k, "ts"))
				row->ts_ns = us_ns(v);
			break;
		case 'p':
			if (whole && !strcmp(k, "ph") && str)
				row->ph = v->u.string[0] && !v->u.string[1] ? v->u.string[0] : '?';
			else if (whole && !strcmp(k, "pid") && num)
				row->pid = v->u.number.i;
			break;
		}
	}
}

/* A copy of text with a NUL after it, in s->buf (which has one byte more). */
static char *terminated(struct gs_perfetto_json *s, const char *text, size_t len)
{
	if (len + 2 > s->cap) { /* room for a closing brace too */
		char *grown = realloc(s->buf, len + 2);

		if (!grown)
			return NULL;
		s->buf = grown;
		s->cap = len + 2;
	}
	memcpy(s->buf, text, len);
	s->buf[len] = '\0';
	return s->buf;
}

int gs_perfetto_json__row(void *ctx, const char *json, size_t len)
{
	struct gs_perfetto_json *s = ctx;
	struct gs_perfetto_row row = { .ph = '?' };
	yajl_val o;
	int ret;

	o = gs_tape_is(json, len) ? gs_row_parser__tape(s->rows, json, len)
				  : gs_row_parser__parse(s->rows, json, len);
	if (!o || !YAJL_IS_OBJECT(o))
		return 1; /* not an event: no row (the writer's own rows always are) */
	row_fields(&row, o, true);
	ret = gs_perfetto__row(s->pf, &row);
	if (ret < 0 && !s->err)
		s->err = ret;
	return ret;
}

static int on_event(void *ctx, const struct gs_trace_event *ev)
{
	struct gs_perfetto_json *s = ctx;
	struct gs_perfetto_row row = { .ph = ev->ph[0], .pid = ev->pid };
	char err[128];
	yajl_val o;
	int ret;

	if (ev->pid_is_str || ev->ph[0] == '\0' || ev->ph[1] || ev->rest_len < 1)
		return 0; /* not a row of gpusnoop's: no form here */
	if (!terminated(s, ev->rest, ev->rest_len))
		return -ENOMEM;
	/* rest is `,"key":value...`: its comma becomes the object's brace */
	s->buf[0] = '{';
	s->buf[ev->rest_len] = '}';
	s->buf[ev->rest_len + 1] = '\0';
	o = yajl_tree_parse(s->buf, err, sizeof(err));
	if (!o)
		return -EINVAL;
	row_fields(&row, o, false);
	row.ts_ns = ev->has_ts && ev->ts_ns > 0 ? (uint64_t)ev->ts_ns : 0;
	if (ev->has_id)
		row.id = (uint64_t)ev->id;
	ret = gs_perfetto__row(s->pf, &row);
	yajl_tree_free(o);
	return ret > 0 ? 0 : ret;
}

static int on_top_level(void *ctx, const char *key, const char *json, size_t len)
{
	struct gs_perfetto_json *s = ctx;

	/* displayTimeUnit: how a JSON viewer shows times, nothing of the trace's */
	if (!json || !strcmp(key, "displayTimeUnit"))
		return 0;
	return gs_perfetto__top_level(s->pf, key, json, len);
}

static ssize_t sink_write(void *cookie, const char *buf, size_t len)
{
	struct gs_perfetto_json *s = cookie;

	if (!s->err)
		s->err = gs_trace_parser__feed(s->parser, buf, len);
	if (s->err) {
		errno = -s->err;
		return -1;
	}
	return (ssize_t)len;
}

static void sink_free(struct gs_perfetto_json *s)
{
	gs_trace_parser__free(s->parser);
	gs_perfetto__free(s->pf);
	gs_row_parser__free(s->rows);
	free(s->buf);
	free(s);
}

/* The document's end: gs_perfetto_json__close() frees s. */
static int sink_close(void *cookie)
{
	struct gs_perfetto_json *s = cookie;

	if (!s->err)
		s->err = gs_trace_parser__finish(s->parser);
	if (s->err == -EINVAL)
		gs_err("perfetto: the timeline's JSON: %s at byte %llu",
		       gs_trace_parser__error(s->parser),
		       (unsigned long long)gs_trace_parser__error_offset(s->parser));
	return s->err ? EOF : 0;
}

struct gs_perfetto_json *gs_perfetto_json__new(FILE *out)
{
	struct gs_perfetto_json *s = calloc(1, sizeof(*s));
	struct gs_trace_parse_ops ops = { .event = on_event, .top_level = on_top_level };

	if (!s)
		return NULL;
	ops.ctx = s;
	s->pf = gs_perfetto__new(out);
	s->rows = s->pf ? gs_row_parser__new() : NULL;
	s->parser = s->rows ? gs_trace_parser__new(&ops) : NULL;
	s->file = s->parser ? fopencookie(s, "w",
					  (cookie_io_functions_t){ .write = sink_write,
								   .close = sink_close })
			    : NULL;
	/* unbuffered: what the document says goes out in turn with the rows handed over */
	if (!s->file || setvbuf(s->file, NULL, _IONBF, 0)) {
		if (s->file)
			fclose(s->file);
		sink_free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

FILE *gs_perfetto_json__file(struct gs_perfetto_json *pj)
{
	return pj->file;
}

int gs_perfetto_json__close(struct gs_perfetto_json *pj)
{
	int err;

	if (!pj)
		return 0;
	fclose(pj->file);
	err = pj->err ?: gs_perfetto__finish(pj->pf);
	sink_free(pj);
	return err;
}

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len >= n && !memcmp(s + len - n, suffix, n);
}

bool gs_is_perfetto_path(const char *path)
{
	size_t len = path ? strlen(path) : 0;

	if (ends_with(path ?: "", len, ".gz"))
		len -= 3;
	return path &&
	       (ends_with(path, len, ".pftrace") || ends_with(path, len, ".perfetto-trace"));
}
