// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_nvtx_rows.c: NVTX pushes matched to pops per thread and domain, async pairs, caps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/timeline/nvtx_rows.h"
#include "bpf/gs_nvtx.h"
#include "tests/unit/harness.h"

/* The rows record_nvtx renders, appended to one text. */
struct sink {
	struct gs_chrome_trace trace;
	FILE *f;
	char *text;
	size_t len;
	int events, tracks, names;
};

static struct gs_chrome_trace *sink_begin(void *ctx, pid_t pid, uint64_t ts_ns)
{
	struct sink *s = ctx;

	gs_json__init(&s->trace.json, s->f);
	return &s->trace;
}

static void sink_end(void *ctx)
{
	struct sink *s = ctx;

	s->events++;
	fputc('\n', s->f);
	fflush(s->f);
}

static void sink_track(void *ctx, pid_t pid, pid_t tid, uint64_t ts_ns)
{
	((struct sink *)ctx)->tracks++;
}

static void sink_name(void *ctx, pid_t pid, pid_t tid, const char *name, uint64_t ts_ns)
{
	((struct sink *)ctx)->names++;
}

static struct gs_nvtx_rows *open_sink(struct sink *s)
{
	s->f = open_memstream(&s->text, &s->len);
	return gs_nvtx_rows__new(&(struct gs_nvtx_rows_emit){ .ctx = s,
							      .begin = sink_begin,
							      .end = sink_end,
							      .track = sink_track,
							      .name_thread = sink_name });
}

static void close_sink(struct gs_nvtx_rows *n, struct sink *s)
{
	gs_nvtx_rows__free(n);
	fclose(s->f);
	free(s->text);
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p++)
		n++;
	return n;
}

static uint32_t cur_pid = 10; /* the process call() speaks for */

static void call(struct gs_nvtx_rows *n, uint32_t kind, uint32_t tid, uint64_t domain, uint64_t id,
		 uint64_t ts, const char *msg)
{
	static struct gs_nvtx_event e;

	memset(&e, 0, sizeof(e));
	e.hdr = (struct gs_event_hdr){
		.type = GS_EV_NVTX, .size = sizeof(e), .ts_ns = ts, .pid = cur_pid, .tid = tid
	};
	e.kind = kind;
	e.domain = domain;
	e.range_id = id;
	if (msg)
		snprintf(e.message, sizeof(e.message), "%s", msg);
	gs_nvtx_rows__event(n, &e.hdr, sizeof(e));
}

/* The metadata object as text. */
static char *metadata(struct gs_nvtx_rows *n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct gs_json j;

	gs_json__init(&j, f);
	gs_json__begin_object(&j, NULL);
	gs_nvtx_rows__metadata(n, &j);
	gs_json__end_object(&j);
	fclose(f);
	return text;
}

GS_TEST(pop_closes_the_newest_push_of_its_domain_on_its_thread)
{
	struct sink s = { 0 };
	struct gs_nvtx_rows *n = open_sink(&s);
	char *md;

	call(n, GS_NVTX_PUSH, 11, 0, 0, 1000, "outer");
	call(n, GS_NVTX_PUSH, 11, 5, 0, 2000, "other domain");
	call(n, GS_NVTX_PUSH, 12, 0, 0, 2500, "other thread");
	call(n, GS_NVTX_PUSH, 11, 0, 0, 3000, "inner");
	call(n, GS_NVTX_POP, 11, 5, 0, 4000, NULL); /* other domain: 2 us */
	call(n, GS_NVTX_POP, 11, 0, 0, 5000, NULL); /* inner: 2 us */
	call(n, GS_NVTX_POP, 11, 0, 0, 9000, NULL); /* outer: 8 us */
	call(n, GS_NVTX_POP, 11, 0, 0, 9500, NULL); /* nothing left on thread 11 */
	GS_EXPECT_EQ(s.events, 3);
	GS_EXPECT(strstr(s.text, "\"name\":\"other domain\",\"cat\":\"nvtx\",\"pid\":10,\"tid\":11,"
				 "\"ts\":2.000,\"dur\":2.000") != NULL);
	GS_EXPECT(strstr(s.text, "\"name\":\"inner\",\"cat\":\"nvtx\",\"pid\":10,\"tid\":11,"
				 "\"ts\":3.000,\"dur\":2.000") != NULL);
	GS_EXPECT(strstr(s.text, "\"name\":\"outer\",\"cat\":\"nvtx\",\"pid\":10,\"tid\":11,"
				 "\"ts\":1.000,\"dur\":8.000") != NULL);
	/* thread 12's range ends with its process, marked unfinished */
	gs_nvtx_rows__proc_gone(n, 10, 12000);
	GS_EXPECT_EQ(s.events, 4);
	GS_EXPECT(strstr(s.text,
			 "\"name\":\"other thread\",\"cat\":\"nvtx\",\"pid\":10,\"tid\":12,"
			 "\"ts\":2.500,\"dur\":9.500,\"args\":{\"unfinished\":true}") != NULL);
	md = metadata(n);
	GS_EXPECT(strstr(md, "\"ranges\":4") && strstr(md, "\"unmatched_pops\":1") &&
		  strstr(md, "\"unfinished\":1"));
	free(md);
	close_sink(n, &s);
}

