// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_gpu_rows.c: GPU rows held until their launch slice is seen, linked, in Kineto form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/timeline/gpu_rows.h"
#include "profilers/cupti/cupti_abi.h"
#include "tests/unit/harness.h"

#define DELAY GS_GPU_ROWS_LINK_DELAY_NS

/* The events gpu_rows renders, appended to one text. */
struct sink {
	struct gs_chrome_trace trace;
	FILE *f;
	char *text;
	size_t len;
	int events;
};

static struct gs_chrome_trace *sink_begin(void *ctx, pid_t pid, uint64_t ts_ns)
{
	struct sink *s = ctx;

	(void)pid;
	gs_json__init(&s->trace.json, s->f);
	return &s->trace;
}

static void sink_end(void *ctx)
{
	struct sink *s = ctx;

	s->events++;
	fflush(s->f);
}

static int count(const char *text, const char *what)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p++)
		n++;
	return n;
}

static void put32(struct gs_gpu_record *e, size_t off, uint32_t v)
{
	memcpy(e->rec + off, &v, sizeof(v));
}

static void put64(struct gs_gpu_record *e, size_t off, uint64_t v)
{
	memcpy(e->rec + off, &v, sizeof(v));
}

/* A kernel record of pid 10 arriving at arrived_ns, for correlation id corr. */
static void kernel(struct gs_gpu_record *e, uint32_t corr, uint64_t arrived_ns)
{
	memset(e, 0, sizeof(*e));
	e->hdr = (struct gs_event_hdr){ .type = GS_EV_GPU_RECORD,
					.size = sizeof(*e),
					.ts_ns = arrived_ns,
					.pid = 10,
					.tid = 10 };
	e->size = GS_CUPTI_KERNEL_SIZE;
	put32(e, GS_CUPTI_OFF_KIND, GS_CUPTI_KIND_CONCURRENT_KERNEL);
	put64(e, GS_CUPTI_KERNEL_START, 2000);
	put64(e, GS_CUPTI_KERNEL_END, 3500);
	put32(e, GS_CUPTI_KERNEL_STREAM, 7);
	put32(e, GS_CUPTI_KERNEL_CORRELATION, corr);
	strcpy(e->name, "_Z4stepv");
	e->name_len = sizeof("_Z4stepv");
}

static void api(struct gs_gpu_rows *g, uint32_t corr, uint64_t ts)
{
	struct gs_gpu_api a = {
		.hdr = { .type = GS_EV_GPU_API,
			 .size = sizeof(a),
			 .ts_ns = ts,
			 .pid = 10,
			 .tid = 11 },
		.correlation = corr,
		.domain = GS_CUPTI_DOMAIN_RUNTIME_API,
	};

	GS_EXPECT_EQ(gs_gpu_rows__event(g, &a.hdr, sizeof(a)), 0);
}

/* The CPU slice [entry, exit] of thread 11: its correlation id as the record's args have it. */
static uint32_t slice(struct gs_gpu_rows *g, uint64_t entry, uint64_t exit)
{
	struct gs_event_hdr hdr = { .ts_ns = exit, .pid = 10, .tid = 11 };
	struct gs_json j;
	FILE *f = fopen("/dev/null", "w");
	uint32_t id;

	gs_json__init(&j, f);
	gs_json__begin_object(&j, NULL);
	id = gs_gpu_rows__slice_args(g, &j, &hdr, entry, false);
	gs_json__end_object(&j);
	fclose(f);
	return id;
}

