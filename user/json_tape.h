/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* json_tape.h: gs_json's values as typed binary tokens, read back without parsing text. */
#ifndef GS_JSON_TAPE_H
#define GS_JSON_TAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * A gs_json with tape set writes each value as a token instead of JSON text: the same
 * structured row, typed, for an encoder that is not JSON (perfetto_trace.c) to read with
 * no parse. A token is its type (one byte), its key (GS_TAPE_NO_KEY or u16 length, bytes,
 * NUL), then its payload: strings, raw JSON and doubles' text as u32 length, bytes, NUL;
 * integers as 8 bytes. Strings are as JSON would read back: ill-formed UTF-8 becomes
 * U+FFFD. A tape lives in one process (native byte order) and starts with a GS_TAPE_OBJECT
 * or GS_TAPE_ARRAY byte, never '{' or whitespace, so a reader tells it from text.
 */
enum gs_tape_type {
	GS_TAPE_OBJECT = 1,
	GS_TAPE_ARRAY,
	GS_TAPE_END, /* of the innermost object or array */
	GS_TAPE_STRING,
	GS_TAPE_NULL,
	GS_TAPE_U64,
	GS_TAPE_I64,
	GS_TAPE_DOUBLE, /* its JSON text */
	GS_TAPE_TRUE,
	GS_TAPE_FALSE,
	GS_TAPE_RAW, /* JSON text the caller vouched for */
};

#define GS_TAPE_NO_KEY	0xffff
#define GS_TAPE_MAX_KEY 0xfffe

/* Whether buf (len bytes) is a tape rather than JSON text. */
static inline bool gs_tape_is(const char *buf, size_t len)
{
	return len && buf[0] >= GS_TAPE_OBJECT && buf[0] <= GS_TAPE_ARRAY;
}

/* The writer's side (user/json.c calls these when its tape flag is set). */
void gs_tape_put(FILE *f, enum gs_tape_type type, const char *key);
void gs_tape_put_text(FILE *f, enum gs_tape_type type, const char *key, const char *text);
void gs_tape_put_int(FILE *f, enum gs_tape_type type, const char *key, uint64_t value);

#endif /* GS_JSON_TAPE_H */
