// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_perfetto.c: the protobuf writer's exact bytes, the intern table, the encoder's packets. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "stitch/trace_parse.h"
#include "stitch/trace_writer.h"
#include "user/json.h"
#include "user/json_tape.h"
#include "tests/unit/harness.h"
#include "user/perfetto_intern.h"
#include "user/perfetto_json.h"
#include "user/perfetto_pb.h"
#include "user/perfetto_row.h"
#include "user/perfetto_trace.h"

static bool bytes_eq(const struct gs_pb *pb, const uint8_t *want, size_t len)
{
	return !pb->oom && pb->len == len && !memcmp(pb->buf, want, len);
}

GS_TEST(varints_and_fields)
{
	struct gs_pb pb = { 0 };
	static const uint8_t want[] = { 0x08, 0x00, 0x10, 0x7f, 0x18, 0x80, 0x01, 0x20, 0xac,
					0x02, 0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					0xff, 0xff, 0x01, 0x32, 0x02, 'h',  'i',  0x39, 0,
					0,    0,    0,	  0,	0,    0xf0, 0x3f };

	gs_pb__varint(&pb, 1, 0);
	gs_pb__varint(&pb, 2, 127);
	gs_pb__varint(&pb, 3, 128);
	gs_pb__varint(&pb, 4, 300);
	gs_pb__int64(&pb, 5, -1); /* ten bytes, two's complement */
	gs_pb__string(&pb, 6, "hi");
	gs_pb__double(&pb, 7, 1.0);
	GS_EXPECT(bytes_eq(&pb, want, sizeof(want)));
	GS_EXPECT_EQ(gs_pb_varint_len(UINT64_MAX), 10);
	gs_pb__release(&pb);
}

GS_TEST(nested_lengths_are_exact)
{
	struct gs_pb pb = { 0 };
	char body[200];

	memset(body, 'x', sizeof(body));
	gs_pb__begin(&pb, 1);
	gs_pb__begin(&pb, 60); /* a two-byte tag */
	gs_pb__bytes(&pb, 2, body, sizeof(body));
	gs_pb__end(&pb);
	gs_pb__end(&pb);
	/* inner: tag 2 (1) + length 200 (2) + 200 = 203; outer: tag 60 (2) + length (2) + 203 */
	GS_EXPECT_EQ(pb.len, 1 + 2 + 2 + 2 + 1 + 2 + 200);
	GS_EXPECT_EQ(pb.buf[0], 0x0a);
	GS_EXPECT_EQ(pb.buf[1], (207 & 0x7f) | 0x80);
	GS_EXPECT_EQ(pb.buf[2], 207 >> 7);
	GS_EXPECT_EQ(pb.buf[3], 0xe2); /* (60 << 3 | 2) = 482 */
	GS_EXPECT_EQ(pb.buf[4], 0x03);
	GS_EXPECT_EQ(pb.buf[5], (203 & 0x7f) | 0x80);
	GS_EXPECT_EQ(pb.buf[6], 203 >> 7);
	gs_pb__end(&pb); /* unbalanced: ignored */
	GS_EXPECT(!pb.oom);
	gs_pb__release(&pb);
}

GS_TEST(intern_ids_and_bounds)
{
	struct gs_intern *t = gs_intern__new(4, 64); /* 16 slots: 8 entries at most */
	bool added;
	char key[8];

	if (!GS_EXPECT(t))
		return;
	GS_EXPECT_EQ(gs_intern__get(t, "a", 1, &added), 1);
	GS_EXPECT(added);
	GS_EXPECT_EQ(gs_intern__get(t, "b", 1, &added), 2);
	GS_EXPECT_EQ(gs_intern__get(t, "a", 1, &added), 1);
	GS_EXPECT(!added);
	GS_EXPECT(gs_intern__has(t, "b", 1) && !gs_intern__has(t, "c", 1));
	for (int i = 0; i < 20; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		gs_intern__get(t, key, strlen(key), &added);
	}
	GS_EXPECT_EQ(gs_intern__count(t), 8); /* half the slots, never more */
	GS_EXPECT_EQ(gs_intern__get(t, "new", 3, &added), 0);
	GS_EXPECT(gs_intern__filling(t));
	gs_intern__clear(t);
	GS_EXPECT_EQ(gs_intern__count(t), 0);
	GS_EXPECT_EQ(gs_intern__get(t, "new", 3, &added), 1);
	gs_intern__free(t);
}

