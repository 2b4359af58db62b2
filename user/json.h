/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* json.h: a small streaming JSON writer (compact output, correct string escaping). */
#ifndef GS_JSON_H
#define GS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define GS_JSON_MAX_DEPTH 32

struct gs_json {
	FILE *f;
	int depth;
	bool tape; /* values go to f as typed tokens, not text (user/json_tape.h) */
	bool has_items[GS_JSON_MAX_DEPTH];
};

void gs_json__init(struct gs_json *j, FILE *f); /* text; set tape after for tokens */
/* key is NULL inside arrays and at the top level */
void gs_json__begin_object(struct gs_json *j, const char *key);
void gs_json__end_object(struct gs_json *j);
void gs_json__begin_array(struct gs_json *j, const char *key);
void gs_json__end_array(struct gs_json *j);
void gs_json__string(struct gs_json *j, const char *key, const char *value); /* NULL: null */
void gs_json__u64(struct gs_json *j, const char *key, uint64_t value);
void gs_json__i64(struct gs_json *j, const char *key, int64_t value);
void gs_json__double(struct gs_json *j, const char *key, double value);
void gs_json__bool(struct gs_json *j, const char *key, bool value);
/* Writes text as the value verbatim: the caller guarantees it is valid JSON. */
void gs_json__raw(struct gs_json *j, const char *key, const char *text);

/*
 * Writes s as a JSON string literal, quotes included, always valid UTF-8: ill-formed bytes
 * become \ufffd and control characters \u00XX (user/text_escape.h says exactly how).
 */
void gs_json_write_string(FILE *f, const char *s);

#endif /* GS_JSON_H */
