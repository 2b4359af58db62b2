// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* trace_parse.c: yajl callbacks that cut a Chrome trace into events and top-level values. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_parse.h>
#include "stitch/trace_parse.h"
#include "user/text_escape.h"

#define MAX_DEPTH 64

struct buf {
	char *p;
	size_t len, cap;
	bool oom;
};

enum top_state { TOP_NONE, TOP_CAPTURE, TOP_EVENTS };

struct gs_trace_parser {
	yajl_handle h;
	struct gs_trace_parse_ops ops;
	int depth;
	char kind[MAX_DEPTH + 1];  /* '{' or '[' per open container */
	bool comma[MAX_DEPTH + 1]; /* a value was written at this depth (serialized areas) */
	enum top_state top;
	char top_key[128];
	struct buf top_json;
	bool top_over; /* the value passed GS_TRACE_TOP_MAX: dropped */
	/* the event being read */
	struct gs_trace_event ev;
	struct buf rest;
	char field[64]; /* current key at event level */
	size_t id_pos;	/* rest's length before the "id" key was written */
	char key4[64];	/* current key one level inside a field (args.name) */
	char name[64];	/* the event's "name" when a string (truncated) */
	char pid_str[256];
	struct buf args_name;
	bool has_args_name;
	uint64_t events;
	/* input position and errors */
	uint64_t fed;	  /* bytes before the chunk being parsed */
	int err;	  /* sticky */
	char errmsg[256]; /* our own message for a canceled parse */
	uint64_t err_off;
	bool canceled_by_ops; /* a callback error, not malformed input */
};

static void buf_reserve(struct buf *b, size_t more)
{
	size_t cap;
	char *p;

	if (b->oom || b->len + more + 1 <= b->cap)
		return;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return;
	}
	b->p = p;
	b->cap = cap;
}

static void buf_add(struct buf *b, const char *s, size_t len)
{
	buf_reserve(b, len);
	if (b->oom)
		return;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
}

static void buf_addc(struct buf *b, char c)
{
	buf_add(b, &c, 1);
}

/* Strings are carried through as bytes, but written back as valid UTF-8 (user/text_escape.h). */
static void buf_add_string(struct buf *b, const unsigned char *s, size_t len)
{
	const char *p = (const char *)s, *end = p + len;

	buf_addc(b, '"');
	while (p < end) {
		size_t run = gs_json_plain_run(p, (size_t)(end - p)), used, n;
		char esc[GS_JSON_ESC_MAX];

		buf_add(b, p, run);
		p += run;
		if (p == end)
			break;
		n = gs_json_escape_char(p, (size_t)(end - p), esc, &used);
		buf_add(b, esc, n);
		p += used;
	}
	buf_addc(b, '"');
}

static int fail(struct gs_trace_parser *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Records a malformed-input message; returning its 0 cancels the yajl parse. */
static int fail(struct gs_trace_parser *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->err) {
		va_start(ap, fmt);
		vsnprintf(p->errmsg, sizeof(p->errmsg), fmt, ap);
		va_end(ap);
		p->err = -EINVAL;
	}
	return 0;
}

static int fail_oom(struct gs_trace_parser *p)
{
	if (!p->err) {
		snprintf(p->errmsg, sizeof(p->errmsg), "out of memory");
		p->err = -ENOMEM;
		p->canceled_by_ops = true;
	}
	return 0;
}

/* The buffer serialized values go to at the current position, or NULL. */
static struct buf *sink(struct gs_trace_parser *p)
{
	if (p->top == TOP_CAPTURE && !p->top_over)
		return &p->top_json;
	if (p->top == TOP_EVENTS && p->depth >= 3)
		return &p->rest;
	return NULL;
}

/* The comma before an array element (a map value's comma went before its key). */
static void value_prefix(struct gs_trace_parser *p, struct buf *b)
{
	if (p->kind[p->depth] == '[' && p->depth >= 1) {
		if (p->comma[p->depth])
			buf_addc(b, ',');
		p->comma[p->depth] = true;
	}
}

static int check_top_cap(struct gs_trace_parser *p)
{
	if (p->top == TOP_CAPTURE && p->top_json.len > GS_TRACE_TOP_MAX) {
		p->top_over = true;
		free(p->top_json.p);
		memset(&p->top_json, 0, sizeof(p->top_json));
	}
	return p->top_json.oom || p->rest.oom || p->args_name.oom ? fail_oom(p) : 1;
}

