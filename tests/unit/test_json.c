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
	gs_json__string(&c.j, NULL, "\x01\x1f\x7f");
	/* UTF-8 is passed through byte for byte */
	gs_json__string(&c.j, NULL, "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x94\xa5");
	gs_json__string(&c.j, NULL, "");
	gs_json__end_array(&c.j);
	GS_EXPECT_STR_EQ(capture_close(&c), "[\"say \\\"hi\\\"\",\"C:\\\\dir\\\\\","
					    "\"a\\nb\\tc\\rd\",\"\\u0001\\u001f\x7f\","
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
	     deep_nesting)
