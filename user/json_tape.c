// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* json_tape.c: gs_json's tokens written as typed binary (json_tape.h has the layout). */
#include <string.h>
#include "user/json_tape.h"
#include "user/text_escape.h"

/* A token assembled here and written in one call: stdio's per-call cost beats the copy. */
struct token {
	FILE *f;
	size_t n;
	char b[256];
};

/* out()'s slow path: the buffer is full, or p is larger than it. */
static void __attribute__((noinline)) out_flush(struct token *t, const void *p, size_t n)
{
	fwrite_unlocked(t->b, 1, t->n, t->f);
	t->n = 0;
	if (n > sizeof(t->b)) {
		fwrite_unlocked(p, 1, n, t->f);
		return;
	}
	memcpy(t->b, p, n);
	t->n = n;
}

/* Inlined: a row is some eighty of these, and a call each was a tenth of record's time. */
static inline __attribute__((always_inline)) void out(struct token *t, const void *p, size_t n)
{
	if (t->n + n > sizeof(t->b)) {
		out_flush(t, p, n);
		return;
	}
	memcpy(t->b + t->n, p, n);
	t->n += n;
}

/* No initializer: zeroing the buffer for every token cost more than writing it. */
static void token_init(struct token *t, FILE *f)
{
	t->f = f;
	t->n = 0;
}

static void done(struct token *t)
{
	fwrite_unlocked(t->b, 1, t->n, t->f);
}

static bool ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

/*
 * s[0..n) as a JSON reader gets it back from gs_json (each ill-formed UTF-8 part as U+FFFD)
 * into t when t is not NULL; returns the length that takes.
 */
static size_t sanitized(struct token *t, const char *s, size_t n)
{
	size_t total = 0;

	while (n) {
		int32_t cp = 0;
		size_t len = (unsigned char)*s < 0x80 ? 1 : gs_utf8_decode(s, n < 4 ? n : 4, &cp);
		bool bad = cp < 0;

		if (t)
			out(t, bad ? "\xef\xbf\xbd" : s, bad ? 3 : len);
		total += bad ? 3 : len;
		s += len;
		n -= len;
	}
	return total;
}

/* s[0..n) with its length first (u16 for keys, else u32) and a NUL after. */
static void put_text(struct token *t, const char *s, size_t n, bool key)
{
	bool plain = ascii(s, n) || gs_utf8_is_valid(s, n);
	size_t len = plain ? n : sanitized(NULL, s, n);
	uint16_t len16 = (uint16_t)len;
	uint32_t len32 = (uint32_t)len;

	if (key)
		out(t, &len16, sizeof(len16));
	else
		out(t, &len32, sizeof(len32));
	if (plain)
		out(t, s, n);
	else
		sanitized(t, s, n);
	out(t, "", 1);
}

/* The token's type and key: keys longer than a token holds are cut. */
static void head(struct token *t, enum gs_tape_type type, const char *key)
{
	uint16_t none = GS_TAPE_NO_KEY;
	char c = (char)type;

	out(t, &c, 1);
	if (type == GS_TAPE_END)
		return;
	if (key)
		put_text(t, key, strnlen(key, GS_TAPE_MAX_KEY / 3), true);
	else
		out(t, &none, sizeof(none));
}

void gs_tape_put(FILE *f, enum gs_tape_type type, const char *key)
{
	struct token t;

	token_init(&t, f);
	head(&t, type, key);
	done(&t);
}

void gs_tape_put_text(FILE *f, enum gs_tape_type type, const char *key, const char *text)
{
	struct token t;
	size_t n = strlen(text);

	token_init(&t, f);
	if (n > UINT32_MAX / 4)
		n = 0; /* no row has such a value; an empty one rather than a cut character */
	head(&t, type, key);
	if (type == GS_TAPE_STRING) {
		put_text(&t, text, n, false);
	} else { /* JSON text, ASCII as gs_json's callers write it */
		uint32_t len = (uint32_t)n;

		out(&t, &len, sizeof(len));
		out(&t, text, n);
		out(&t, "", 1);
	}
	done(&t);
}

void gs_tape_put_int(FILE *f, enum gs_tape_type type, const char *key, uint64_t value)
{
	struct token t;

	token_init(&t, f);
	head(&t, type, key);
	out(&t, &value, sizeof(value));
	done(&t);
}