static int deliver_top(struct gs_trace_parser *p)
{
	int err = 0;

	p->top = TOP_NONE;
	if (p->ops.top_level)
		err = p->ops.top_level(p->ops.ctx, p->top_key, p->top_over ? NULL : p->top_json.p,
				       p->top_over ? 0 : p->top_json.len);
	p->top_json.len = 0;
	p->top_over = false;
	if (err) {
		p->err = err;
		p->canceled_by_ops = true;
		return 0;
	}
	return 1;
}

static void begin_event(struct gs_trace_parser *p)
{
	memset(&p->ev, 0, sizeof(p->ev));
	p->rest.len = 0;
	if (p->rest.p)
		p->rest.p[0] = '\0';
	p->field[0] = p->key4[0] = p->name[0] = '\0';
	p->has_args_name = false;
	p->args_name.len = 0;
}

static int end_event(struct gs_trace_parser *p)
{
	struct gs_trace_event *ev = &p->ev;
	int err;

	ev->index = p->events++;
	if (!ev->ph[0])
		return fail(p, "traceEvents[%" PRIu64 "]: no \"ph\"", ev->index);
	if (!ev->has_ts && strcmp(ev->ph, "M"))
		return fail(p, "traceEvents[%" PRIu64 "]: no \"ts\"", ev->index);
	if (!ev->args_end)
		ev->args_start = ev->args_end = 0;
	ev->rest = p->rest.p ? p->rest.p : "";
	ev->rest_len = p->rest.len;
	ev->pid_str = ev->pid_is_str ? p->pid_str : NULL;
	ev->args_name = p->has_args_name ? p->args_name.p : NULL;
	ev->is_process_name = !strcmp(ev->ph, "M") && !strcmp(p->name, "process_name");
	if (!p->ops.event)
		return 1;
	err = p->ops.event(p->ops.ctx, ev);
	if (err) {
		p->err = err;
		p->canceled_by_ops = true;
		return 0;
	}
	return 1;
}

/* A scalar at event level: pid, ts and ph are read; every other field goes to rest. */
static int event_field(struct gs_trace_parser *p, int type, const char *s, size_t len)
{
	struct gs_trace_event *ev = &p->ev;
	int err;

	if (!strcmp(p->field, "ts")) {
		if (type != 'n')
			return fail(p, "traceEvents[%" PRIu64 "]: \"ts\" is not a number",
				    p->events);
		err = gs_parse_us_ns(s, len, &ev->ts_ns);
		/* 146 years either way: room to add a wall-clock offset without overflow */
		if (!err && (ev->ts_ns > GS_TRACE_TS_MAX_NS || ev->ts_ns < -GS_TRACE_TS_MAX_NS))
			err = -ERANGE;
		if (err)
			return fail(p, "traceEvents[%" PRIu64 "]: \"ts\" %s", p->events,
				    err == -ERANGE ? "out of range" : "is not a number");
		ev->has_ts = true;
		return 1;
	}
	if (!strcmp(p->field, "pid")) {
		if (type == 's') {
			snprintf(p->pid_str, sizeof(p->pid_str), "%.*s", (int)len, s);
			ev->pid_is_str = true;
		} else if (type != 'n' || gs_parse_i64(s, len, &ev->pid)) {
			return fail(p,
				    "traceEvents[%" PRIu64 "]: \"pid\" is not an integer or string",
				    p->events);
		} else {
			ev->pid_is_str = false;
		}
		ev->has_pid = true;
		return 1;
	}
	if (!strcmp(p->field, "id") && type == 'n' && !gs_parse_i64(s, len, &ev->id)) {
		/* a number to renumber: out of rest again, key and all */
		p->rest.len = p->id_pos;
		if (p->rest.p)
			p->rest.p[p->rest.len] = '\0';
		ev->has_id = true;
		return 1;
	}
	if (!strcmp(p->field, "ph")) {
		if (type != 's')
			return fail(p, "traceEvents[%" PRIu64 "]: \"ph\" is not a string",
				    p->events);
		snprintf(ev->ph, sizeof(ev->ph), "%.*s", (int)len, s);
	} else if (!strcmp(p->field, "name") && type == 's') {
		snprintf(p->name, sizeof(p->name), "%.*s", (int)len, s);
	}
	if (type == 's')
		buf_add_string(&p->rest, (const unsigned char *)s, len);
	else
		buf_add(&p->rest, s, len);
	if (!strcmp(p->field, "args"))
		ev->args_end = p->rest.len;
	return check_top_cap(p);
}

