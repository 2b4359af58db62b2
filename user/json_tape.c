// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* json_tape.c: gs_json's tokens written as typed binary (json_tape.h has the layout). */
#include <string.h>
#include "user/json_tape.h"
#include "user/text_escape.h"


/* s with each ill-formed UTF-8 part as U+FFFD, as a JSON reader gets it back from gs_json. */
static void put_sanitized(FILE *f, const char *s, size_t n)
{
	while (n) {
		int32_t cp;
		size_t len = (unsigned char)*s < 0x80 ? 1 : gs_utf8_decode(s, n < 4 ? n : 4, &cp);

		if ((unsigned char)*s >= 0x80 && cp < 0)
			fwrite_unlocked("\xef\xbf\xbd", 1, 3, f);
		else
			fwrite_unlocked(s, 1, len, f);
		s += len;
		n -= len;
	}
}

/* The length a sanitized s takes. */
static size_t sanitized_len(const char *s, size_t n)
{
	size_t out = 0;

	while (n) {
		int32_t cp;
		size_t len = (unsigned char)*s < 0x80 ? 1 : gs_utf8_decode(s, n < 4 ? n : 4, &cp);

		out += (unsigned char)*s >= 0x80 && cp < 0 ? 3 : len;
		s += len;
		n -= len;
	}
	return out;
}

static bool ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] >= 0x80)
			return false;
	return true;
}

/* A key's length (u16), bytes and NUL; keys longer than a token holds are cut. */
static void put_key(FILE *f, const char *key)
{
	uint16_t len = GS_TAPE_NO_KEY;
	size_t n;
	bool plain;

	if (!key) {
		fwrite_unlocked(&len, sizeof(len), 1, f);
		return;
	}
	n = strnlen(key, GS_TAPE_MAX_KEY / 3);
	plain = ascii(key, n) || gs_utf8_is_valid(key, n);
	len = (uint16_t)(plain ? n : sanitized_len(key, n));
	fwrite_unlocked(&len, sizeof(len), 1, f);
	if (plain)
		fwrite_unlocked(key, 1, n, f);
	else
		put_sanitized(f, key, n);
	putc_unlocked('\0', f);
}

void gs_tape_put(FILE *f, enum gs_tape_type type, const char *key)
{
	putc_unlocked((int)type, f);
	if (type != GS_TAPE_END)
		put_key(f, key);
}

void gs_tape_put_text(FILE *f, enum gs_tape_type type, const char *key, const char *text)
{
	size_t n = strlen(text);
	bool plain = type != GS_TAPE_STRING || ascii(text, n) || gs_utf8_is_valid(text, n);
	uint32_t len;

	if (n > UINT32_MAX / 4)
		n = 0; /* no row has such a value; an empty one rather than a cut character */
	len = (uint32_t)(plain ? n : sanitized_len(text, n));
	gs_tape_put(f, type, key);
	fwrite_unlocked(&len, sizeof(len), 1, f);
	if (plain)
		fwrite_unlocked(text, 1, n, f);
	else
		put_sanitized(f, text, n);
	putc_unlocked('\0', f);
}

void gs_tape_put_int(FILE *f, enum gs_tape_type type, const char *key, uint64_t value)
{
	gs_tape_put(f, type, key);
	fwrite_unlocked(&value, sizeof(value), 1, f);
}
