// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_lines.c: decoders of CPython's three line-table formats (Objects/lnotab_notes.txt). */
#include <limits.h>
#include <stdbool.h>
#include "user/python_lines.h"

#define NO_LINE_310 (-128)

/* 3.8, 3.9: (address increment, signed line increment) byte pairs */
static int lnotab_line(const uint8_t *tab, size_t len, int line, int64_t addr)
{
	int64_t start = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		start += tab[i];
		if (start > addr)
			break;
		line += (int8_t)tab[i + 1];
	}
	return line;
}

/* 3.10: each pair ends a range [start, start + delta) of the line so far plus its delta */
static int linetable_line(const uint8_t *tab, size_t len, int line, int64_t addr)
{
	int64_t start = 0;

	for (size_t i = 0; i + 1 < len; i += 2) {
		int64_t end = start + tab[i];
		int8_t delta = (int8_t)tab[i + 1];
		int cur = -1;

		if (delta != NO_LINE_310) {
			line += delta;
			cur = line;
		}
		if (addr >= start && addr < end)
			return cur;
		start = end;
	}
	return -1;
}

/* A varint of 6-bit chunks, 0x40 marking that another follows; false past the end. */
static bool read_varint(const uint8_t *tab, size_t len, size_t *pos, uint32_t *out)
{
	uint32_t val = 0;
	unsigned int shift = 0;
	uint8_t b;

	do {
		if (*pos >= len || shift > 30)
			return false;
		b = tab[(*pos)++];
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	*out = val;
	return true;
}

static bool read_signed_varint(const uint8_t *tab, size_t len, size_t *pos, int *out)
{
	uint32_t v;

	if (!read_varint(tab, len, pos, &v))
		return false;
	*out = v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
	return true;
}

/* The line delta of the entry whose first byte is at tab[*pos]; false if malformed. */
static bool location_delta(const uint8_t *tab, size_t len, size_t *pos, int code, int *delta)
{
	*delta = 0;
	if (code == 13 || code == 14) /* no columns / long form: the line delta comes first */
		return read_signed_varint(tab, len, pos, delta);
	if (code >= 10 && code <= 12) /* one line form: the line moves by 0..2 */
		*delta = code - 10;
	return true;
}

/* 3.11+: entries of (b & 7) + 1 code units, each starting with a byte that has bit 7 set */
static int locations_line(const uint8_t *tab, size_t len, int first, int64_t addr)
{
	int64_t start = 0, line = first;
	size_t pos = 0;

	while (pos < len) {
		uint8_t head = tab[pos++];
		int code = (head >> 3) & 15, delta;
		int64_t end = start + ((head & 7) + 1) * 2;

		if (!(head & 0x80) || !location_delta(tab, len, &pos, code, &delta))
			return -1;
		line += delta;
		if (line < INT_MIN || line > INT_MAX)
			return -1; /* no real table gets there: sums of hostile varints do */
		if (addr >= start && addr < end)
			return code == 15 ? -1 : (int)line;
		start = end;
		while (pos < len && !(tab[pos] & 0x80))
			pos++; /* columns and end line: not needed for the line */
	}
	return -1;
}

int gs_py_addr2line(enum gs_py_line_format fmt, const uint8_t *tab, size_t len, int firstlineno,
		    int64_t addr)
{
	if (addr < 0)
		return firstlineno;
	switch (fmt) {
	case GS_PY_LINES_LNOTAB:
		return lnotab_line(tab, len, firstlineno, addr);
	case GS_PY_LINES_LINETABLE:
		return linetable_line(tab, len, firstlineno, addr);
	case GS_PY_LINES_LOCATIONS:
		return locations_line(tab, len, firstlineno, addr);
	}
	return -1;
}