GS_TEST(record_before_its_slice_is_held_then_linked)
{
	static struct gs_gpu_record e;
	struct sink s = { 0 };
	struct gs_gpu_rows *g;

	s.f = open_memstream(&s.text, &s.len);
	g = gs_gpu_rows__new(&(struct gs_gpu_rows_emit){ &s, sink_begin, sink_end, NULL, NULL });
	if (!GS_EXPECT(g && s.f))
		return;
	api(g, 42, 150);
	/* the record comes first (CUPTI flushed while the call was still inside) */
	kernel(&e, 42, 160);
	GS_EXPECT_EQ(gs_gpu_rows__event(g, &e.hdr, sizeof(e)), 0);
	gs_gpu_rows__advance(g, 160 + DELAY - 1);
	GS_EXPECT_EQ(s.events, 0);
	GS_EXPECT_EQ(slice(g, 100, 200), 42);
	gs_gpu_rows__advance(g, 160 + DELAY);
	fflush(s.f);
	/* track names, the kernel row, the flow's end */
	GS_EXPECT_EQ(s.events, 4);
	GS_EXPECT_EQ(count(s.text, "\"name\":\"step()\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7"),
		     1);
	GS_EXPECT_EQ(count(s.text, "\"dur\":1.500"), 1);
	GS_EXPECT_EQ(count(s.text,
			   "\"ph\":\"f\",\"name\":\"ac2g\",\"cat\":\"ac2g\",\"pid\":0,\"tid\":7"),
		     1);
	GS_EXPECT_EQ(count(s.text, "\"correlation\":42"), 1);
	gs_gpu_rows__free(g);
	fclose(s.f);
	free(s.text);
}

GS_TEST(unlaunched_record_counts_as_not_linked)
{
	static struct gs_gpu_record e;
	struct sink s = { 0 };
	struct gs_gpu_rows *g;
	char *md = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&md, &len);
	struct gs_json j;

	s.f = open_memstream(&s.text, &s.len);
	g = gs_gpu_rows__new(&(struct gs_gpu_rows_emit){ &s, sink_begin, sink_end, NULL, NULL });
	if (!GS_EXPECT(g && s.f && f))
		return;
	kernel(&e, 7, 100);
	gs_gpu_rows__event(g, &e.hdr, sizeof(e));
	/* its process is gone: written at once, without waiting */
	gs_gpu_rows__proc_gone(g, 10);
	fflush(s.f);
	GS_EXPECT_EQ(count(s.text, "\"ph\":\"X\""), 1);
	GS_EXPECT_EQ(count(s.text, "\"ph\":\"f\""), 0);
	gs_json__init(&j, f);
	gs_json__begin_object(&j, NULL);
	gs_gpu_rows__metadata(g, &j);
	gs_json__end_object(&j);
	fclose(f);
	GS_EXPECT(strstr(md, "\"records\":1,\"linked\":0,\"not_linked\":1"));
	free(md);
	gs_gpu_rows__free(g);
	fclose(s.f);
	free(s.text);
}

GS_TEST(tracks_past_the_cap_are_counted_not_written)
{
	static struct gs_gpu_record e;
	struct sink s = { 0 };
	struct gs_gpu_rows *g;
	char *md = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&md, &len);
	struct gs_json j;

	s.f = open_memstream(&s.text, &s.len);
	g = gs_gpu_rows__new(&(struct gs_gpu_rows_emit){ &s, sink_begin, sink_end, NULL, NULL });
	if (!GS_EXPECT(g && s.f && f))
		return;
	/* 1100 streams the library names: "GPU 0" and 1022 stream tracks fit in 1024 */
	for (uint32_t i = 0; i < 1100; i++) {
		kernel(&e, i + 1, 100);
		put32(&e, GS_CUPTI_KERNEL_STREAM, i + 1);
		gs_gpu_rows__event(g, &e.hdr, sizeof(e));
	}
	/* and one on device 64, past the devices a summary or a trace keeps */
	kernel(&e, 5000, 100);
	put32(&e, GS_CUPTI_KERNEL_DEVICE, 64);
	gs_gpu_rows__event(g, &e.hdr, sizeof(e));
	gs_gpu_rows__proc_gone(g, 10);
	fflush(s.f);
	GS_EXPECT_EQ(count(s.text, "\"ph\":\"X\""), 1022);
	GS_EXPECT_EQ(count(s.text, "\"thread_name\""), 1022);
	gs_json__init(&j, f);
	gs_json__begin_object(&j, NULL);
	gs_gpu_rows__metadata(g, &j);
	gs_json__end_object(&j);
	fclose(f);
	GS_EXPECT(strstr(md, "\"records\":1101,"));
	GS_EXPECT(strstr(md, "\"beyond_track_cap\":79,"));
	free(md);
	gs_gpu_rows__free(g);
	fclose(s.f);
	free(s.text);
}

