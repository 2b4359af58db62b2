// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_text_escape.c: UTF-8 decoding and the exact escapes for Prometheus labels and terminals. */
#include <stdint.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/log.h"
#include "user/text_escape.h"

/* what write(f, s) writes; a static buffer, valid until the next call */
static const char *written(void (*write)(FILE *f, const char *s), const char *s)
{
	static char out[256];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return "(open_memstream failed)";
	write(f, s);
	if (fclose(f) || len >= sizeof(out)) {
		free(buf);
		return "(write failed)";
	}
	memcpy(out, buf, len + 1);
	free(buf);
	return out;
}

/* s as a Prometheus label value */
static const char *prom_of(const char *s)
{
	return written(gs_prom_write_label_value, s);
}

/* s made safe for a terminal */
static const char *text_of(const char *s)
{
	return written(gs_text_write, s);
}

GS_TEST(decodes_and_measures_ill_formed_parts)
{
	int32_t cp;

	GS_EXPECT_EQ(gs_utf8_decode("A", 1, &cp), 1);
	GS_EXPECT_EQ(cp, 'A');
	GS_EXPECT_EQ(gs_utf8_decode("\xc3\xa9", 2, &cp), 2);
	GS_EXPECT_EQ(cp, 0xe9);
	GS_EXPECT_EQ(gs_utf8_decode("\xe2\x82\xac", 3, &cp), 3);
	GS_EXPECT_EQ(cp, 0x20ac);
	GS_EXPECT_EQ(gs_utf8_decode("\xf4\x8f\xbf\xbf", 4, &cp), 4);
	GS_EXPECT_EQ(cp, 0x10ffff);
	/* n bounds the read: a sequence cut by n is truncated, whatever follows in memory */
	GS_EXPECT_EQ(gs_utf8_decode("\xe2\x82\xac", 2, &cp), 2);
	GS_EXPECT_EQ(cp, -1);
	GS_EXPECT_EQ(gs_utf8_decode("\xf0\x9d\x84\x9e", 1, &cp), 1);
	GS_EXPECT_EQ(cp, -1);
	/* the NUL of a C string ends the part: nothing past it is read */
	GS_EXPECT_EQ(gs_utf8_decode("\xf0\x9d", 4, &cp), 2);
	GS_EXPECT_EQ(cp, -1);
	GS_EXPECT_EQ(gs_utf8_decode("\xed\xa0\x80", 3, &cp), 1); /* surrogate: E0 alone */
	GS_EXPECT_EQ(cp, -1);
	GS_EXPECT_EQ(gs_utf8_decode("\xf4\x90\x80\x80", 4, &cp), 1);
	GS_EXPECT_EQ(gs_utf8_decode("\xff", 1, &cp), 1);
	GS_EXPECT_EQ(cp, -1);
	GS_EXPECT(gs_utf8_is_valid("caf\xc3\xa9 \xf0\x9d\x84\x9e", 10));
	GS_EXPECT(!gs_utf8_is_valid("caf\xc3", 4));
	GS_EXPECT(!gs_utf8_is_valid("\xc0\x80", 2)); /* the overlong NUL */
	GS_EXPECT(gs_utf8_is_valid("", 0));
}

