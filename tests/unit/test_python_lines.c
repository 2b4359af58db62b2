// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_python_lines.c: line tables decoded as CPython 3.8-3.15's own co_lines() reports them. */
#include <stdio.h>
#include <string.h>
#include "tests/unit/harness.h"
#include "user/python_lines.h"

#define LINES_DIR "tests/fixtures/python" /* written by gen_lines.py, one file per version */
#define MAX_TABLE 4096

struct code_case {
	enum gs_py_line_format fmt;
	int firstlineno;
	uint8_t table[MAX_TABLE];
	size_t len;
};

static bool parse_code(const char *line, struct code_case *c)
{
	char fmt[16], hex[2 * MAX_TABLE + 1];

	if (sscanf(line, "code %15s %d %8192s", fmt, &c->firstlineno, hex) != 3)
		return false;
	c->fmt = !strcmp(fmt, "lnotab")	     ? GS_PY_LINES_LNOTAB
		 : !strcmp(fmt, "linetable") ? GS_PY_LINES_LINETABLE
					     : GS_PY_LINES_LOCATIONS;
	c->len = 0;
	if (!strcmp(hex, "-"))
		return true;
	for (size_t i = 0; hex[2 * i] && hex[2 * i + 1] && c->len < MAX_TABLE; i++) {
		unsigned int b;

		if (sscanf(hex + 2 * i, "%2x", &b) != 1)
			return false;
		c->table[c->len++] = (uint8_t)b;
	}
	return true;
}

/* Every instruction of every code object in the file has CPython's line; returns the count. */
static int check_file(const char *version)
{
	static struct code_case c;
	char path[256], line[2 * MAX_TABLE + 64];
	int checked = 0, have_code = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/lines-%s.txt", LINES_DIR, version);
	f = fopen(path, "r");
	if (!GS_EXPECT(f))
		return 0;
	while (fgets(line, sizeof(line), f)) {
		long long off;
		int want;

		if (!strncmp(line, "code ", 5)) {
			have_code = GS_EXPECT(parse_code(line, &c));
			continue;
		}
		if (!have_code || (sscanf(line, "at %lld %d", &off, &want) != 2 &&
				   sscanf(line, "pos %lld %d", &off, &want) != 2))
			continue;
		if (!GS_EXPECT_EQ(gs_py_addr2line(c.fmt, c.table, c.len, c.firstlineno, off),
				  want)) {
			printf("  %s offset %lld\n", path, off);
			break;
		}
		checked++;
	}
	fclose(f);
	return checked;
}

GS_TEST(lnotab_3_8)
{
	GS_EXPECT(check_file("3.8") > 50);
}

GS_TEST(lnotab_3_9)
{
	GS_EXPECT(check_file("3.9") > 50);
}

GS_TEST(linetable_3_10)
{
	GS_EXPECT(check_file("3.10") > 50);
}

GS_TEST(locations_3_11)
{
	GS_EXPECT(check_file("3.11") > 100);
}

GS_TEST(locations_3_12)
{
	GS_EXPECT(check_file("3.12") > 100);
}

GS_TEST(locations_3_13)
{
	GS_EXPECT(check_file("3.13") > 100);
}

/* Debian unstable's python3.14 and python3.15 (the sid root, scripts/bundle/roots.sh) */
GS_TEST(locations_3_14)
{
	GS_EXPECT(check_file("3.14") > 100);
}

GS_TEST(locations_3_15)
{
	GS_EXPECT(check_file("3.15") > 100);
}

/* a frame not started yet (3.11+: prev_instr before the first unit) is at its first line */
GS_TEST(negative_offset_is_first_line)
{
	static const uint8_t tab[] = { 0x80 | (13 << 3), 0x02 };

	GS_EXPECT_EQ(gs_py_addr2line(GS_PY_LINES_LOCATIONS, tab, sizeof(tab), 7, -2), 7);
	GS_EXPECT_EQ(gs_py_addr2line(GS_PY_LINES_LOCATIONS, tab, sizeof(tab), 7, 0), 8);
}

/* hostile tables: a truncated varint, a byte without the entry bit, nothing at all */
GS_TEST(malformed_tables_have_no_line)
{
	static const uint8_t cut[] = { 0x80 | (14 << 3), 0x41 };
	static const uint8_t nohead[] = { 0x10, 0x20 };

	GS_EXPECT_EQ(gs_py_addr2line(GS_PY_LINES_LOCATIONS, cut, sizeof(cut), 1, 0), -1);
	GS_EXPECT_EQ(gs_py_addr2line(GS_PY_LINES_LOCATIONS, nohead, sizeof(nohead), 1, 0), -1);
	GS_EXPECT_EQ(gs_py_addr2line(GS_PY_LINES_LINETABLE, NULL, 0, 1, 0), -1);
	GS_EXPECT_EQ(gs_py_addr2line(GS_PY_LINES_LNOTAB, NULL, 0, 5, 100), 5);
}

GS_TEST_MAIN(lnotab_3_8, lnotab_3_9, linetable_3_10, locations_3_11, locations_3_12, locations_3_13,
	     locations_3_14, locations_3_15, negative_offset_is_first_line,
	     malformed_tables_have_no_line)
