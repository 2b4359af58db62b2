// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_busy_union.c: the online union against a brute-force one, exact or within its bound. */
#include <stdlib.h>
#include <string.h>
#include "user/busy_union.h"
#include "tests/unit/harness.h"

#define SPAN 100000

/* The true union of n intervals in [0, SPAN), by marking every ns. */
static uint64_t brute_union(const struct gs_busy_piece *iv, size_t n)
{
	static unsigned char covered[SPAN];
	uint64_t busy = 0;

	memset(covered, 0, sizeof(covered));
	for (size_t i = 0; i < n; i++)
		for (uint64_t t = iv[i].start; t < iv[i].end; t++)
			covered[t] = 1;
	for (size_t t = 0; t < SPAN; t++)
		busy += covered[t];
	return busy;
}

/* n random intervals (lengths up to max_len) added in random order to a fresh union. */
static void random_run(unsigned int seed, size_t n, uint64_t max_len, struct gs_busy_union *u,
		       uint64_t *truth)
{
	struct gs_busy_piece *iv = calloc(n, sizeof(*iv));

	srand(seed);
	memset(u, 0, sizeof(*u));
	for (size_t i = 0; i < n; i++) {
		uint64_t start = (uint64_t)rand() % (SPAN - max_len);

		iv[i] = (struct gs_busy_piece){ start, start + 1 + (uint64_t)rand() % max_len };
		gs_busy_union__add(u, iv[i].start, iv[i].end);
	}
	*truth = brute_union(iv, n);
	free(iv);
}

GS_TEST(exact_while_the_pieces_fit)
{
	struct gs_busy_union u;
	uint64_t truth;

	/* 60 short intervals leave at most 60 pieces: nothing merged, nothing estimated */
	for (unsigned int seed = 1; seed <= 50; seed++) {
		random_run(seed, 60, 500, &u, &truth);
		GS_EXPECT_EQ(u.err_ns, 0);
		GS_EXPECT_EQ(gs_busy_union__busy(&u), truth);
	}
}

GS_TEST(within_the_bound_past_the_cap)
{
	struct gs_busy_union u;
	uint64_t truth;
	int merged = 0;

	for (unsigned int seed = 1; seed <= 50; seed++) {
		random_run(seed, 2000, 40, &u, &truth);
		merged += u.err_ns > 0;
		GS_EXPECT(u.nr <= GS_BUSY_PIECES);
		GS_EXPECT(gs_busy_union__busy(&u) >= truth);
		GS_EXPECT(gs_busy_union__busy(&u) - u.err_ns <= truth);
	}
	GS_EXPECT_EQ(merged, 50); /* the bound was really used */
}

GS_TEST(overlaps_touching_and_order)
{
	struct gs_busy_union u = { 0 };

	gs_busy_union__add(&u, 800, 1000);
	gs_busy_union__add(&u, 200, 600);
	gs_busy_union__add(&u, 0, 400);
	gs_busy_union__add(&u, 1000, 1100); /* touches: one piece */
	gs_busy_union__add(&u, 50, 50);	    /* empty */
	gs_busy_union__add(&u, 90, 10);	    /* backwards: empty */
	GS_EXPECT_EQ(u.nr, 2);
	GS_EXPECT_EQ(gs_busy_union__busy(&u), 900);
	GS_EXPECT_EQ(u.first, 0);
	GS_EXPECT_EQ(u.last, 1100);
	GS_EXPECT_EQ(u.count, 6);
	/* one interval spanning everything swallows every piece */
	gs_busy_union__add(&u, 0, 2000);
	GS_EXPECT_EQ(u.nr, 1);
	GS_EXPECT_EQ(gs_busy_union__busy(&u), 2000);
}

GS_TEST(a_million_disjoint_intervals_in_fixed_memory)
{
	struct gs_busy_union u = { 0 };

	/* 100 ns busy of every 1000: the smallest gaps are all 900, the bound says so */
	for (uint64_t i = 0; i < 1000000; i++)
		gs_busy_union__add(&u, i * 1000, i * 1000 + 100);
	GS_EXPECT(u.nr <= GS_BUSY_PIECES);
	GS_EXPECT_EQ(gs_busy_union__busy(&u) - u.err_ns, 100000000);
}

GS_TEST_MAIN(exact_while_the_pieces_fit, within_the_bound_past_the_cap, overlaps_touching_and_order,
	     a_million_disjoint_intervals_in_fixed_memory)