GS_TEST(start_and_end_pair_across_threads_by_id)
{
	struct sink s = { 0 };
	struct gs_nvtx_rows *n = open_sink(&s);
	char *md;

	call(n, GS_NVTX_START, 11, 0, 7, 1000, "load");
	call(n, GS_NVTX_START, 11, 0, 8, 1500, "never ended");
	call(n, GS_NVTX_END, 13, 0, 7, 4000, NULL);
	call(n, GS_NVTX_END, 13, 0, 99, 4500, NULL); /* started before the recording */
	GS_EXPECT_EQ(count(s.text, "\"ph\":\"b\""), 2);
	GS_EXPECT_EQ(count(s.text, "\"ph\":\"e\",\"name\":\"load\",\"cat\":\"nvtx\",\"pid\":10,"
				   "\"tid\":13,\"ts\":4.000,\"id\":4294967303"),
		     1);
	GS_EXPECT_EQ(count(s.text, "\"id\":4294967303"), 2);
	gs_nvtx_rows__finish(n, 6000);
	GS_EXPECT_EQ(count(s.text, "\"ph\":\"e\",\"name\":\"never ended\""), 1);
	GS_EXPECT_EQ(count(s.text, "\"unfinished\":true"), 1);
	md = metadata(n);
	GS_EXPECT(strstr(md, "\"async_ranges\":2") && strstr(md, "\"unmatched_ends\":1"));
	free(md);
	close_sink(n, &s);
}

GS_TEST(marks_names_and_short_records)
{
	struct sink s = { 0 };
	struct gs_nvtx_rows *n = open_sink(&s);
	struct gs_nvtx_event e = { 0 };
	char *md;

	call(n, GS_NVTX_MARK, 11, 0, 0, 1000, "checkpoint");
	GS_EXPECT(strstr(s.text, "\"ph\":\"i\",\"name\":\"checkpoint\"") &&
		  strstr(s.text, "\"s\":\"t\""));
	call(n, GS_NVTX_PUSH, 11, 0, 0, 1000, NULL);
	call(n, GS_NVTX_POP, 11, 0, 0, 2000, NULL);
	GS_EXPECT(strstr(s.text, "\"name\":\"[unnamed range]\"") != NULL);
	/* a thread naming itself is passed on */
	call(n, GS_NVTX_NAME_THREAD, 11, 0, 11, 3000, "worker");
	GS_EXPECT_EQ(s.names, 1);
	/* a process renaming in a loop: 1024 names, the rest counted */
	for (int i = 0; i < 1100; i++)
		call(n, GS_NVTX_NAME_THREAD, 11, 0, 11, 3000, "again");
	GS_EXPECT_EQ(s.names, 1024);
	/* shorter than the struct: counted, nothing read */
	e.hdr = (struct gs_event_hdr){ .type = GS_EV_NVTX, .size = 40, .pid = 10, .tid = 11 };
	gs_nvtx_rows__event(n, &e.hdr, 40);
	md = metadata(n);
	GS_EXPECT(strstr(md, "\"malformed\":1") && strstr(md, "\"marks\":1") &&
		  strstr(md, "\"beyond_open_cap\":77"));
	free(md);
	close_sink(n, &s);
}

GS_TEST(pushes_past_a_process_cap_are_counted_others_kept)
{
	struct sink s = { 0 };
	struct gs_nvtx_rows *n = open_sink(&s);
	char *md;

	for (int i = 0; i < 1025; i++)
		call(n, GS_NVTX_PUSH, 11, 0, 0, 1000 + (uint64_t)i, "deep");
	cur_pid = 20;
	call(n, GS_NVTX_PUSH, 21, 0, 0, 5000, "another process");
	cur_pid = 10;
	md = metadata(n);
	GS_EXPECT(strstr(md, "\"beyond_open_cap\":1") != NULL);
	free(md);
	gs_nvtx_rows__finish(n, 10000);
	GS_EXPECT_EQ(s.events, 1025);
	GS_EXPECT_EQ(count(s.text, "\"name\":\"another process\""), 1);
	close_sink(n, &s);
}

GS_TEST_MAIN(pop_closes_the_newest_push_of_its_domain_on_its_thread,
	     start_and_end_pair_across_threads_by_id, marks_names_and_short_records,
	     pushes_past_a_process_cap_are_counted_others_kept)
