// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_trace_parse.c: the streaming Chrome trace reader: events, top-level values, errors. */
#include <errno.h>
#include <stdlib.h>
#include "stitch/trace_parse.h"
#include "tests/unit/harness.h"

GS_TEST(microseconds_to_nanoseconds)
{
	int64_t ns = 0;

	GS_EXPECT_EQ(gs_parse_us_ns("379465662.587", 13, &ns), 0);
	GS_EXPECT_EQ(ns, 379465662587LL);
	/* Kineto: wall-clock microseconds, beyond a double's integer precision in ns */
	GS_EXPECT_EQ(gs_parse_us_ns("1694039994139202", 16, &ns), 0);
	GS_EXPECT_EQ(ns, 1694039994139202000LL);
	GS_EXPECT_EQ(gs_parse_us_ns("-5", 2, &ns), 0);
	GS_EXPECT_EQ(ns, -5000);
	GS_EXPECT_EQ(gs_parse_us_ns("1.5e3", 5, &ns), 0);
	GS_EXPECT_EQ(ns, 1500000);
	GS_EXPECT_EQ(gs_parse_us_ns("2E-3", 4, &ns), 0);
	GS_EXPECT_EQ(ns, 2);
	GS_EXPECT_EQ(gs_parse_us_ns("0.0005", 6, &ns), 0); /* half a ns: away from zero */
	GS_EXPECT_EQ(ns, 1);
	GS_EXPECT_EQ(gs_parse_us_ns("0.0004", 6, &ns), 0);
	GS_EXPECT_EQ(ns, 0);
	GS_EXPECT_EQ(gs_parse_us_ns("12.000000001", 12, &ns), 0);
	GS_EXPECT_EQ(ns, 12000);
	GS_EXPECT_EQ(gs_parse_us_ns("abc", 3, &ns), -EINVAL);
	GS_EXPECT_EQ(gs_parse_us_ns("", 0, &ns), -EINVAL);
	GS_EXPECT_EQ(gs_parse_us_ns("1x", 2, &ns), -EINVAL);
	GS_EXPECT_EQ(gs_parse_us_ns("1e30", 4, &ns), -ERANGE);
	GS_EXPECT_EQ(gs_parse_us_ns("9223372036854776", 16, &ns), -ERANGE);
}

GS_TEST(integers_and_signed_microseconds)
{
	int64_t v = 0;
	char buf[32];

	GS_EXPECT_EQ(gs_parse_i64("-42", 3, &v), 0);
	GS_EXPECT_EQ(v, -42);
	GS_EXPECT_EQ(gs_parse_i64("9223372036854775807", 19, &v), 0);
	GS_EXPECT_EQ(v, INT64_MAX);
	GS_EXPECT_EQ(gs_parse_i64("9223372036854775808", 19, &v), -ERANGE);
	GS_EXPECT_EQ(gs_parse_i64("1.0", 3, &v), -EINVAL);
	GS_EXPECT_EQ(gs_parse_i64("-", 1, &v), -EINVAL);
	gs_format_us_signed(-5, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "-0.005");
	gs_format_us_signed(1234567, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "1234.567");
}

#define MAX_EV 8

struct seen {
	int nr;
	struct gs_trace_event ev[MAX_EV];
	char rest[MAX_EV][256];
	char args[MAX_EV][256];
	char pid_str[MAX_EV][32];
	char name[MAX_EV][32];
	int nr_top;
	char top_key[4][32];
	char top_json[4][256];
};

static int on_event(void *ctx, const struct gs_trace_event *ev)
{
	struct seen *s = ctx;

	if (s->nr == MAX_EV)
		return -E2BIG;
	s->ev[s->nr] = *ev;
	snprintf(s->rest[s->nr], sizeof(s->rest[0]), "%.*s", (int)ev->rest_len, ev->rest);
	snprintf(s->args[s->nr], sizeof(s->args[0]), "%.*s", (int)(ev->args_end - ev->args_start),
		 ev->rest + ev->args_start);
	snprintf(s->pid_str[s->nr], sizeof(s->pid_str[0]), "%s", ev->pid_str ? ev->pid_str : "");
	snprintf(s->name[s->nr], sizeof(s->name[0]), "%s", ev->args_name ? ev->args_name : "");
	s->nr++;
	return 0;
}

