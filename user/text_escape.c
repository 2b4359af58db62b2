// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* text_escape.c: UTF-8 validation and the escaping of process-chosen text for each output. */
#include <string.h>
#include "user/text_escape.h"

static const char hex[] = "0123456789abcdef";

size_t gs_utf8_decode(const char *s, size_t n, int32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need;
	int32_t v;

	if (p[0] < 0x80) {
		*cp = p[0];
		return 1;
	}
	/* explicit ranges (Unicode table 3-7): no overlong form, surrogate or > U+10FFFF */
	if (p[0] < 0xc2) {
		/* a stray continuation byte, or C0/C1, which only start overlong forms */
		*cp = -1;
		return 1;
	} else if (p[0] < 0xe0) {
		need = 1;
		v = p[0] & 0x1f;
	} else if (p[0] < 0xf0) {
		need = 2;
		v = p[0] & 0x0f;
		if (p[0] == 0xe0)
			lo = 0xa0; /* below: overlong */
		else if (p[0] == 0xed)
			hi = 0x9f; /* above: UTF-16 surrogates */
	} else if (p[0] < 0xf5) {
		need = 3;
		v = p[0] & 0x07;
		if (p[0] == 0xf0)
			lo = 0x90; /* below: overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f; /* above: beyond U+10FFFF */
	} else {
		*cp = -1;
		return 1;
	}
	for (size_t k = 1; k <= need; k++) {
		/* the ill-formed part ends before the first byte that cannot continue it */
		if (k >= n || p[k] < lo || p[k] > hi) {
			*cp = -1;
			return k;
		}
		v = v << 6 | (p[k] & 0x3f);
		lo = 0x80;
		hi = 0xbf;
	}
	*cp = v;
	return need + 1;
}

bool gs_utf8_is_valid(const char *s, size_t n)
{
	while (n) {
		int32_t cp;
		size_t len = gs_utf8_decode(s, n, &cp);

		if (cp < 0)
			return false;
		s += len;
		n -= len;
	}
	return true;
}

/* C0 controls, DEL and C1 controls: what a terminal may act on rather than show */
static bool is_control(int32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp < 0xa0);
}

size_t gs_json_plain_run(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = (unsigned char)s[i];
		int32_t cp;
		size_t len;

		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
				break;
			i++;
			continue;
		}
		len = gs_utf8_decode(s + i, n - i, &cp);
		if (cp < 0 || is_control(cp))
			break;
		i += len;
	}
	return i;
}

static size_t u00xx(char *out, unsigned int c)
{
	memcpy(out, "\\u00", 4);
	out[4] = hex[c >> 4 & 15];
	out[5] = hex[c & 15];
	return 6;
}

size_t gs_json_escape_char(const char *s, size_t n, char *out, size_t *used)
{
	unsigned char c = (unsigned char)s[0];
	int32_t cp;
	size_t len;

	*used = 1;
	switch (c) {
	case '"':
		memcpy(out, "\\\"", 2);
		return 2;
	case '\\':
		memcpy(out, "\\\\", 2);
		return 2;
	case '\n':
		memcpy(out, "\\n", 2);
		return 2;
	case '\t':
		memcpy(out, "\\t", 2);
		return 2;
	case '\r':
		memcpy(out, "\\r", 2);
		return 2;
	}
	if (c < 0x80) {
		if (c < 0x20 || c == 0x7f)
			return u00xx(out, c);
		out[0] = (char)c;
		return 1;
	}
	len = gs_utf8_decode(s, n, &cp);
	*used = len;
	if (cp < 0) {
		memcpy(out, "\\ufffd", 6);
		return 6;
	}
	if (is_control(cp))
		return u00xx(out, (unsigned int)cp);
	memcpy(out, s, len);
	return len;
}

void gs_prom_write_label_value(FILE *f, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		unsigned char c = (unsigned char)*s;
		int32_t cp;
		size_t len = gs_utf8_decode(s, n, &cp);

		if (c == '\\')
			fputs("\\\\", f);
		else if (c == '"')
			fputs("\\\"", f);
		else if (c == '\n')
			fputs("\\n", f);
		else if (cp < 0)
			fputs("\xef\xbf\xbd", f); /* U+FFFD: the exposition must be UTF-8 */
		else if (is_control(cp))
			for (size_t k = 0; k < len; k++) /* the text \xNN, its backslash escaped */
				fprintf(f, "\\\\x%02x", (unsigned char)s[k]);
		else
			fwrite(s, 1, len, f);
		s += len;
		n -= len;
	}
}

/* The terminal spelling of the character at s[0..n) into out (at most 12 bytes). */
static size_t text_piece(const char *s, size_t n, char *out, size_t *used)
{
	int32_t cp;
	size_t len = gs_utf8_decode(s, n, &cp), o = 0;

	*used = len;
	if (cp >= 0 && !is_control(cp)) {
		memcpy(out, s, len);
		return len;
	}
	for (size_t k = 0; k < len; k++) {
		unsigned char c = (unsigned char)s[k];

		out[o++] = '\\';
		out[o++] = 'x';
		out[o++] = hex[c >> 4];
		out[o++] = hex[c & 15];
	}
	return o;
}

const char *gs_text_safe(const char *s, char *buf, size_t len)
{
	size_t n = strlen(s), o = 0;

	if (!len)
		return buf;
	while (n) {
		char piece[16];
		size_t used, plen = text_piece(s, n, piece, &used);

		if (plen >= len - o)
			break;
		memcpy(buf + o, piece, plen);
		o += plen;
		s += used;
		n -= used;
	}
	buf[o] = '\0';
	return buf;
}

void gs_text_write(FILE *f, const char *s)
{
	size_t n = strlen(s);

	while (n) {
		char piece[16];
		size_t used, plen = text_piece(s, n, piece, &used);

		fwrite(piece, 1, plen, f);
		s += used;
		n -= used;
	}
}
