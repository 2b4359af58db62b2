// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* json.c: streaming JSON writer. */
#include <inttypes.h>
#include <math.h>
#include "user/json.h"
#include "user/json_tape.h"
#include "user/text_escape.h"

void gs_json__init(struct gs_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->tape = false;
	j->has_items[0] = false;
}

/*
 * The writer's stream belongs to one thread, so the _unlocked stdio calls are safe; a trace
 * is millions of short writes, and locking each and copying byte by byte cost the record
 * drain loop about half its CPU time (perf, scripts/bench/). Printable ASCII is the fast
 * path; anything else is spelled by gs_json_escape_char (user/text_escape.h), so the output
 * is valid UTF-8 whatever bytes a process chose for its names.
 */
void gs_json_write_string(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s, *run = p;

	putc_unlocked('"', f);
	for (;;) {
		char esc[GS_JSON_ESC_MAX];
		size_t used, len;

		if (*p >= 0x20 && *p < 0x7f && *p != '"' && *p != '\\') {
			p++;
			continue;
		}
		if (*p >= 0x80) {
			int32_t cp;

			len = gs_utf8_decode((const char *)p, 4, &cp);
			if (cp >= 0xa0) { /* well-formed and not a C1 control */
				p += len;
				continue;
			}
		}
		fwrite_unlocked(run, 1, (size_t)(p - run), f);
		if (!*p)
			break;
		len = gs_json_escape_char((const char *)p, 4, esc, &used);
		fwrite_unlocked(esc, 1, len, f);
		p += used;
		run = p;
	}
	putc_unlocked('"', f);
}

/* PRIu64 without printf's format parsing */
static void write_u64(FILE *f, uint64_t v)
{
	char buf[20];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	fwrite_unlocked(buf + i, 1, sizeof(buf) - i, f);
}

static void key_prefix(struct gs_json *j, const char *key)
{
	if (j->has_items[j->depth])
		putc_unlocked(',', j->f);
	j->has_items[j->depth] = true;
	if (key) {
		gs_json_write_string(j->f, key);
		putc_unlocked(':', j->f);
	}
}

static void open_scope(struct gs_json *j, const char *key, char c)
{
	if (j->tape) {
		gs_tape_put(j->f, c == '{' ? GS_TAPE_OBJECT : GS_TAPE_ARRAY, key);
	} else {
		key_prefix(j, key);
		putc_unlocked(c, j->f);
	}
	if (j->depth + 1 < GS_JSON_MAX_DEPTH)
		j->depth++;
	j->has_items[j->depth] = false;
}

static void close_scope(struct gs_json *j, char c)
{
	if (j->tape)
		gs_tape_put(j->f, GS_TAPE_END, NULL);
	else
		putc_unlocked(c, j->f);
	if (j->depth > 0)
		j->depth--;
}

void gs_json__begin_object(struct gs_json *j, const char *key)
{
	open_scope(j, key, '{');
}

void gs_json__end_object(struct gs_json *j)
{
	close_scope(j, '}');
}

void gs_json__begin_array(struct gs_json *j, const char *key)
{
	open_scope(j, key, '[');
}

void gs_json__end_array(struct gs_json *j)
{
	close_scope(j, ']');
}

void gs_json__string(struct gs_json *j, const char *key, const char *value)
{
	if (j->tape) {
		if (value)
			gs_tape_put_text(j->f, GS_TAPE_STRING, key, value);
		else
			gs_tape_put(j->f, GS_TAPE_NULL, key);
		return;
	}
	key_prefix(j, key);
	if (value)
		gs_json_write_string(j->f, value);
	else
		fputs("null", j->f);
}

void gs_json__u64(struct gs_json *j, const char *key, uint64_t value)
{
	if (j->tape) {
		gs_tape_put_int(j->f, GS_TAPE_U64, key, value);
		return;
	}
	key_prefix(j, key);
	write_u64(j->f, value);
}

void gs_json__i64(struct gs_json *j, const char *key, int64_t value)
{
	if (j->tape) {
		gs_tape_put_int(j->f, GS_TAPE_I64, key, (uint64_t)value);
		return;
	}
	key_prefix(j, key);
	if (value < 0)
		putc_unlocked('-', j->f);
	write_u64(j->f, value < 0 ? -(uint64_t)value : (uint64_t)value);
}

void gs_json__double(struct gs_json *j, const char *key, double value)
{
	char text[64];

	if (j->tape) {
		snprintf(text, sizeof(text), "%.6f", value);
		if (isfinite(value))
			gs_tape_put_text(j->f, GS_TAPE_DOUBLE, key, text);
		else
			gs_tape_put(j->f, GS_TAPE_NULL, key);
		return;
	}
	key_prefix(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.6f", value);
	else
		fputs("null", j->f);
}

void gs_json__bool(struct gs_json *j, const char *key, bool value)
{
	if (j->tape) {
		gs_tape_put(j->f, value ? GS_TAPE_TRUE : GS_TAPE_FALSE, key);
		return;
	}
	key_prefix(j, key);
	fputs(value ? "true" : "false", j->f);
}

void gs_json__raw(struct gs_json *j, const char *key, const char *text)
{
	if (j->tape) {
		gs_tape_put_text(j->f, GS_TAPE_RAW, key, text);
		return;
	}
	key_prefix(j, key);
	fputs_unlocked(text, j->f);
}
