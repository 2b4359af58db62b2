// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* json.c: streaming JSON writer. */
#include <inttypes.h>
#include <math.h>
#include "user/json.h"

void gs_json__init(struct gs_json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->has_items[0] = false;
}

void gs_json_write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

static void key_prefix(struct gs_json *j, const char *key)
{
	if (j->has_items[j->depth])
		fputc(',', j->f);
	j->has_items[j->depth] = true;
	if (key) {
		gs_json_write_string(j->f, key);
		fputc(':', j->f);
	}
}

static void open_scope(struct gs_json *j, const char *key, char c)
{
	key_prefix(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < GS_JSON_MAX_DEPTH)
		j->depth++;
	j->has_items[j->depth] = false;
}

static void close_scope(struct gs_json *j, char c)
{
	fputc(c, j->f);
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
	key_prefix(j, key);
	if (value)
		gs_json_write_string(j->f, value);
	else
		fputs("null", j->f);
}

void gs_json__u64(struct gs_json *j, const char *key, uint64_t value)
{
	key_prefix(j, key);
	fprintf(j->f, "%" PRIu64, value);
}

void gs_json__i64(struct gs_json *j, const char *key, int64_t value)
{
	key_prefix(j, key);
	fprintf(j->f, "%" PRId64, value);
}

void gs_json__double(struct gs_json *j, const char *key, double value)
{
	key_prefix(j, key);
	if (isfinite(value))
		fprintf(j->f, "%.6f", value);
	else
		fputs("null", j->f);
}

void gs_json__bool(struct gs_json *j, const char *key, bool value)
{
	key_prefix(j, key);
	fputs(value ? "true" : "false", j->f);
}

void gs_json__raw(struct gs_json *j, const char *key, const char *text)
{
	key_prefix(j, key);
	fputs(text, j->f);
}