/* Packets of a Trace in buf: their count, each one's bytes checked to be in bounds. */
static int count_packets(const uint8_t *buf, size_t len)
{
	size_t off = 0;
	int n = 0;

	while (off < len) {
		uint64_t size = 0;
		int shift = 0;

		if (buf[off++] != 0x0a)
			return -1;
		while (off < len && buf[off] & 0x80)
			size |= (uint64_t)(buf[off++] & 0x7f) << shift, shift += 7;
		if (off >= len)
			return -1;
		size |= (uint64_t)buf[off++] << shift;
		if (size > len - off)
			return -1;
		off += size;
		n++;
	}
	return n;
}

static int row(struct gs_perfetto_json *pj, const char *json)
{
	return gs_perfetto_json__row(pj, json, strlen(json));
}

GS_TEST(rows_become_packets_slice_end_in_time_order)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct gs_perfetto_json *pj = f ? gs_perfetto_json__new(f) : NULL;

	if (!GS_EXPECT(pj))
		return;
	/* an X of 10 us, a row inside it, a counter, an instant, a late row, a flow */
	GS_EXPECT_EQ(row(pj,
			 "{\"ph\":\"X\",\"name\":\"a\",\"cat\":\"c\",\"pid\":1,\"tid\":2,"
			 "\"ts\":100,\"dur\":10,\"args\":{\"stack\":[\"f\",\"main\"],\"n\":3}}"),
		     0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"X\",\"name\":\"b\",\"pid\":1,\"tid\":2,\"ts\":101,"
			     "\"dur\":0,\"args\":{\"grid\":[1,2,3]}}"),
		     0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"C\",\"name\":\"mem\",\"pid\":1,\"tid\":0,\"ts\":120,"
			     "\"args\":{\"bytes\":4096}}"),
		     0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"i\",\"name\":\"s\",\"pid\":1,\"tid\":2,\"ts\":50}"), 0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"s\",\"name\":\"ac2g\",\"id\":7,\"pid\":1,\"tid\":2,"
			     "\"ts\":130}"),
		     0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"?\",\"pid\":1,\"ts\":130}"), 1); /* no Perfetto form */
	GS_EXPECT(fputs("{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,"
			"\"tid\":2,\"args\":{\"name\":\"t\"}}],\"metadata\":{\"x\":1}}",
			gs_perfetto_json__file(pj)) >= 0);
	GS_EXPECT_EQ(gs_perfetto_json__close(pj), 0);
	GS_EXPECT_EQ(fclose(f), 0);
	/*
	 * descriptors: thread + process (2), the counter's (1), the thread renamed (1), the
	 * global track (1); the sequence's start (1); events: X begin, b, counter, i, s (5), the
	 * X's end (1, before the counter at 120), metadata (1); nothing for the "?" row
	 */
	GS_EXPECT_EQ(count_packets((const uint8_t *)buf, len), 13);
	free(buf);
}

/* The size of the last packet of a Trace in buf (its body, the tag and length not counted). */
static size_t last_packet(const uint8_t *buf, size_t len)
{
	size_t off = 0, last = 0;

	while (off < len) {
		uint64_t size = 0;
		int shift = 0;

		off++; /* the tag */
		while (off < len && buf[off] & 0x80)
			size |= (uint64_t)(buf[off++] & 0x7f) << shift, shift += 7;
		size |= (uint64_t)buf[off++] << shift;
		last = size;
		off += size;
	}
	return last;
}