/* The exposition format's three escapes, U+FFFD for ill-formed bytes, other controls as text. */
GS_TEST(prometheus_label_values)
{
	GS_EXPECT_STR_EQ(prom_of("python3"), "python3");
	GS_EXPECT_STR_EQ(prom_of("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
	GS_EXPECT_STR_EQ(prom_of("caf\xc3\xa9"), "caf\xc3\xa9");
	GS_EXPECT_STR_EQ(prom_of("\xff\xfe"), "\xef\xbf\xbd\xef\xbf\xbd");
	GS_EXPECT_STR_EQ(prom_of("x\xe2\x82"), "x\xef\xbf\xbd");
	GS_EXPECT_STR_EQ(prom_of("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	/* ESC, tab, DEL and a C1 control: the text \xNN, with its backslash escaped */
	GS_EXPECT_STR_EQ(prom_of("\x1b[2J\t\x7f\xc2\x9b"),
			 "\\\\x1b[2J\\\\x09\\\\x7f\\\\xc2\\\\x9b");
	GS_EXPECT_STR_EQ(prom_of("gs\xff\xfe\n\x1b[31m"),
			 "gs\xef\xbf\xbd\xef\xbf\xbd\\n\\\\x1b[31m");
}

GS_TEST(terminal_text)
{
	GS_EXPECT_STR_EQ(text_of("python3 train.py"), "python3 train.py");
	GS_EXPECT_STR_EQ(text_of("caf\xc3\xa9 \xe2\x82\xac"), "caf\xc3\xa9 \xe2\x82\xac");
	GS_EXPECT_STR_EQ(text_of("\x1b]0;pwned\x07\x1b[2J"), "\\x1b]0;pwned\\x07\\x1b[2J");
	GS_EXPECT_STR_EQ(text_of("a\nb\tc\rd\x7f"), "a\\x0ab\\x09c\\x0dd\\x7f");
	/* C1 CSI, which some terminals act on like ESC [ */
	GS_EXPECT_STR_EQ(text_of("\xc2\x9b"
				 "2J"),
			 "\\xc2\\x9b2J");
	/* every byte of an ill-formed part, so the bytes can be read back */
	GS_EXPECT_STR_EQ(text_of("\xff\xfe"), "\\xff\\xfe");
	GS_EXPECT_STR_EQ(text_of("\xe2\x82"
				 "A"),
			 "\\xe2\\x82A");
	GS_EXPECT_STR_EQ(text_of("\x9b"), "\\x9b");
	GS_EXPECT_STR_EQ(text_of("gs\xff\xfe\n\x1b[31m"), "gs\\xff\\xfe\\x0a\\x1b[31m");
}

/* The buffer variant cuts before an escape or a character that does not fit, never inside. */
GS_TEST(terminal_text_into_a_buffer)
{
	char buf[GS_TEXT_SAFE_LEN(16)];

	GS_EXPECT_STR_EQ(gs_text_safe("gs\x1b[31m", buf, sizeof(buf)), "gs\\x1b[31m");
	GS_EXPECT_STR_EQ(gs_text_safe("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
				      "\xff\xff",
				      buf, sizeof(buf)),
			 "\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff"
			 "\\xff\\xff");
	GS_EXPECT_STR_EQ(gs_text_safe("ab\x1b", buf, 6), "ab");
	GS_EXPECT_STR_EQ(gs_text_safe("ab\x1b", buf, 7), "ab\\x1b");
	GS_EXPECT_STR_EQ(gs_text_safe("a\xe2\x82\xac", buf, 4), "a");
	GS_EXPECT_STR_EQ(gs_text_safe("a\xe2\x82\xac", buf, 5), "a\xe2\x82\xac");
	GS_EXPECT_STR_EQ(gs_text_safe("abc", buf, 1), "");
}

/* Diagnostics name other users' comms and paths: stderr gets them escaped too. */
GS_TEST(log_lines_are_escaped)
{
	FILE *tmp = tmpfile();
	char line[256] = "";
	int saved = dup(2);

	if (!GS_EXPECT(tmp && saved >= 0))
		return;
	fflush(stderr);
	dup2(fileno(tmp), 2);
	gs_warn("pid %d (%s): no CUDA library", 7, "gs\xff\n\x1b[2J");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	if (!fgets(line, sizeof(line), tmp))
		line[0] = '\0';
	fclose(tmp);
	GS_EXPECT_STR_EQ(line,
			 "gpusnoop: warning: pid 7 (gs\\xff\\x0a\\x1b[2J): no CUDA library\n");
}

GS_TEST_MAIN(decodes_and_measures_ill_formed_parts, prometheus_label_values, terminal_text,
	     terminal_text_into_a_buffer, log_lines_are_escaped)