/* The number after the text's last "id": (the flow event just written). */
static unsigned long long last_id(struct sink *s)
{
	const char *p = NULL;

	fflush(s->f);
	for (const char *q = s->text; q && (q = strstr(q, "\"id\":")); q++)
		p = q;
	return p ? strtoull(p + strlen("\"id\":"), NULL, 10) : 0;
}

/* pid's call slice with correlation id corr, and its flow's start; returns the flow's id. */
static unsigned long long launch(struct gs_gpu_rows *g, struct sink *s, pid_t pid, uint32_t corr)
{
	struct gs_gpu_api a = {
		.hdr = { .type = GS_EV_GPU_API,
			 .size = sizeof(a),
			 .ts_ns = 150,
			 .pid = pid,
			 .tid = pid },
		.correlation = corr,
		.domain = GS_CUPTI_DOMAIN_RUNTIME_API,
	};
	struct gs_event_hdr hdr = { .ts_ns = 200, .pid = pid, .tid = pid };
	FILE *f = fopen("/dev/null", "w");
	struct gs_json j;
	uint32_t id;

	GS_EXPECT_EQ(gs_gpu_rows__event(g, &a.hdr, sizeof(a)), 0);
	gs_json__init(&j, f);
	gs_json__begin_object(&j, NULL);
	id = gs_gpu_rows__slice_args(g, &j, &hdr, 100, false);
	gs_json__end_object(&j);
	fclose(f);
	GS_EXPECT_EQ(id, corr);
	gs_gpu_rows__slice_flow(g, &hdr, 100, id);
	return last_id(s);
}

/* pid's kernel record for corr, written at once; returns its flow end's id. */
static unsigned long long kernel_of(struct gs_gpu_rows *g, struct sink *s, pid_t pid, uint32_t corr)
{
	static struct gs_gpu_record e;

	kernel(&e, corr, 300);
	e.hdr.pid = e.hdr.tid = pid;
	GS_EXPECT_EQ(gs_gpu_rows__event(g, &e.hdr, sizeof(e)), 0);
	gs_gpu_rows__advance(g, 300 + DELAY);
	return last_id(s);
}

GS_TEST(same_correlation_in_two_processes_two_flows)
{
	unsigned long long start10, start20, reused;
	struct sink s = { 0 };
	struct gs_gpu_rows *g;

	s.f = open_memstream(&s.text, &s.len);
	g = gs_gpu_rows__new(&(struct gs_gpu_rows_emit){ &s, sink_begin, sink_end, NULL, NULL });
	if (!GS_EXPECT(g && s.f))
		return;
	/* CUPTI counts from 1 in each process: both launches have correlation id 5 */
	start10 = launch(g, &s, 10, 5);
	start20 = launch(g, &s, 20, 5);
	GS_EXPECT(start10 != start20);
	GS_EXPECT(start10 && start20 && start10 < (1ULL << 53) && start20 < (1ULL << 53));
	/* each kernel's flow ends at its own process's launch */
	GS_EXPECT_EQ(kernel_of(g, &s, 20, 5), start20);
	GS_EXPECT_EQ(kernel_of(g, &s, 10, 5), start10);
	/* the args keep CUPTI's id, which Holistic Trace Analysis links by */
	GS_EXPECT_EQ(count(s.text, "\"correlation\":5"), 2);
	/* pid 10 gone, then again (an exec, or the pid reused): its ids are new ones */
	gs_gpu_rows__proc_gone(g, 10);
	reused = launch(g, &s, 10, 5);
	GS_EXPECT(reused != start10 && reused != start20);
	GS_EXPECT_EQ(kernel_of(g, &s, 10, 5), reused);
	gs_gpu_rows__free(g);
	fclose(s.f);
	free(s.text);
}

GS_TEST_MAIN(tracks_past_the_cap_are_counted_not_written,
	     record_before_its_slice_is_held_then_linked, unlaunched_record_counts_as_not_linked,
	     same_correlation_in_two_processes_two_flows)
