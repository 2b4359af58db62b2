// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_json.c: the JSON writer's exact compact output, string escapes included. */
#include <math.h>
#include <stdint.h>
#include "tests/unit/harness.h"
#include "user/json.h"

struct capture {
	FILE *f;
	char *buf;
	size_t len;
	struct gs_json j;
};

static bool capture_open(struct capture *c)
{
	c->buf = NULL;
	c->len = 0;
	c->f = open_memstream(&c->buf, &c->len);
	if (c->f)
		gs_json__init(&c->j, c->f);
	return c->f != NULL;
}

/* Closes the stream; the text stays in c->buf for the caller to free. */
static const char *capture_close(struct capture *c)
{
	if (fclose(c->f))
		return NULL;
	return c->buf;
}

GS_TEST(nested_document)
{
	struct capture c;

	if (!GS_EXPECT(capture_open(&c)))
		return;
	gs_json__begin_object(&c.j, NULL);
	gs_json__string(&c.j, "name", "gs_leaky");
	gs_json__u64(&c.j, "max", UINT64_MAX);
	gs_json__i64(&c.j, "neg", -42);
	gs_json__i64(&c.j, "min", INT64_MIN);
	gs_json__u64(&c.j, "zero", 0);
	gs_json__double(&c.j, "ratio", 1.5);
	gs_json__double(&c.j, "neg_ratio", -0.25);
	gs_json__bool(&c.j, "yes", true);
	gs_json__bool(&c.j, "no", false);
	gs_json__string(&c.j, "none", NULL);
	gs_json__begin_array(&c.j, "allocs");
	gs_json__begin_object(&c.j, NULL);
	gs_json__u64(&c.j, "size", 1048576);
	gs_json__begin_array(&c.j, "frames");
	gs_json__string(&c.j, NULL, "leak_weights");
	gs_json__string(&c.j, NULL, "main");
	gs_json__end_array(&c.j);
	gs_json__end_object(&c.j);
	gs_json__begin_object(&c.j, NULL);
	gs_json__end_object(&c.j);
	gs_json__u64(&c.j, NULL, 7);
	gs_json__string(&c.j, NULL, NULL);
	gs_json__begin_array(&c.j, NULL);
	gs_json__end_array(&c.j);
	gs_json__end_array(&c.j);
	gs_json__begin_object(&c.j, "empty");
	gs_json__end_object(&c.j);
	gs_json__end_object(&c.j);
	GS_EXPECT_STR_EQ(capture_close(&c),
			 "{\"name\":\"gs_leaky\",\"max\":18446744073709551615,\"neg\":-42,"
			 "\"min\":-9223372036854775808,\"zero\":0,\"ratio\":1.500000,"
			 "\"neg_ratio\":-0.250000,\"yes\":true,\"no\":false,\"none\":null,"
			 "\"allocs\":[{\"size\":1048576,\"frames\":[\"leak_weights\",\"main\"]},"
			 "{},7,null,[]],\"empty\":{}}");
	free(c.buf);
}

GS_TEST(string_escapes)
{
	struct capture c;

	if (!GS_EXPECT(capture_open(&c)))
		return;
	gs_json__begin_array(&c.j, NULL);
	gs_json__string(&c.j, NULL, "say \"hi\"");
	gs_json__string(&c.j, NULL, "C:\\dir\\");
	gs_json__string(&c.j, NULL, "a\nb\tc\rd");
	/* DEL too: valid JSON raw, but the output may be read on a terminal */
	gs_json__string(&c.j, NULL, "\x01\x1f\x7f");
	/* UTF-8 is passed through byte for byte */
	gs_json__string(&c.j, NULL, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x94\xa5");
	gs_json__string(&c.j, NULL, "");
	gs_json__end_array(&c.j);
	GS_EXPECT_STR_EQ(capture_close(&c), "[\"say \\\"hi\\\"\",\"C:\\\\dir\\\\\","
					    "\"a\\nb\\tc\\rd\",\"\\u0001\\u001f\\u007f\","
					    "\"h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x94\xa5\",\"\"]");
	free(c.buf);
}

GS_TEST(escaped_keys)
{
	struct capture c;

	if (!GS_EXPECT(capture_open(&c)))
		return;
	gs_json__begin_object(&c.j, NULL);
	gs_json__u64(&c.j, "a\"b", 1);
	gs_json__begin_array(&c.j, "new\nline");
	gs_json__end_array(&c.j);
	gs_json__end_object(&c.j);
	GS_EXPECT_STR_EQ(capture_close(&c), "{\"a\\\"b\":1,\"new\\nline\":[]}");
	free(c.buf);
}

GS_TEST(non_finite_doubles)
{
	struct capture c;

	if (!GS_EXPECT(capture_open(&c)))
		return;
	gs_json__begin_array(&c.j, NULL);
	gs_json__double(&c.j, NULL, NAN);
	gs_json__double(&c.j, NULL, INFINITY);
	gs_json__double(&c.j, NULL, -INFINITY);
	gs_json__double(&c.j, NULL, 0.0);
	gs_json__end_array(&c.j);
	GS_EXPECT_STR_EQ(capture_close(&c), "[null,null,null,0.000000]");
	free(c.buf);
}

GS_TEST(write_string)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!GS_EXPECT(f))
		return;
	gs_json_write_string(f, "tab\there \"q\" \\ \x02");
	GS_EXPECT_EQ(fclose(f), 0);
	GS_EXPECT_STR_EQ(buf, "\"tab\\there \\\"q\\\" \\\\ \\u0002\"");
	free(buf);
}