static int on_top(void *ctx, const char *key, const char *json, size_t len)
{
	struct seen *s = ctx;

	if (s->nr_top < 4) {
		snprintf(s->top_key[s->nr_top], sizeof(s->top_key[0]), "%s", key);
		snprintf(s->top_json[s->nr_top], sizeof(s->top_json[0]), "%.*s", (int)len, json);
		s->nr_top++;
	}
	return 0;
}

/* Feeds text in pieces of `step` bytes; returns the first error. */
static int parse(const char *text, size_t step, struct seen *s, struct gs_trace_parser **out)
{
	const struct gs_trace_parse_ops ops = { .ctx = s, .event = on_event, .top_level = on_top };
	struct gs_trace_parser *p = gs_trace_parser__new(&ops);
	size_t len = strlen(text);
	int err = 0;

	memset(s, 0, sizeof(*s));
	for (size_t off = 0; off < len && !err; off += step)
		err = gs_trace_parser__feed(p, text + off, len - off < step ? len - off : step);
	if (!err)
		err = gs_trace_parser__finish(p);
	*out = p;
	return err;
}

static const char doc[] =
	"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"tid\":0,\"ts\":0,"
	"\"args\":{\"name\":\"tr\\\"ain\"}},\n"
	"{\"name\":\"k\",\"id\":218,\"ph\":\"X\",\"ts\":1.5,\"dur\":2,\"pid\":\"Traces\",\"tid\":3,"
	"\"args\":{\"a\":[1,{\"b\":null}],\"c\":true}, \"cat\":\"kernel\"}\n"
	"],\"metadata\":{\"host\":\"h\",\"n\":[1, 2]}, \"schemaVersion\": 1}";

/* Strings are carried through, but what is written back is valid UTF-8 whatever was read. */
GS_TEST(invalid_utf8_is_written_back_valid)
{
	static struct seen s;
	struct gs_trace_parser *p;

	if (!GS_EXPECT_EQ(parse("{\"traceEvents\":[{\"ph\":\"i\",\"ts\":1,\"pid\":1,\"tid\":1,"
				"\"name\":\"caf\xc3\xa9\",\"cat\":\"\xff\xfe\\u001b\"}]}",
				4096, &s, &p),
			  0))
		return;
	gs_trace_parser__free(p);
	if (!GS_EXPECT_EQ(s.nr, 1))
		return;
	GS_EXPECT(strstr(s.rest[0], "\"cat\":\"\\ufffd\\ufffd\\u001b\""));
	GS_EXPECT(strstr(s.rest[0], "\"name\":\"caf\xc3\xa9\""));
}

GS_TEST(events_and_top_level_values_in_any_chunking)
{
	static struct seen s;
	const size_t steps[] = { 1, 3, 7, 4096 };

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		struct gs_trace_parser *p;

		if (!GS_EXPECT_EQ(parse(doc, steps[i], &s, &p), 0))
			return;
		GS_EXPECT_EQ(gs_trace_parser__events(p), 2);
		gs_trace_parser__free(p);
		if (!GS_EXPECT_EQ(s.nr, 2))
			return;
		GS_EXPECT_STR_EQ(s.ev[0].ph, "M");
		GS_EXPECT(s.ev[0].is_process_name);
		GS_EXPECT(s.ev[0].has_pid && !s.ev[0].pid_is_str);
		GS_EXPECT_EQ(s.ev[0].pid, 7);
		GS_EXPECT_STR_EQ(s.name[0], "tr\"ain");
		GS_EXPECT_STR_EQ(s.rest[0], ",\"ph\":\"M\",\"name\":\"process_name\",\"tid\":0,"
					    "\"args\":{\"name\":\"tr\\\"ain\"}");
		GS_EXPECT_STR_EQ(s.args[0], ",\"args\":{\"name\":\"tr\\\"ain\"}");
		GS_EXPECT(!s.ev[1].is_process_name);
		GS_EXPECT(!s.ev[0].has_id);
		GS_EXPECT(s.ev[1].has_id); /* an integer id is taken out of rest */
		GS_EXPECT_EQ(s.ev[1].id, 218);
		GS_EXPECT(s.ev[1].has_ts);
		GS_EXPECT_EQ(s.ev[1].ts_ns, 1500);
		GS_EXPECT(s.ev[1].pid_is_str);
		GS_EXPECT_STR_EQ(s.pid_str[1], "Traces");
		GS_EXPECT_STR_EQ(s.rest[1], ",\"name\":\"k\",\"ph\":\"X\",\"dur\":2,\"tid\":3,"
					    "\"args\":{\"a\":[1,{\"b\":null}],\"c\":true},"
					    "\"cat\":\"kernel\"");
		GS_EXPECT_STR_EQ(s.args[1], ",\"args\":{\"a\":[1,{\"b\":null}],\"c\":true}");
		GS_EXPECT_EQ(s.ev[1].index, 1);
		if (!GS_EXPECT_EQ(s.nr_top, 3))
			return;
		GS_EXPECT_STR_EQ(s.top_key[0], "displayTimeUnit");
		GS_EXPECT_STR_EQ(s.top_json[0], "\"ns\"");
		GS_EXPECT_STR_EQ(s.top_key[1], "metadata");
		GS_EXPECT_STR_EQ(s.top_json[1], "{\"host\":\"h\",\"n\":[1,2]}");
		GS_EXPECT_STR_EQ(s.top_key[2], "schemaVersion");
		GS_EXPECT_STR_EQ(s.top_json[2], "1");
	}
}