/* type: 'n' number, 's' string, 'l' literal (null, true, false) */
static int scalar(struct gs_trace_parser *p, int type, const char *s, size_t len)
{
	struct buf *b;

	if (p->err)
		return 0;
	if (p->depth == 0)
		return fail(p, "not a trace: the document is not a JSON object");
	if (p->depth == 1) {
		if (!strcmp(p->top_key, "traceEvents"))
			return fail(p, "\"traceEvents\" is not an array");
		p->top = TOP_CAPTURE;
		p->top_json.len = 0;
	}
	if (p->top == TOP_EVENTS && p->depth == 2)
		return fail(p, "traceEvents[%" PRIu64 "]: not an object", p->events);
	if (p->top == TOP_EVENTS && p->depth == 3)
		return event_field(p, type, s, len);
	b = sink(p);
	if (b) {
		value_prefix(p, b);
		if (type == 's')
			buf_add_string(b, (const unsigned char *)s, len);
		else
			buf_add(b, s, len);
	}
	if (p->top == TOP_EVENTS && p->depth == 4 && type == 's' && !strcmp(p->field, "args") &&
	    !strcmp(p->key4, "name")) {
		p->args_name.len = 0;
		buf_add(&p->args_name, s, len);
		p->has_args_name = true;
	}
	if (p->depth == 1)
		return check_top_cap(p) && deliver_top(p);
	return check_top_cap(p);
}

static int on_null(void *ctx)
{
	return scalar(ctx, 'l', "null", 4);
}

static int on_boolean(void *ctx, int v)
{
	return scalar(ctx, 'l', v ? "true" : "false", v ? 4 : 5);
}

static int on_number(void *ctx, const char *s, size_t len)
{
	return scalar(ctx, 'n', s, len);
}

static int on_string(void *ctx, const unsigned char *s, size_t len)
{
	return scalar(ctx, 's', (const char *)s, len);
}

static int open_container(struct gs_trace_parser *p, char c)
{
	struct buf *b;

	if (p->err)
		return 0;
	if (p->depth >= MAX_DEPTH)
		return fail(p, "nested deeper than %d levels", MAX_DEPTH);
	if (p->depth == 0) {
		if (c != '{')
			return fail(p, "not a trace object: the document is an array (a legacy "
				       "profiler export?)");
	} else if (p->depth == 1) {
		if (!strcmp(p->top_key, "traceEvents")) {
			if (c != '[')
				return fail(p, "\"traceEvents\" is not an array");
			p->top = TOP_EVENTS;
		} else {
			p->top = TOP_CAPTURE;
			p->top_json.len = 0;
			p->top_over = false;
		}
	} else if (p->top == TOP_EVENTS && p->depth == 2) {
		if (c != '{')
			return fail(p, "traceEvents[%" PRIu64 "]: not an object", p->events);
		begin_event(p);
	} else if (p->top == TOP_EVENTS && p->depth == 3) {
		if (!strcmp(p->field, "ts"))
			return fail(p, "traceEvents[%" PRIu64 "]: \"ts\" is not a number",
				    p->events);
		if (!strcmp(p->field, "pid"))
			return fail(p,
				    "traceEvents[%" PRIu64 "]: \"pid\" is not an integer or string",
				    p->events);
		if (!strcmp(p->field, "ph"))
			return fail(p, "traceEvents[%" PRIu64 "]: \"ph\" is not a string",
				    p->events);
	}
	b = sink(p);
	if (b) {
		if (p->depth >= 2 || p->top == TOP_CAPTURE)
			value_prefix(p, b);
		buf_addc(b, c);
	}
	p->depth++;
	p->kind[p->depth] = c;
	p->comma[p->depth] = false;
	if (p->depth == 4)
		p->key4[0] = '\0';
	return check_top_cap(p);
}

static int close_container(struct gs_trace_parser *p, char c)
{
	struct buf *b = sink(p);

	if (p->err)
		return 0;
	if (b && !(p->top == TOP_EVENTS && p->depth == 3))
		buf_addc(b, c);
	p->depth--;
	if (p->top == TOP_CAPTURE && p->depth == 1)
		return check_top_cap(p) && deliver_top(p);
	if (p->top == TOP_EVENTS) {
		if (p->depth == 1)
			p->top = TOP_NONE;
		else if (p->depth == 2)
			return end_event(p);
		else if (p->depth == 3 && !strcmp(p->field, "args"))
			p->ev.args_end = p->rest.len;
	}
	return check_top_cap(p);
}

