// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* pickle_writer.c: Python pickle protocol 2, data opcodes only, strings always length-prefixed. */
#include <errno.h>
#include <string.h>
#include "user/pickle_writer.h"

/* opcodes of Lib/pickle.py (protocol 2 and below) */
#define OP_PROTO       0x80
#define OP_STOP	       '.'
#define OP_NONE	       'N'
#define OP_NEWTRUE     0x88
#define OP_NEWFALSE    0x89
#define OP_BININT      'J'
#define OP_BININT1     'K'
#define OP_BININT2     'M'
#define OP_LONG1       0x8a
#define OP_BINUNICODE  'X'
#define OP_EMPTY_DICT  '}'
#define OP_EMPTY_LIST  ']'
#define OP_MARK	       '('
#define OP_SETITEMS    'u'
#define OP_APPENDS     'e'
#define OP_TUPLE2      0x86
#define OP_BINPUT      'q'
#define OP_LONG_BINPUT 'r'
#define OP_BINGET      'h'
#define OP_LONG_BINGET 'j'

static const char REPLACEMENT[3] = { (char)0xef, (char)0xbf, (char)0xbd }; /* U+FFFD */

static void put(struct gs_pickle *p, const void *buf, size_t len)
{
	if (p->err || !len)
		return;
	if (fwrite(buf, 1, len, p->f) != len)
		p->err = errno ? -errno : -EIO;
}

static void op(struct gs_pickle *p, uint8_t code)
{
	put(p, &code, 1);
}

static void le32(struct gs_pickle *p, uint8_t code, uint32_t v)
{
	uint8_t b[5] = { code, v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24 };

	put(p, b, sizeof(b));
}

void gs_pickle__begin(struct gs_pickle *p, FILE *f)
{
	uint8_t proto[2] = { OP_PROTO, 2 };

	memset(p, 0, sizeof(*p));
	p->f = f;
	put(p, proto, sizeof(proto));
}

int gs_pickle__end(struct gs_pickle *p)
{
	op(p, OP_STOP);
	if (!p->err && fflush(p->f))
		p->err = errno ? -errno : -EIO;
	return p->err;
}

void gs_pickle__none(struct gs_pickle *p)
{
	op(p, OP_NONE);
}

void gs_pickle__bool(struct gs_pickle *p, bool v)
{
	op(p, v ? OP_NEWTRUE : OP_NEWFALSE);
}

/* LONG1: n little-endian bytes of two's complement, the fewest that keep the sign */
static void long1(struct gs_pickle *p, const uint8_t *le, size_t n)
{
	uint8_t hdr[2] = { OP_LONG1, (uint8_t)n };

	put(p, hdr, sizeof(hdr));
	put(p, le, n);
}

void gs_pickle__uint(struct gs_pickle *p, uint64_t v)
{
	uint8_t b[9];
	size_t n = 0;

	if (v <= 0x7fffffff) {
		gs_pickle__int(p, (int64_t)v);
		return;
	}
	for (uint64_t x = v; x; x >>= 8)
		b[n++] = x & 0xff;
	if (b[n - 1] & 0x80)
		b[n++] = 0; /* positive: a clear sign bit on top */
	long1(p, b, n);
}

void gs_pickle__int(struct gs_pickle *p, int64_t v)
{
	uint8_t b[8];
	size_t n = 8;

	if (v >= 0 && v <= 0xff) {
		uint8_t s[2] = { OP_BININT1, (uint8_t)v };

		put(p, s, sizeof(s));
	} else if (v >= 0 && v <= 0xffff) {
		uint8_t s[3] = { OP_BININT2, v & 0xff, (uint8_t)(v >> 8) };

		put(p, s, sizeof(s));
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		le32(p, OP_BININT, (uint32_t)(int32_t)v);
	} else if (v > 0) {
		gs_pickle__uint(p, (uint64_t)v);
	} else {
		for (size_t i = 0; i < 8; i++)
			b[i] = ((uint64_t)v >> (8 * i)) & 0xff;
		/* drop 0xff bytes the next one's sign bit repeats */
		while (n > 1 && b[n - 1] == 0xff && (b[n - 2] & 0x80))
			n--;
		long1(p, b, n);
	}
}

