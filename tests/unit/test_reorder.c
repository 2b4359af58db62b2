// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_reorder.c: the reorder window: order, stable ties, late events, advance and flush. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include "stitch/reorder.h"
#include "tests/unit/harness.h"

#define MAX_OUT 4096

/* what the emit callback saw, in order */
struct sink {
	size_t nr;
	uint64_t ts[MAX_OUT];
	int id[MAX_OUT];
	size_t len[MAX_OUT];
};

static void record(void *ctx, const void *rec, size_t len, uint64_t ts_ns)
{
	struct sink *s = ctx;
	int id = -1;

	if (s->nr >= MAX_OUT)
		return;
	if (len == sizeof(id))
		memcpy(&id, rec, sizeof(id));
	s->ts[s->nr] = ts_ns;
	s->id[s->nr] = id;
	s->len[s->nr] = len;
	s->nr++;
}

static int push(struct gs_reorder *r, uint64_t ts, int id)
{
	return gs_reorder__push(r, ts, &id, sizeof(id));
}

GS_TEST(new_rejects_missing_callback)
{
	errno = 0;
	GS_EXPECT(gs_reorder__new(10, NULL, NULL) == NULL);
	GS_EXPECT_EQ(errno, EINVAL);
	gs_reorder__free(NULL); /* accepts NULL */
}

GS_TEST(flush_emits_in_timestamp_order)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(1000, record, &s);
	const uint64_t ts[] = { 50, 10, 40, 20, 30 };

	if (!GS_EXPECT(r != NULL))
		return;
	for (int i = 0; i < 5; i++)
		GS_EXPECT_EQ(push(r, ts[i], i), 0);
	GS_EXPECT_EQ(gs_reorder__held(r), 5);
	GS_EXPECT_EQ(s.nr, 0);
	gs_reorder__flush(r);
	GS_EXPECT_EQ(gs_reorder__held(r), 0);
	if (GS_EXPECT_EQ(s.nr, 5)) {
		GS_EXPECT_EQ(s.ts[0], 10);
		GS_EXPECT_EQ(s.id[0], 1);
		GS_EXPECT_EQ(s.ts[1], 20);
		GS_EXPECT_EQ(s.id[1], 3);
		GS_EXPECT_EQ(s.ts[2], 30);
		GS_EXPECT_EQ(s.id[2], 4);
		GS_EXPECT_EQ(s.ts[3], 40);
		GS_EXPECT_EQ(s.id[3], 2);
		GS_EXPECT_EQ(s.ts[4], 50);
		GS_EXPECT_EQ(s.id[4], 0);
	}
	GS_EXPECT_EQ(gs_reorder__late(r), 0);
	GS_EXPECT_EQ(gs_reorder__emitted(r), 5);
	GS_EXPECT_EQ(gs_reorder__max_held(r), 5);
	gs_reorder__free(r);
}

GS_TEST(ties_keep_push_order)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(100, record, &s);

	if (!GS_EXPECT(r != NULL))
		return;
	/* enough equal timestamps that the heap has to move them around */
	for (int i = 0; i < 40; i++)
		push(r, i % 2 ? 7 : 5, i);
	gs_reorder__flush(r);
	if (!GS_EXPECT_EQ(s.nr, 40))
		goto out;
	for (int i = 0; i < 20; i++) {
		GS_EXPECT_EQ(s.ts[i], 5);
		GS_EXPECT_EQ(s.id[i], 2 * i);
		GS_EXPECT_EQ(s.ts[20 + i], 7);
		GS_EXPECT_EQ(s.id[20 + i], 2 * i + 1);
	}
out:
	gs_reorder__free(r);
}

GS_TEST(advance_emits_only_what_left_the_window)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(100, record, &s);

	if (!GS_EXPECT(r != NULL))
		return;
	push(r, 300, 3);
	push(r, 100, 1);
	push(r, 200, 2);
	gs_reorder__advance(r, 50); /* now < window: nothing, and no underflow */
	GS_EXPECT_EQ(s.nr, 0);
	gs_reorder__advance(r, 199); /* 100 + 100 > 199 */
	GS_EXPECT_EQ(s.nr, 0);
	gs_reorder__advance(r, 200); /* 100 + 100 <= 200: the boundary is inclusive */
	if (GS_EXPECT_EQ(s.nr, 1))
		GS_EXPECT_EQ(s.id[0], 1);
	GS_EXPECT_EQ(gs_reorder__held(r), 2);
	gs_reorder__advance(r, 350);
	if (GS_EXPECT_EQ(s.nr, 2))
		GS_EXPECT_EQ(s.id[1], 2);
	gs_reorder__advance(r, 349); /* the clock going back emits nothing */
	GS_EXPECT_EQ(s.nr, 2);
	gs_reorder__flush(r);
	if (GS_EXPECT_EQ(s.nr, 3))
		GS_EXPECT_EQ(s.id[2], 3);
	GS_EXPECT_EQ(gs_reorder__late(r), 0);
	gs_reorder__free(r);
}