static int on_start_map(void *ctx)
{
	return open_container(ctx, '{');
}

static int on_end_map(void *ctx)
{
	return close_container(ctx, '}');
}

static int on_start_array(void *ctx)
{
	return open_container(ctx, '[');
}

static int on_end_array(void *ctx)
{
	return close_container(ctx, ']');
}

static int on_map_key(void *ctx, const unsigned char *key, size_t len)
{
	struct gs_trace_parser *p = ctx;
	struct buf *b;

	if (p->err)
		return 0;
	if (p->depth == 1) {
		snprintf(p->top_key, sizeof(p->top_key), "%.*s", (int)len, key);
		return 1;
	}
	if (p->top == TOP_EVENTS && p->depth == 3) {
		snprintf(p->field, sizeof(p->field), "%.*s", (int)len, key);
		if (!strcmp(p->field, "pid") || !strcmp(p->field, "ts"))
			return 1; /* taken apart, not part of rest */
		if (!strcmp(p->field, "args"))
			p->ev.args_start = p->rest.len;
		p->id_pos = p->rest.len;
		buf_addc(&p->rest, ',');
		buf_add_string(&p->rest, key, len);
		buf_addc(&p->rest, ':');
		return check_top_cap(p);
	}
	if (p->depth == 4)
		snprintf(p->key4, sizeof(p->key4), "%.*s", (int)len, key);
	b = sink(p);
	if (b) {
		if (p->comma[p->depth])
			buf_addc(b, ',');
		p->comma[p->depth] = true;
		buf_add_string(b, key, len);
		buf_addc(b, ':');
	}
	return check_top_cap(p);
}

static const yajl_callbacks callbacks = {
	.yajl_null = on_null,
	.yajl_boolean = on_boolean,
	.yajl_number = on_number,
	.yajl_string = on_string,
	.yajl_start_map = on_start_map,
	.yajl_map_key = on_map_key,
	.yajl_end_map = on_end_map,
	.yajl_start_array = on_start_array,
	.yajl_end_array = on_end_array,
};

struct gs_trace_parser *gs_trace_parser__new(const struct gs_trace_parse_ops *ops)
{
	struct gs_trace_parser *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ops = *ops;
	p->h = yajl_alloc(&callbacks, NULL, p);
	if (!p->h) {
		free(p);
		errno = ENOMEM;
		return NULL;
	}
	/* symbol names from a traced binary are bytes, not always UTF-8: carry them through */
	yajl_config(p->h, yajl_dont_validate_strings, 1);
	return p;
}

/* Turns a yajl status into our error, message and offset. */
static int status(struct gs_trace_parser *p, yajl_status st, const unsigned char *buf, size_t len)
{
	unsigned char *msg;
	size_t n;

	if (st == yajl_status_ok)
		return 0;
	p->err_off = p->fed + yajl_get_bytes_consumed(p->h);
	if (st == yajl_status_client_canceled) {
		if (!p->err)
			p->err = -EINVAL;
		return p->err;
	}
	msg = yajl_get_error(p->h, 0, buf, len);
	/* "parse error: premature EOF\n" -> "premature EOF" */
	snprintf(p->errmsg, sizeof(p->errmsg), "%s",
		 msg ? (const char *)msg +
				 (strncmp((const char *)msg, "parse error: ", 13) ? 0 : 13)
		     : "invalid JSON");
	n = strlen(p->errmsg);
	while (n &&
	       (p->errmsg[n - 1] == '\n' || p->errmsg[n - 1] == ' ' || p->errmsg[n - 1] == '.'))
		p->errmsg[--n] = '\0';
	if (msg)
		yajl_free_error(p->h, msg);
	p->err = -EINVAL;
	return p->err;
}

int gs_trace_parser__feed(struct gs_trace_parser *p, const void *buf, size_t len)
{
	yajl_status st;
	int err;

	if (p->err)
		return p->err;
	st = yajl_parse(p->h, buf, len);
	err = status(p, st, buf, len);
	if (!err)
		p->fed += len;
	return err;
}

int gs_trace_parser__finish(struct gs_trace_parser *p)
{
	int err;

	if (p->err)
		return p->err;
	/* an empty or whitespace-only input is yajl's "premature EOF" too */
	err = status(p, yajl_complete_parse(p->h), NULL, 0);
	if (err)
		p->err_off = p->fed;
	return err;
}