/*
 * Bytes of the valid UTF-8 sequence at s[0] (len > 0), 0 when it is not one: the ranges of
 * RFC 3629's table, so overlong forms, surrogates and code points past U+10FFFF are invalid.
 */
static size_t utf8_seq(const uint8_t *s, size_t len)
{
	uint8_t c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0; /* overlong */
	else if (c == 0xed)
		hi = 0x9f; /* surrogates */
	else if (c == 0xf0)
		lo = 0x90; /* overlong */
	else if (c == 0xf4)
		hi = 0x8f; /* past U+10FFFF */
	if (len < n || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

size_t gs_utf8_valid_len(const char *s, size_t len)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t out = 0;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(u + i, len - i);

		out += n ? n : sizeof(REPLACEMENT);
		i += n ? n : 1;
	}
	return out;
}

/* how much of s to encode: all of it, or up to a character boundary under the cap */
static size_t capped(const char *s, size_t len)
{
	size_t i = 0, out = 0;

	while (i < len) {
		size_t n = utf8_seq((const uint8_t *)s + i, len - i);
		size_t w = n ? n : sizeof(REPLACEMENT);

		if (out + w > GS_PICKLE_MAX_STR)
			break;
		out += w;
		i += n ? n : 1;
	}
	return i;
}

void gs_pickle__str(struct gs_pickle *p, const char *s, size_t len)
{
	const uint8_t *u = (const uint8_t *)s;
	size_t run = 0, i = 0;

	len = s ? capped(s, len) : 0;
	le32(p, OP_BINUNICODE, (uint32_t)(s ? gs_utf8_valid_len(s, len) : 0));
	/* valid runs are copied whole; each invalid byte becomes U+FFFD */
	while (i < len) {
		size_t n = utf8_seq(u + i, len - i);

		if (n) {
			i += n;
			continue;
		}
		put(p, s + run, i - run);
		put(p, REPLACEMENT, sizeof(REPLACEMENT));
		run = ++i;
	}
	put(p, s ? s + run : NULL, len - run);
}

void gs_pickle__cstr(struct gs_pickle *p, const char *s)
{
	gs_pickle__str(p, s ? s : "", s ? strlen(s) : 0);
}

void gs_pickle__key(struct gs_pickle *p, const char *key)
{
	size_t i;

	for (i = 0; i < p->nr_keys; i++)
		if (p->keys[i] == key || !strcmp(p->keys[i], key))
			break;
	if (i < p->nr_keys) {
		gs_pickle__get(p, p->key_memo[i]);
		return;
	}
	gs_pickle__cstr(p, key);
	if (p->nr_keys < sizeof(p->keys) / sizeof(p->keys[0])) {
		p->keys[p->nr_keys] = key;
		p->key_memo[p->nr_keys++] = gs_pickle__put(p);
	}
}

void gs_pickle__dict_begin(struct gs_pickle *p)
{
	uint8_t b[2] = { OP_EMPTY_DICT, OP_MARK };

	put(p, b, sizeof(b));
}

void gs_pickle__dict_end(struct gs_pickle *p)
{
	op(p, OP_SETITEMS);
}

void gs_pickle__list_begin(struct gs_pickle *p)
{
	uint8_t b[2] = { OP_EMPTY_LIST, OP_MARK };

	put(p, b, sizeof(b));
}

void gs_pickle__list_end(struct gs_pickle *p)
{
	op(p, OP_APPENDS);
}

void gs_pickle__tuple2(struct gs_pickle *p)
{
	op(p, OP_TUPLE2);
}

uint32_t gs_pickle__put(struct gs_pickle *p)
{
	uint32_t idx = p->next_memo++;

	if (idx <= 0xff) {
		uint8_t b[2] = { OP_BINPUT, (uint8_t)idx };

		put(p, b, sizeof(b));
	} else {
		le32(p, OP_LONG_BINPUT, idx);
	}
	return idx;
}

void gs_pickle__get(struct gs_pickle *p, uint32_t idx)
{
	if (idx <= 0xff) {
		uint8_t b[2] = { OP_BINGET, (uint8_t)idx };

		put(p, b, sizeof(b));
	} else {
		le32(p, OP_LONG_BINGET, idx);
	}
}