#define LAUNCH                                                                              \
	"{\"ph\":\"X\",\"name\":\"cudaLaunchKernel\",\"cat\":\"cuda_runtime\",\"pid\":1,"   \
	"\"tid\":1,\"ts\":%d.000,\"dur\":0.000,\"args\":{\"kernel\":\"k<\\\"q\\\\>\","      \
	"\"grid\":[128,2,1],\"block\":[256,1,1],\"shared memory\":4096,\"stream\":\"0x0\"," \
	"\"stack\":[\"launch+0x5a (/bin/b)\",\"main+0x2e5 (/bin/b)\"]}}"

#define PACKED                                                                                   \
	"{\"kernel\":\"k<\\\"q\\\\>\",\"grid\":[128,2,1],\"block\":[256,1,1],\"shared memory\":" \
	"4096,\"stream\":\"0x0\"}"

GS_TEST(repeated_launches_pack_their_args_on_the_default_track)
{
	char *buf = NULL, text[512];
	size_t len = 0, first = 0;
	FILE *f = open_memstream(&buf, &len);
	struct gs_perfetto_json *pj = f ? gs_perfetto_json__new(f) : NULL;

	if (!GS_EXPECT(pj))
		return;
	for (int i = 0; i < 3; i++) {
		snprintf(text, sizeof(text), LAUNCH, 100 + i);
		GS_EXPECT_EQ(row(pj, text), 0);
		GS_EXPECT_EQ(fflush(f), 0);
		if (!i) /* the first is written when the second comes (it may carry a flow) */
			continue;
		if (i == 1)
			first = last_packet((const uint8_t *)buf, len);
	}
	GS_EXPECT(fputs("{\"traceEvents\":[]}", gs_perfetto_json__file(pj)) >= 0);
	GS_EXPECT_EQ(gs_perfetto_json__close(pj), 0);
	GS_EXPECT_EQ(fclose(f), 0);
	/*
	 * The first launch interns its name, category, frames and callstack: large. The
	 * third: timestamp delta (1 us: 3 bytes), sequence id and flags (4), the TrackEvent's
	 * framing (2), type, name, category (6), the args packed as one interned string (7),
	 * its callstack (3), no track_uuid (the sequence's default): 25 bytes.
	 */
	GS_EXPECT(first > 60);
	GS_EXPECT_EQ(last_packet((const uint8_t *)buf, len), 25);
	/* the packed args' text, interned once: JSON that reads back as the args */
	GS_EXPECT(memmem(buf, len, PACKED, strlen(PACKED)));
	free(buf);
}

GS_TEST(ac2g_flows_go_on_their_slice)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct gs_perfetto_json *pj = f ? gs_perfetto_json__new(f) : NULL;

	if (!GS_EXPECT(pj))
		return;
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"X\",\"name\":\"l\",\"pid\":1,\"tid\":1,\"ts\":100,"
			     "\"dur\":5}"),
		     0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"s\",\"name\":\"ac2g\",\"cat\":\"ac2g\",\"id\":7,"
			     "\"pid\":1,\"tid\":1,\"ts\":100}"),
		     0);
	/* another flow's name, or another time: an instant of its own */
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"X\",\"name\":\"m\",\"pid\":1,\"tid\":1,\"ts\":110,"
			     "\"dur\":0}"),
		     0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"s\",\"name\":\"x\",\"cat\":\"x\",\"id\":8,"
			     "\"pid\":1,\"tid\":1,\"ts\":110}"),
		     0);
	GS_EXPECT(fputs("{\"traceEvents\":[]}", gs_perfetto_json__file(pj)) >= 0);
	GS_EXPECT_EQ(gs_perfetto_json__close(pj), 0);
	GS_EXPECT_EQ(fclose(f), 0);
	/* descriptors (2), the sequence's start (1), l with its flow (1), its end (1), m (1), x (1) */
	GS_EXPECT_EQ(count_packets((const uint8_t *)buf, len), 7);
	free(buf);
}