const char *gs_trace_parser__error(const struct gs_trace_parser *p)
{
	return p->err ? p->errmsg : NULL;
}

uint64_t gs_trace_parser__error_offset(const struct gs_trace_parser *p)
{
	return p->err_off;
}

uint64_t gs_trace_parser__bytes(const struct gs_trace_parser *p)
{
	return p->fed;
}

uint64_t gs_trace_parser__events(const struct gs_trace_parser *p)
{
	return p->events;
}

void gs_trace_parser__free(struct gs_trace_parser *p)
{
	if (!p)
		return;
	yajl_free(p->h);
	free(p->top_json.p);
	free(p->rest.p);
	free(p->args_name.p);
	free(p);
}

int gs_parse_i64(const char *s, size_t len, int64_t *v)
{
	bool neg = len && s[0] == '-';
	uint64_t x = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	size_t i = neg;

	if (i >= len)
		return -EINVAL;
	for (; i < len; i++) {
		unsigned int d = (unsigned char)s[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (x > (limit - d) / 10)
			return -ERANGE;
		x = x * 10 + d;
	}
	*v = neg ? (int64_t)(0 - x) : (int64_t)x;
	return 0;
}

int gs_parse_us_ns(const char *s, size_t len, int64_t *ns)
{
	unsigned __int128 m = 0, pow = 1;
	bool neg = false, any = false;
	int digits = 0, scale = 3; /* ns = m * 10^scale */
	size_t i = 0;

	if (i < len && s[i] == '-') {
		neg = true;
		i++;
	}
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, any = true) {
		if (m || s[i] != '0')
			digits++;
		if (digits > 36)
			return -ERANGE;
		m = m * 10 + (unsigned int)(s[i] - '0');
	}
	if (i < len && s[i] == '.') {
		for (i++; i < len && s[i] >= '0' && s[i] <= '9'; i++, any = true) {
			if (m || s[i] != '0')
				digits++;
			if (digits > 36)
				break; /* beyond a double's precision anyway */
			m = m * 10 + (unsigned int)(s[i] - '0');
			scale--;
		}
		while (i < len && s[i] >= '0' && s[i] <= '9')
			i++;
	}
	if (!any)
		return -EINVAL;
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		int64_t e;
		size_t start = ++i;

		if (i < len && s[i] == '+')
			start = ++i;
		while (i < len && ((s[i] >= '0' && s[i] <= '9') || (i == start && s[i] == '-')))
			i++;
		if (gs_parse_i64(s + start, i - start, &e))
			return -EINVAL;
		if (e > 60 || e < -60)
			return m == 0 || e < 0 ? (*ns = 0, 0) : -ERANGE;
		scale += (int)e;
	}
	if (i != len)
		return -EINVAL;
	if (scale < -40) {
		m = 0;
	} else if (scale < 0) {
		for (int k = 0; k < -scale; k++)
			pow *= 10;
		m = (m + pow / 2) / pow; /* to nearest, halves away from zero */
	} else {
		for (int k = 0; k < scale; k++) {
			if (m > ((unsigned __int128)1 << 100))
				return -ERANGE;
			m *= 10;
		}
	}
	if (m > (unsigned __int128)INT64_MAX + (neg ? 1 : 0))
		return -ERANGE;
	*ns = neg ? (int64_t)(0 - (uint64_t)m) : (int64_t)m;
	return 0;
}

void gs_format_us_signed(int64_t ns, char *buf, size_t len)
{
	uint64_t mag = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;

	snprintf(buf, len, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", mag / 1000,
		 (unsigned int)(mag % 1000));
}

bool gs_is_perfetto_data(const void *buf, size_t len)
{
	const unsigned char *b = buf;
	size_t i = 1;

	/*
	 * A Trace opens with its first packet's tag, 0x0a, which is also JSON's "\n"; then a
	 * length, which may look like more whitespace. JSON goes on to '{' or '['; a packet's
	 * first field never does (0x7b and 0x5b are groups' tags, which Perfetto never uses).
	 */
	if (len < 2 || b[0] != 0x0a)
		return false;
	/* a packet's field 1 is a message (ftrace_events): one that opens with a varint field
	 * 1 (0x08) is another protobuf, a pprof profile's sample_type */
	if (len > 2 && b[1] < 0x80 && b[2] == 0x08)
		return false;
	while (i < len && strchr(" \t\r\n", b[i]) && b[i])
		i++;
	return i < len && b[i] != '{' && b[i] != '[';
}