GS_TEST(advance_near_uint64_max_does_not_wrap)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(100, record, &s);

	if (!GS_EXPECT(r != NULL))
		return;
	push(r, UINT64_MAX - 10, 1);
	gs_reorder__advance(r, UINT64_MAX);
	GS_EXPECT_EQ(s.nr, 0); /* ts + window would wrap to a small number */
	push(r, 5, 0);
	gs_reorder__advance(r, UINT64_MAX);
	if (GS_EXPECT_EQ(s.nr, 1))
		GS_EXPECT_EQ(s.id[0], 0);
	gs_reorder__free(r);
}

GS_TEST(late_event_is_emitted_at_once_and_counted)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(10, record, &s);

	if (!GS_EXPECT(r != NULL))
		return;
	push(r, 100, 1);
	push(r, 200, 2);
	gs_reorder__advance(r, 150); /* emits 100 */
	GS_EXPECT_EQ(s.nr, 1);
	GS_EXPECT_EQ(push(r, 50, 3), 0); /* older than 100: late */
	GS_EXPECT_EQ(gs_reorder__late(r), 1);
	GS_EXPECT_EQ(gs_reorder__held(r), 1);
	if (GS_EXPECT_EQ(s.nr, 2)) {
		GS_EXPECT_EQ(s.id[1], 3);
		GS_EXPECT_EQ(s.ts[1], 50);
	}
	/* equal to the last emitted is not late: still in order */
	push(r, 100, 4);
	GS_EXPECT_EQ(gs_reorder__late(r), 1);
	/* a late event does not move the watermark back: 60 is still late */
	push(r, 60, 5);
	GS_EXPECT_EQ(gs_reorder__late(r), 2);
	gs_reorder__flush(r);
	if (GS_EXPECT_EQ(s.nr, 5)) {
		GS_EXPECT_EQ(s.id[2], 5);
		GS_EXPECT_EQ(s.id[3], 4);
		GS_EXPECT_EQ(s.ts[3], 100);
		GS_EXPECT_EQ(s.id[4], 2);
	}
	GS_EXPECT_EQ(gs_reorder__emitted(r), 5);
	gs_reorder__free(r);
}

GS_TEST(records_are_copied_with_their_length)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(0, record, &s);
	int id = 42;
	char big[300] = { 0 };

	if (!GS_EXPECT(r != NULL))
		return;
	gs_reorder__push(r, 2, &id, sizeof(id));
	id = 7; /* the window holds its own copy */
	gs_reorder__push(r, 3, big, sizeof(big));
	gs_reorder__push(r, 1, NULL, 0);
	gs_reorder__flush(r);
	if (GS_EXPECT_EQ(s.nr, 3)) {
		GS_EXPECT_EQ(s.len[0], 0);
		GS_EXPECT_EQ(s.id[1], 42);
		GS_EXPECT_EQ(s.len[2], sizeof(big));
	}
	gs_reorder__free(r);
}

GS_TEST(free_with_held_events_emits_nothing)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(1000, record, &s);

	if (!GS_EXPECT(r != NULL))
		return;
	for (int i = 0; i < 100; i++)
		push(r, 1000 - i, i);
	gs_reorder__free(r); /* no leak under ASan, no callback */
	GS_EXPECT_EQ(s.nr, 0);
}

/* many interleaved, jittered streams: the output is sorted and every event comes out once */
GS_TEST(many_jittered_events_come_out_sorted)
{
	static struct sink s;
	const uint64_t window = 5000;
	struct gs_reorder *r = gs_reorder__new(window, record, &s);
	static unsigned char seen[MAX_OUT];
	uint64_t now = 0;
	unsigned int seed = 12345;
	bool sorted = true;

	if (!GS_EXPECT(r != NULL))
		return;
	for (int i = 0; i < MAX_OUT; i++) {
		/* event i happened at i*10 ns, give or take less than the window */
		uint64_t ts = (uint64_t)i * 10 + 10000;

		seed = seed * 1103515245 + 12345;
		ts -= (seed >> 16) % 4000;
		now = (uint64_t)i * 10 + 10000;
		push(r, ts, i);
		if (i % 16 == 0)
			gs_reorder__advance(r, now);
	}
	GS_EXPECT(gs_reorder__max_held(r) < MAX_OUT / 4); /* the window bounded what it held */
	gs_reorder__flush(r);
	GS_EXPECT_EQ(gs_reorder__late(r), 0);
	if (!GS_EXPECT_EQ(s.nr, MAX_OUT))
		goto out;
	for (size_t i = 0; i < s.nr; i++) {
		if (i && s.ts[i] < s.ts[i - 1])
			sorted = false;
		if (s.id[i] >= 0 && s.id[i] < MAX_OUT)
			seen[s.id[i]]++;
	}
	GS_EXPECT(sorted);
	for (int i = 0; i < MAX_OUT; i++) {
		if (!GS_EXPECT_EQ(seen[i], 1))
			break;
	}
out:
	gs_reorder__free(r);
}