GS_TEST(async_ranges_begin_and_end_on_a_track_of_their_own)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct gs_perfetto_json *pj = f ? gs_perfetto_json__new(f) : NULL;

	if (!GS_EXPECT(pj))
		return;
	/* an NVTX start/end range: begun on one thread, ended on another */
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"b\",\"name\":\"load\",\"cat\":\"nvtx\",\"id\":5,"
			     "\"pid\":1,\"tid\":1,\"ts\":100,\"args\":{}}"),
		     0);
	GS_EXPECT_EQ(row(pj, "{\"ph\":\"e\",\"name\":\"load\",\"cat\":\"nvtx\",\"id\":5,"
			     "\"pid\":1,\"tid\":2,\"ts\":120}"),
		     0);
	GS_EXPECT(fputs("{\"traceEvents\":[]}", gs_perfetto_json__file(pj)) >= 0);
	GS_EXPECT_EQ(gs_perfetto_json__close(pj), 0);
	GS_EXPECT_EQ(fclose(f), 0);
	/* thread 1 and its process (2), the sequence's start (1), the range's track named
	 * after it (1), its begin (1), thread 2 (1), its end (1) */
	GS_EXPECT_EQ(count_packets((const uint8_t *)buf, len), 7);
	GS_EXPECT(memmem(buf, len, "load", 4));
	free(buf);
}

static yajl_val member(yajl_val o, const char *key)
{
	for (size_t i = 0; o && YAJL_IS_OBJECT(o) && i < o->u.object.len; i++)
		if (!strcmp(o->u.object.keys[i], key))
			return o->u.object.values[i];
	return NULL;
}

GS_TEST(row_parser_arena_tree)
{
	struct gs_row_parser *p = gs_row_parser__new();
	const char *row = "{\"name\":\"a\\\"b\\u00e9\",\"n\":-12,\"big\":18446744073709551615,"
			  "\"f\":1.5,\"t\":true,\"z\":null,\"a\":[[1,2],{\"k\":[]}],\"e\":{}}";
	yajl_val v, a;

	if (!GS_EXPECT(p))
		return;
	v = gs_row_parser__parse(p, row, strlen(row));
	if (!GS_EXPECT(v && YAJL_IS_OBJECT(v)))
		goto out;
	GS_EXPECT_EQ(v->u.object.len, 8);
	GS_EXPECT_STR_EQ(member(v, "name")->u.string, "a\"b\xc3\xa9");
	GS_EXPECT(YAJL_IS_INTEGER(member(v, "n")) && member(v, "n")->u.number.i == -12);
	GS_EXPECT(!YAJL_IS_INTEGER(member(v, "big")) && YAJL_IS_DOUBLE(member(v, "big")));
	GS_EXPECT(YAJL_IS_DOUBLE(member(v, "f")) && member(v, "f")->u.number.d == 1.5);
	GS_EXPECT_STR_EQ(member(v, "f")->u.number.r, "1.5");
	GS_EXPECT(YAJL_IS_TRUE(member(v, "t")) && YAJL_IS_NULL(member(v, "z")));
	a = member(v, "a");
	GS_EXPECT(YAJL_IS_ARRAY(a) && a->u.array.len == 2);
	GS_EXPECT_EQ(a->u.array.values[0]->u.array.values[1]->u.number.i, 2);
	GS_EXPECT_EQ(member(a->u.array.values[1], "k")->u.array.len, 0);
	GS_EXPECT_EQ(member(v, "e")->u.object.len, 0);
	/* malformed rows: NULL, and the next good row still parses */
	GS_EXPECT(!gs_row_parser__parse(p, "{\"a\":", 5));
	GS_EXPECT(!gs_row_parser__parse(p, "{\"a\":1}}", 8));
	GS_EXPECT(!gs_row_parser__parse(p, "", 0));
	v = gs_row_parser__parse(p, "{\"x\":[7]}", 9);
	GS_EXPECT(v && member(v, "x")->u.array.values[0]->u.number.i == 7);
out:
	gs_row_parser__free(p);
}

