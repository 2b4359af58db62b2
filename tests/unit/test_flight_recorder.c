// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_flight_recorder.c: windows by age and by count, order, and forgetting a process. */
#include "profilers/daemon/flight_recorder.h"
#include "tests/unit/harness.h"

#define SEC 1000000000ULL

struct seen {
	uint64_t ts[64];
	size_t n;
};

static void collect(void *ctx, const struct gs_flight_event *e)
{
	struct seen *s = ctx;

	if (s->n < 64)
		s->ts[s->n++] = e->ts_ns;
}

static void add(struct gs_flight_recorder *fr, pid_t pid, uint64_t ts)
{
	struct gs_flight_event e = { .ts_ns = ts, .entry_ts_ns = ts, .size = 1 };

	GS_EXPECT_EQ(gs_flight_recorder__add(fr, pid, &e), 0);
}

GS_TEST(keeps_the_window_in_order)
{
	struct gs_flight_recorder *fr = gs_flight_recorder__new(10 * SEC, 1000);
	struct seen s = { .n = 0 };

	for (uint64_t t = 1; t <= 30; t++)
		add(fr, 7, t * SEC);
	gs_flight_recorder__each(fr, 7, 30 * SEC, collect, &s);
	GS_EXPECT_EQ(s.n, 11); /* 20 s .. 30 s */
	GS_EXPECT_EQ(s.ts[0], 20 * SEC);
	GS_EXPECT_EQ(s.ts[10], 30 * SEC);
	/* asked later, the old part of the window is left out */
	s.n = 0;
	gs_flight_recorder__each(fr, 7, 35 * SEC, collect, &s);
	GS_EXPECT_EQ(s.n, 6);
	GS_EXPECT_EQ(s.ts[0], 25 * SEC);
	gs_flight_recorder__free(fr);
}

GS_TEST(count_bound_drops_the_oldest)
{
	struct gs_flight_recorder *fr = gs_flight_recorder__new(1000 * SEC, 5);
	struct seen s = { .n = 0 };

	for (uint64_t t = 1; t <= 12; t++)
		add(fr, 7, t);
	gs_flight_recorder__each(fr, 7, 12, collect, &s);
	GS_EXPECT_EQ(s.n, 5);
	GS_EXPECT_EQ(s.ts[0], 8);
	GS_EXPECT_EQ(s.ts[4], 12);
	gs_flight_recorder__free(fr);
}

GS_TEST(processes_apart_and_forgotten)
{
	struct gs_flight_recorder *fr = gs_flight_recorder__new(100 * SEC, 100);
	struct seen s = { .n = 0 };

	add(fr, 1, 1);
	add(fr, 2, 2);
	add(fr, 1, 3);
	gs_flight_recorder__each(fr, 1, 3, collect, &s);
	GS_EXPECT_EQ(s.n, 2);
	GS_EXPECT_EQ(s.ts[1], 3);
	gs_flight_recorder__forget(fr, 1);
	s.n = 0;
	gs_flight_recorder__each(fr, 1, 3, collect, &s);
	GS_EXPECT_EQ(s.n, 0);
	gs_flight_recorder__each(fr, 2, 3, collect, &s);
	GS_EXPECT_EQ(s.n, 1);
	gs_flight_recorder__free(fr);
}

GS_TEST(grows_across_the_ring_seam)
{
	struct gs_flight_recorder *fr = gs_flight_recorder__new(1000 * SEC, 256);
	struct seen s = { .n = 0 };

	/* wrap a small ring (64), then grow it: order must survive the copy */
	for (uint64_t t = 1; t <= 200; t++)
		add(fr, 3, t);
	gs_flight_recorder__each(fr, 3, 200, collect, &s);
	GS_EXPECT_EQ(s.n, 64); /* collect keeps the first 64 */
	GS_EXPECT_EQ(s.ts[0], 1);
	GS_EXPECT_EQ(s.ts[63], 64);
	gs_flight_recorder__free(fr);
}

GS_TEST_MAIN(keeps_the_window_in_order, count_bound_drops_the_oldest, processes_apart_and_forgotten,
	     grows_across_the_ring_seam)
