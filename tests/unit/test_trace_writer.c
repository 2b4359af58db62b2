// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_trace_writer.c: rendered and pushed events come out in timestamp order, metadata last. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stitch/trace_writer.h"
#include "tests/unit/harness.h"

struct doc {
	char *buf;
	size_t len;
	FILE *f;
};

static struct gs_trace_writer *open_doc(struct doc *d, uint64_t window_ns)
{
	d->buf = NULL;
	d->f = open_memstream(&d->buf, &d->len);
	return d->f ? gs_trace_writer__new(d->f, window_ns) : NULL;
}

static void close_doc(struct doc *d)
{
	fclose(d->f);
	free(d->buf);
}

static int rendered(struct gs_trace_writer *w, const char *name, uint64_t ts_ns)
{
	struct gs_chrome_trace *t = gs_trace_writer__begin(w, ts_ns);

	gs_chrome_trace__event(t, "i", name, NULL, 1, 1, ts_ns);
	gs_chrome_trace__end_event(t);
	return gs_trace_writer__end(w);
}

GS_TEST(events_come_out_sorted_with_metadata_last)
{
	struct doc d;
	struct gs_trace_writer *w = open_doc(&d, 1000);
	const char pushed[] = "{\"ph\":\"i\",\"name\":\"b\",\"pid\":1,\"tid\":1,\"ts\":0.002}";
	const char *a, *b, *c, *meta;

	GS_EXPECT(w != NULL);
	GS_EXPECT_EQ(rendered(w, "c", 3000), 0);
	GS_EXPECT_EQ(rendered(w, "a", 1000), 0);
	GS_EXPECT_EQ(gs_trace_writer__push(w, 2000, pushed, strlen(pushed)), 0);
	gs_json__u64(gs_trace_writer__metadata(w), "answer", 42);
	gs_trace_writer__finish(w);
	GS_EXPECT_EQ(gs_trace_writer__events(w), 3);
	GS_EXPECT_EQ(gs_trace_writer__late(w), 0);
	GS_EXPECT_EQ(gs_trace_writer__max_held(w), 3);
	fflush(d.f);
	a = strstr(d.buf, "\"name\":\"a\"");
	b = strstr(d.buf, "\"name\":\"b\"");
	c = strstr(d.buf, "\"name\":\"c\"");
	meta = strstr(d.buf, "\"metadata\":{\"answer\":42}");
	GS_EXPECT(a && b && c && meta);
	GS_EXPECT(a < b && b < c && c < meta);
	/* each event after the first is separated from the one before by exactly one comma */
	GS_EXPECT(strstr(d.buf, "[\n{") != NULL);
	GS_EXPECT(strstr(d.buf, "}\n,{\"ph\":\"i\",\"name\":\"b\"") != NULL);
	GS_EXPECT(strstr(d.buf, ",,") == NULL);
	gs_trace_writer__free(w);
	close_doc(&d);
}

GS_TEST(advance_writes_only_what_left_the_window)
{
	struct doc d;
	struct gs_trace_writer *w = open_doc(&d, 1000);

	GS_EXPECT(w != NULL);
	rendered(w, "early", 1000);
	rendered(w, "later", 5000);
	gs_trace_writer__advance(w, 2500);
	fflush(d.f);
	GS_EXPECT(strstr(d.buf, "early") != NULL);
	GS_EXPECT(strstr(d.buf, "later") == NULL);
	GS_EXPECT_EQ(gs_trace_writer__events(w), 1);
	/* older than what was written: out at once, counted late */
	rendered(w, "late", 500);
	GS_EXPECT_EQ(gs_trace_writer__late(w), 1);
	gs_trace_writer__finish(w);
	fflush(d.f);
	GS_EXPECT(strstr(d.buf, "later") != NULL);
	GS_EXPECT_EQ(gs_trace_writer__events(w), 3);
	gs_trace_writer__free(w);
	close_doc(&d);
}

GS_TEST(timeless_events_go_out_at_once)
{
	struct doc d;
	struct gs_trace_writer *w = open_doc(&d, 1000);

	GS_EXPECT(w != NULL);
	rendered(w, "held", 1000);
	gs_chrome_trace__process_name(gs_trace_writer__trace(w), 7, "seven");
	fflush(d.f);
	GS_EXPECT(strstr(d.buf, "seven") != NULL);
	GS_EXPECT(strstr(d.buf, "held") == NULL);
	gs_trace_writer__finish(w);
	GS_EXPECT_EQ(gs_trace_writer__events(w), 2);
	gs_trace_writer__free(w);
	close_doc(&d);
}

static bool over_after_100(void *ctx)
{
	unsigned *asked = ctx;

	return ++*asked * 64 >= 100; /* asked every 64 events: the second time says "full" */
}

GS_TEST(a_watched_size_closes_the_window_between_events)
{
	struct doc d;
	struct gs_trace_writer *w = open_doc(&d, 0);
	unsigned asked = 0;

	GS_EXPECT(w != NULL);
	gs_trace_writer__watch_size(w, over_after_100, &asked);
	for (uint64_t i = 1; i <= 1000; i++)
		rendered(w, "e", i * 1000);
	gs_trace_writer__finish(w);
	/* 127 written before the second question closed it, no tick needed */
	GS_EXPECT_EQ(asked, 2);
	GS_EXPECT_EQ(gs_trace_writer__events(w), 127);
	GS_EXPECT_EQ(gs_trace_writer__not_written(w), 873);
	gs_trace_writer__free(w);
	close_doc(&d);
}

GS_TEST_MAIN(events_come_out_sorted_with_metadata_last, advance_writes_only_what_left_the_window,
	     timeless_events_go_out_at_once, a_watched_size_closes_the_window_between_events)