/* Whether two trees are the same values, keys, number texts and flags. */
static bool same_tree(yajl_val a, yajl_val b)
{
	if (!a || !b || a->type != b->type)
		return false;
	switch (a->type) {
	case yajl_t_string:
		return !strcmp(a->u.string, b->u.string);
	case yajl_t_number:
		return !strcmp(a->u.number.r, b->u.number.r) &&
		       a->u.number.flags == b->u.number.flags &&
		       (!YAJL_IS_INTEGER(a) || a->u.number.i == b->u.number.i) &&
		       (!YAJL_IS_DOUBLE(a) || a->u.number.d == b->u.number.d);
	case yajl_t_object:
		if (a->u.object.len != b->u.object.len)
			return false;
		for (size_t i = 0; i < a->u.object.len; i++)
			if (strcmp(a->u.object.keys[i], b->u.object.keys[i]) ||
			    !same_tree(a->u.object.values[i], b->u.object.values[i]))
				return false;
		return true;
	case yajl_t_array:
		if (a->u.array.len != b->u.array.len)
			return false;
		for (size_t i = 0; i < a->u.array.len; i++)
			if (!same_tree(a->u.array.values[i], b->u.array.values[i]))
				return false;
		return true;
	default:
		return true;
	}
}

/* One row of every kind of value gs_json writes, stack (raw) as given. */
static void tape_row(struct gs_json *j, const char *stack)
{
	gs_json__begin_object(j, NULL);
	gs_json__string(j, "ph", "X");
	gs_json__string(j, "name", "a\"b\\c\n\x01\xc3\xa9\xc2\x80 bad:\xff\xe2\x82 end");
	gs_json__string(j, "nil", NULL);
	gs_json__i64(j, "pid", -42);
	gs_json__i64(j, "min", INT64_MIN);
	gs_json__u64(j, "big", UINT64_MAX);
	gs_json__u64(j, "zero", 0);
	gs_json__raw(j, "ts", "12345.678");
	gs_json__raw(j, "dur", "0");
	gs_json__double(j, "f", 1.5);
	gs_json__bool(j, "t", true);
	gs_json__bool(j, "k\xff", false);
	gs_json__begin_object(j, "args");
	gs_json__begin_array(j, "grid");
	gs_json__u64(j, NULL, 128);
	gs_json__end_array(j);
	gs_json__raw(j, "stack", stack);
	gs_json__begin_object(j, "empty");
	gs_json__end_object(j);
	gs_json__begin_array(j, "none");
	gs_json__end_array(j);
	gs_json__end_object(j);
	gs_json__end_object(j);
}

/* row as text and as a tape; their trees compared (the tape's read twice: its stack cached) */
static bool tape_equals_text(const char *stack)
{
	struct gs_row_parser *pt = gs_row_parser__new(), *pp = gs_row_parser__new();
	char *text = NULL, *tape = NULL;
	size_t text_len = 0, tape_len = 0;
	FILE *ft = open_memstream(&text, &text_len), *fp = open_memstream(&tape, &tape_len);
	struct gs_json j;
	bool ok = false;

	if (!pt || !pp || !ft || !fp)
		goto out;
	gs_json__init(&j, ft);
	tape_row(&j, stack);
	gs_json__init(&j, fp);
	j.tape = true;
	tape_row(&j, stack);
	fflush(ft);
	fflush(fp);
	ok = gs_tape_is(tape, tape_len) && !gs_tape_is(text, text_len);
	for (int i = 0; i < 2 && ok; i++)
		ok = same_tree(gs_row_parser__parse(pt, text, text_len),
			       gs_row_parser__tape(pp, tape, tape_len));
out:
	if (ft)
		fclose(ft);
	if (fp)
		fclose(fp);
	free(text);
	free(tape);
	gs_row_parser__free(pt);
	gs_row_parser__free(pp);
	return ok;
}

