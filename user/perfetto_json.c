// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* perfetto_json.c: fopencookie over gs_trace_parser: the JSON rows, encoded by perfetto_trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "stitch/trace_parse.h"
#include "user/log.h"
#include "user/perfetto_json.h"
#include "user/perfetto_trace.h"

struct sink {
	struct gs_trace_parser *parser;
	struct gs_perfetto *pf;
	char *buf; /* "{" rest "}" of the row being encoded */
	size_t cap;
	int err;
};

static const char *str_of(yajl_val o, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(o, path, yajl_t_string);

	return v ? v->u.string : NULL;
}

/* A JSON number of microseconds at key, in nanoseconds (0 when absent or negative). */
static uint64_t us_of(yajl_val o, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(o, path, yajl_t_number);
	int64_t ns;

	if (!v || !v->u.number.r || gs_parse_us_ns(v->u.number.r, strlen(v->u.number.r), &ns) ||
	    ns < 0)
		return 0;
	return (uint64_t)ns;
}

static int64_t int_of(yajl_val o, const char *key)
{
	const char *path[] = { key, NULL };
	yajl_val v = yajl_tree_get(o, path, yajl_t_number);

	return v && YAJL_IS_INTEGER(v) ? v->u.number.i : 0;
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

static int on_event(void *ctx, const struct gs_trace_event *ev)
{
	struct sink *s = ctx;
	struct gs_perfetto_row row = { .ph = ev->ph[0], .pid = ev->pid };
	char err[128];
	yajl_val o;
	int ret;

	if (ev->pid_is_str || ev->ph[0] == '\0' || ev->ph[1] || ev->rest_len < 1)
		return 0; /* not a row of gpusnoop's: no form here */
	if (ev->rest_len + 2 > s->cap) {
		char *grown = realloc(s->buf, ev->rest_len + 2);

		if (!grown)
			return -ENOMEM;
		s->buf = grown;
		s->cap = ev->rest_len + 2;
	}
	/* rest is `,"key":value...`: its comma becomes the object's brace */
	s->buf[0] = '{';
	memcpy(s->buf + 1, ev->rest + 1, ev->rest_len - 1);
	s->buf[ev->rest_len] = '}';
	s->buf[ev->rest_len + 1] = '\0';
	o = yajl_tree_parse(s->buf, err, sizeof(err));
	if (!o)
		return -EINVAL;
	row.name = str_of(o, "name");
	row.cat = str_of(o, "cat");
	row.tid = int_of(o, "tid");
	row.ts_ns = ev->has_ts && ev->ts_ns > 0 ? (uint64_t)ev->ts_ns : 0;
	row.dur_ns = us_of(o, "dur");
	row.id = ev->has_id ? (uint64_t)ev->id : id_of(o);
	{
		const char *path[] = { "args", NULL };

		row.args = yajl_tree_get(o, path, yajl_t_object);
	}
	ret = gs_perfetto__row(s->pf, &row);
	yajl_tree_free(o);
	return ret > 0 ? 0 : ret;
}

static int on_top_level(void *ctx, const char *key, const char *json, size_t len)
{
	struct sink *s = ctx;

	/* displayTimeUnit: how a JSON viewer shows times, nothing of the trace's */
	if (!json || !strcmp(key, "displayTimeUnit"))
		return 0;
	return gs_perfetto__top_level(s->pf, key, json, len);
}

static ssize_t sink_write(void *cookie, const char *buf, size_t len)
{
	struct sink *s = cookie;

	if (!s->err)
		s->err = gs_trace_parser__feed(s->parser, buf, len);
	if (s->err) {
		errno = -s->err;
		return -1;
	}
	return (ssize_t)len;
}

static void sink_free(struct sink *s)
{
	gs_trace_parser__free(s->parser);
	gs_perfetto__free(s->pf);
	free(s->buf);
	free(s);
}

static int sink_close(void *cookie)
{
	struct sink *s = cookie;
	int err = s->err ?: gs_trace_parser__finish(s->parser) ?: gs_perfetto__finish(s->pf);

	if (err == -EINVAL)
		gs_err("perfetto: the timeline's JSON: %s at byte %llu",
		       gs_trace_parser__error(s->parser),
		       (unsigned long long)gs_trace_parser__error_offset(s->parser));
	sink_free(s);
	if (err) {
		errno = -err;
		return EOF;
	}
	return 0;
}

FILE *gs_perfetto_json__open(FILE *out)
{
	struct sink *s = calloc(1, sizeof(*s));
	struct gs_trace_parse_ops ops = { .event = on_event, .top_level = on_top_level };
	FILE *f;

	if (!s)
		return NULL;
	ops.ctx = s;
	s->pf = gs_perfetto__new(out);
	s->parser = s->pf ? gs_trace_parser__new(&ops) : NULL;
	f = s->parser ? fopencookie(s, "w", (cookie_io_functions_t){ .write = sink_write,
								    .close = sink_close })
		      : NULL;
	if (!f) {
		sink_free(s);
		errno = ENOMEM;
	}
	return f;
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
	return path && (ends_with(path, len, ".pftrace") || ends_with(path, len, ".perfetto-trace"));
}