/* s through gs_json_write_string, the quotes stripped; a static buffer, valid until the next call */
static const char *json_of(const char *s)
{
	static char out[256];
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return "(open_memstream failed)";
	gs_json_write_string(f, s);
	if (fclose(f) || len < 2 || len - 2 >= sizeof(out)) {
		free(buf);
		return "(write failed)";
	}
	memcpy(out, buf + 1, len - 2);
	out[len - 2] = '\0';
	free(buf);
	return out;
}

/* Well-formed UTF-8 of every length passes through byte for byte. */
GS_TEST(write_string_keeps_valid_utf8)
{
	GS_EXPECT_STR_EQ(json_of("caf\xc3\xa9"), "caf\xc3\xa9");	     /* U+00E9 */
	GS_EXPECT_STR_EQ(json_of("\xc2\xa0"), "\xc2\xa0");		     /* U+00A0 */
	GS_EXPECT_STR_EQ(json_of("\xdf\xbf"), "\xdf\xbf");		     /* U+07FF */
	GS_EXPECT_STR_EQ(json_of("\xe0\xa0\x80"), "\xe0\xa0\x80");	     /* U+0800 */
	GS_EXPECT_STR_EQ(json_of("5 \xe2\x82\xac"), "5 \xe2\x82\xac");	     /* U+20AC */
	GS_EXPECT_STR_EQ(json_of("\xed\x9f\xbf"), "\xed\x9f\xbf");	     /* U+D7FF */
	GS_EXPECT_STR_EQ(json_of("\xee\x80\x80"), "\xee\x80\x80");	     /* U+E000 */
	GS_EXPECT_STR_EQ(json_of("\xef\xbf\xbf"), "\xef\xbf\xbf");	     /* U+FFFF */
	GS_EXPECT_STR_EQ(json_of("\xf0\x90\x80\x80"), "\xf0\x90\x80\x80");   /* U+10000 */
	GS_EXPECT_STR_EQ(json_of("\xf0\x9d\x84\x9e!"), "\xf0\x9d\x84\x9e!"); /* U+1D11E */
	GS_EXPECT_STR_EQ(json_of("\xf4\x8f\xbf\xbf"), "\xf4\x8f\xbf\xbf");   /* U+10FFFF */
	GS_EXPECT_STR_EQ(json_of("\xe6\x97\xa5\xe6\x9c\xac"), "\xe6\x97\xa5\xe6\x9c\xac");
}

/*
 * Every ill-formed class becomes \ufffd, one per maximal ill-formed part (as Python's
 * bytes.decode("utf-8", "replace") does), never the raw byte that made the output invalid.
 */