GS_TEST(tape_tree_equals_the_texts)
{
	struct gs_row_parser *p = gs_row_parser__new();

	GS_EXPECT(tape_equals_text("[\"f+0x1 (/lib/a.so)\",\"g \\\"q\\\" \\u00e9\"]"));
	GS_EXPECT(tape_equals_text("[]"));
	GS_EXPECT(tape_equals_text("{\"x\":[1,2.5,null,true]}"));
	/* a short or broken tape: no tree */
	if (GS_EXPECT(p)) {
		GS_EXPECT(!gs_row_parser__tape(p, "\x01\xff\xff", 3));
		GS_EXPECT(!gs_row_parser__tape(p, "\x01\xff\xff\x04\x01\x00", 6));
		GS_EXPECT(gs_row_parser__tape(p, "\x01\xff\xff\x03", 4));
	}
	gs_row_parser__free(p);
}

static int take_row(void *ctx, const char *json, size_t len)
{
	int *tapes = ctx;

	*tapes += gs_tape_is(json, len) ? 1 : -1000;
	return 0;
}

/* With a row sink, rendered rows reach it as tapes; pushed text stays text. */
GS_TEST(row_sink_gets_tapes)
{
	char *doc = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&doc, &len);
	struct gs_trace_writer *w = f ? gs_trace_writer__new(f, 0) : NULL;
	int tapes = 0;

	if (!GS_EXPECT(w))
		goto out;
	gs_trace_writer__row_sink(w, take_row, &tapes);
	for (int i = 0; i < 3; i++) {
		struct gs_chrome_trace *t = gs_trace_writer__begin(w, 10 + (uint64_t)i);
		struct gs_json *j =
			gs_chrome_trace__event(t, "i", "n", "c", 1, 2, 10 + (uint64_t)i);

		gs_json__u64(j, "k", (uint64_t)i);
		gs_chrome_trace__end_event(t);
		GS_EXPECT_EQ(gs_trace_writer__end(w), 0);
	}
	GS_EXPECT_EQ(gs_trace_writer__push(w, 20, "{\"ph\":\"i\"}", 10), 0);
	gs_trace_writer__flush(w);
	GS_EXPECT_EQ(tapes, 3 - 1000);
out:
	gs_trace_writer__free(w);
	if (f)
		fclose(f);
	free(doc);
}

GS_TEST(perfetto_paths)
{
	GS_EXPECT(gs_is_perfetto_path("t.pftrace"));
	GS_EXPECT(gs_is_perfetto_path("/a/t.perfetto-trace.gz"));
	GS_EXPECT(!gs_is_perfetto_path("t.json"));
	GS_EXPECT(!gs_is_perfetto_path("pftrace"));
	GS_EXPECT(!gs_is_perfetto_path(NULL));
	GS_EXPECT(gs_is_perfetto_data("\x0a\x17\x40", 3)); /* its first field: timestamp */
	GS_EXPECT(!gs_is_perfetto_data("\n{\"traceEvents\"", 4));
	GS_EXPECT(!gs_is_perfetto_data("\n\n", 2));
	/* a first packet of 13 or 32 bytes: its length byte is JSON whitespace */
	GS_EXPECT(gs_is_perfetto_data("\x0a\x0d\x50\x01", 4));
	GS_EXPECT(gs_is_perfetto_data("\x0a\x20\x50\x01", 4));
	GS_EXPECT(!gs_is_perfetto_data("\n\r\n  [{", 6));
	GS_EXPECT(!gs_is_perfetto_data("\x0a", 1));
	/* a pprof profile (gzip'd or not) opens with sample_type: field 1 holding a varint 1 */
	GS_EXPECT(!gs_is_perfetto_data("\x0a\x04\x08\x01\x10\x02", 6));
}

GS_TEST_MAIN(varints_and_fields, nested_lengths_are_exact, intern_ids_and_bounds,
	     rows_become_packets_slice_end_in_time_order,
	     repeated_launches_pack_their_args_on_the_default_track, ac2g_flows_go_on_their_slice,
	     async_ranges_begin_and_end_on_a_track_of_their_own, row_parser_arena_tree,
	     tape_tree_equals_the_texts, row_sink_gets_tapes, perfetto_paths)