/* Each malformed document: the message, and the offset just past the token that showed it. */
GS_TEST(malformed_input_names_what_and_where)
{
	static const struct {
		const char *text;
		const char *msg;
		uint64_t offset;
	} cases[] = {
		{ "", "premature EOF", 0 },
		{ "  ", "premature EOF", 2 },
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1}", "premature EOF", 33 },
		{ "[{\"ph\":\"X\"}]",
		  "not a trace object: the document is an array (a legacy "
		  "profiler export?)",
		  1 },
		{ "{\"traceEvents\":{}}", "\"traceEvents\" is not an array", 16 },
		{ "{\"traceEvents\":7}", "\"traceEvents\" is not an array", 16 },
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1},3]}", "traceEvents[1]: not an object",
		  35 },
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":\"1\"}]}",
		  "traceEvents[0]: \"ts\" is not a number", 34 },
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"pid\":1.5}]}",
		  "traceEvents[0]: \"pid\" is not an integer or string", 42 },
		{ "{\"traceEvents\":[{\"ts\":1}]}", "traceEvents[0]: no \"ph\"", 24 },
		{ "{\"traceEvents\":[{\"ts\":5e15}]}", "traceEvents[0]: \"ts\" out of range", 26 },
		{ "{\"traceEvents\":[{\"ph\":\"X\"}]}", "traceEvents[0]: no \"ts\"", 26 },
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1}]} x", "trailing garbage", 37 },
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,]}",
		  "invalid object key (must be a string)", 34 },
	};
	static struct seen s;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_trace_parser *p;
		int err = parse(cases[i].text, 5, &s, &p);

		if (!GS_EXPECT_EQ(err, -EINVAL)) {
			printf("  case %zu: %s\n", i, cases[i].text);
			gs_trace_parser__free(p);
			continue;
		}
		if (!GS_EXPECT_STR_EQ(gs_trace_parser__error(p), cases[i].msg) ||
		    !GS_EXPECT_EQ(gs_trace_parser__error_offset(p), cases[i].offset))
			printf("  case %zu: %s\n", i, cases[i].text);
		GS_EXPECT_EQ(gs_trace_parser__feed(p, "x", 1), -EINVAL); /* stays failed */
		gs_trace_parser__free(p);
	}
}

GS_TEST(callback_error_stops_the_parse)
{
	static struct seen s;
	struct gs_trace_parser *p;
	char text[2048] = "{\"traceEvents\":[";

	for (int i = 0; i < MAX_EV + 2; i++)
		strcat(text, i ? ",{\"ph\":\"i\",\"ts\":1}" : "{\"ph\":\"i\",\"ts\":1}");
	strcat(text, "]}");
	GS_EXPECT_EQ(parse(text, 4096, &s, &p), -E2BIG);
	GS_EXPECT_EQ(s.nr, MAX_EV);
	gs_trace_parser__free(p);
}

GS_TEST_MAIN(microseconds_to_nanoseconds, invalid_utf8_is_written_back_valid,
	     integers_and_signed_microseconds, events_and_top_level_values_in_any_chunking,
	     malformed_input_names_what_and_where, callback_error_stops_the_parse)