GS_TEST(byte_cap_emits_the_oldest_early)
{
	static struct sink s;
	struct gs_reorder *r = gs_reorder__new(1000, record, &s);
	char big[1000] = { 0 };
	size_t peak;

	if (!GS_EXPECT(r))
		return;
	gs_reorder__cap_bytes(r, 3000); /* room for two of the 1000-byte events, not three */
	for (int i = 0; i < 10; i++)
		GS_EXPECT_EQ(gs_reorder__push(r, 100 + (uint64_t)i, big, sizeof(big)), 0);
	/* the window (1000 ns) never passed: without the cap nothing would have gone out */
	GS_EXPECT_EQ(s.nr, 8);
	GS_EXPECT_EQ(gs_reorder__held(r), 2);
	GS_EXPECT_EQ(gs_reorder__early(r), 8);
	for (size_t i = 0; i < s.nr; i++)
		GS_EXPECT_EQ(s.ts[i], 100 + i); /* oldest first */
	peak = gs_reorder__peak_bytes(r);
	GS_EXPECT(peak > 3000 && peak < 4500); /* past the cap by one event at most */
	/* an event older than those written early: written at once, counted late, not lost */
	GS_EXPECT_EQ(push(r, 50, 7), 0);
	GS_EXPECT_EQ(gs_reorder__late(r), 1);
	GS_EXPECT_EQ(s.ts[8], 50);
	gs_reorder__flush(r);
	GS_EXPECT_EQ(s.nr, 11);
	gs_reorder__free(r);
}

GS_TEST(windows_sharing_a_budget_stay_under_it_together)
{
	static struct sink sa, sb;
	struct gs_reorder_budget budget = { .max = 3000 };
	struct gs_reorder *a = gs_reorder__new(1000, record, &sa);
	struct gs_reorder *b = gs_reorder__new(1000, record, &sb);
	char big[1000] = { 0 };

	if (!GS_EXPECT(a && b))
		goto out;
	gs_reorder__share_budget(a, &budget);
	gs_reorder__share_budget(b, &budget);
	/* a takes the room of two events; b's pushes then find none: b writes its own, a keeps its */
	for (int i = 0; i < 2; i++)
		GS_EXPECT_EQ(gs_reorder__push(a, 100 + (uint64_t)i, big, sizeof(big)), 0);
	for (int i = 0; i < 5; i++)
		GS_EXPECT_EQ(gs_reorder__push(b, 200 + (uint64_t)i, big, sizeof(big)), 0);
	GS_EXPECT_EQ(sa.nr, 0);
	GS_EXPECT_EQ(gs_reorder__held(a), 2);
	GS_EXPECT_EQ(sb.nr, 5);
	GS_EXPECT_EQ(gs_reorder__held(b), 0);
	GS_EXPECT_EQ(gs_reorder__early(b), 5);
	GS_EXPECT(budget.held <= budget.max);
	GS_EXPECT(budget.peak > 3000 && budget.peak < 4500);  /* past it by one event at most */
	GS_EXPECT_EQ(gs_reorder__peak_bytes(b), budget.peak); /* the windows' peak together */
	/* a's events gone (freed here), b holds two again */
	gs_reorder__free(a);
	a = NULL;
	GS_EXPECT_EQ(budget.held, 0);
	for (int i = 0; i < 2; i++)
		GS_EXPECT_EQ(gs_reorder__push(b, 300 + (uint64_t)i, big, sizeof(big)), 0);
	GS_EXPECT_EQ(gs_reorder__held(b), 2);
	GS_EXPECT_EQ(sb.nr, 5);
out:
	gs_reorder__free(a);
	gs_reorder__free(b);
	GS_EXPECT_EQ(budget.held, 0);
}

GS_TEST_MAIN(byte_cap_emits_the_oldest_early, windows_sharing_a_budget_stay_under_it_together,
	     new_rejects_missing_callback, flush_emits_in_timestamp_order, ties_keep_push_order,
	     advance_emits_only_what_left_the_window, advance_near_uint64_max_does_not_wrap,
	     late_event_is_emitted_at_once_and_counted, records_are_copied_with_their_length,
	     free_with_held_events_emits_nothing, many_jittered_events_come_out_sorted)