GS_TEST(write_string_replaces_invalid_utf8)
{
	/* stray continuation bytes */
	GS_EXPECT_STR_EQ(json_of("\x80"), "\\ufffd");
	GS_EXPECT_STR_EQ(json_of("a\xbf"
				 "b"),
			 "a\\ufffdb");
	GS_EXPECT_STR_EQ(json_of("\x80\x80"), "\\ufffd\\ufffd");
	/* bytes that start nothing: C0, C1 (overlong leads), F5..FF */
	GS_EXPECT_STR_EQ(json_of("\xff\xfe"), "\\ufffd\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xf5\x80"), "\\ufffd\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xc0\xaf"), "\\ufffd\\ufffd"); /* overlong '/' */
	GS_EXPECT_STR_EQ(json_of("\xc1\xbf"), "\\ufffd\\ufffd");
	/* overlong three- and four-byte forms */
	GS_EXPECT_STR_EQ(json_of("\xe0\x80\xaf"), "\\ufffd\\ufffd\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xe0\x9f\xbf"), "\\ufffd\\ufffd\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xf0\x80\x80\xaf"), "\\ufffd\\ufffd\\ufffd\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xf0\x8f\xbf\xbf"), "\\ufffd\\ufffd\\ufffd\\ufffd");
	/* UTF-16 surrogates, high and low */
	GS_EXPECT_STR_EQ(json_of("\xed\xa0\x80"), "\\ufffd\\ufffd\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xed\xbf\xbf"), "\\ufffd\\ufffd\\ufffd");
	/* above U+10FFFF */
	GS_EXPECT_STR_EQ(json_of("\xf4\x90\x80\x80"), "\\ufffd\\ufffd\\ufffd\\ufffd");
	/* truncated sequences: at the end, before ASCII, before another lead byte */
	GS_EXPECT_STR_EQ(json_of("\xc3"), "\\ufffd");
	GS_EXPECT_STR_EQ(json_of("x\xe2\x82"), "x\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xe2\x82"
				 "A"),
			 "\\ufffdA");
	GS_EXPECT_STR_EQ(json_of("\xf0\x9d\x84"), "\\ufffd");
	GS_EXPECT_STR_EQ(json_of("\xf0\x9d\xc3\xa9"), "\\ufffd\xc3\xa9");
	GS_EXPECT_STR_EQ(json_of("\xe2\x82\xe2\x82\xac"), "\\ufffd\xe2\x82\xac");
	/* the comm the e2e test gives its workload */
	GS_EXPECT_STR_EQ(json_of("gs\xff\xfe\n\x1b[31m"), "gs\\ufffd\\ufffd\\n\\u001b[31m");
}

/* Control characters, C1 ones (valid UTF-8, but terminals act on them) and DEL included. */
GS_TEST(write_string_escapes_controls)
{
	GS_EXPECT_STR_EQ(json_of("\x01\x08\x0b\x0c\x1b\x1f"),
			 "\\u0001\\u0008\\u000b\\u000c\\u001b\\u001f");
	GS_EXPECT_STR_EQ(json_of("a\nb\tc\rd"), "a\\nb\\tc\\rd");
	GS_EXPECT_STR_EQ(json_of("del\x7f"), "del\\u007f");
	GS_EXPECT_STR_EQ(json_of("\xc2\x80\xc2\x9b\xc2\x9f"), "\\u0080\\u009b\\u009f");
	GS_EXPECT_STR_EQ(json_of(" ~\"\\/"), " ~\\\"\\\\/");
}

GS_TEST(deep_nesting)
{
	struct capture c;
	char want[8 * GS_JSON_MAX_DEPTH], *p = want;

	if (!GS_EXPECT(capture_open(&c)))
		return;
	/* as deep as the writer tracks, with a value at the bottom and after each level */
	for (int i = 0; i < GS_JSON_MAX_DEPTH - 1; i++) {
		gs_json__begin_array(&c.j, NULL);
		*p++ = '[';
	}
	gs_json__u64(&c.j, NULL, 1);
	*p++ = '1';
	for (int i = 0; i < GS_JSON_MAX_DEPTH - 1; i++) {
		gs_json__end_array(&c.j);
		*p++ = ']';
		if (i < GS_JSON_MAX_DEPTH - 2) {
			gs_json__bool(&c.j, NULL, true);
			p += sprintf(p, ",true");
		}
	}
	*p = '\0';
	GS_EXPECT_STR_EQ(capture_close(&c), want);
	free(c.buf);
}

GS_TEST_MAIN(nested_document, string_escapes, escaped_keys, non_finite_doubles, write_string,
	     write_string_keeps_valid_utf8, write_string_replaces_invalid_utf8,
	     write_string_escapes_controls, deep_nesting)
