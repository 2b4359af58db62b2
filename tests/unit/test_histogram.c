// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_histogram.c: percentiles of known distributions within the documented bucket error. */
#include "tests/unit/harness.h"
#include "user/histogram.h"

static bool within(uint64_t got, uint64_t want, double rel)
{
	double d = (double)got - (double)want;

	return (d < 0 ? -d : d) <= rel * (double)want;
}

GS_TEST(empty_is_zero)
{
	struct gs_histogram h;

	gs_histogram__init(&h);
	GS_EXPECT_EQ(gs_histogram__quantile(&h, 0.5), 0);
}

GS_TEST(uniform_durations)
{
	static struct gs_histogram h;

	gs_histogram__init(&h);
	for (uint64_t v = 1; v <= 100000; v++)
		gs_histogram__add(&h, v * 1000); /* 1 us .. 100 ms */
	GS_EXPECT_EQ(h.count, 100000);
	GS_EXPECT_EQ(h.min, 1000);
	GS_EXPECT_EQ(h.max, 100000000);
	GS_EXPECT(within(gs_histogram__quantile(&h, 0.50), 50000000, 0.0625));
	GS_EXPECT(within(gs_histogram__quantile(&h, 0.99), 99000000, 0.0625));
	GS_EXPECT_EQ(gs_histogram__quantile(&h, 1.0), 100000000);
}

GS_TEST(small_values_are_exact)
{
	struct gs_histogram h;

	gs_histogram__init(&h);
	for (uint64_t v = 0; v < 16; v++)
		gs_histogram__add(&h, v);
	GS_EXPECT_EQ(gs_histogram__quantile(&h, 0.5), 7);
	GS_EXPECT_EQ(gs_histogram__quantile(&h, 1.0), 15);
}

GS_TEST(constant_samples_give_that_value)
{
	struct gs_histogram h;

	gs_histogram__init(&h);
	for (int i = 0; i < 100; i++)
		gs_histogram__add(&h, 2000000);
	GS_EXPECT_EQ(gs_histogram__quantile(&h, 0.5), 2000000);
	GS_EXPECT_EQ(gs_histogram__quantile(&h, 0.99), 2000000);
	GS_EXPECT_EQ(h.sum, 200000000);
}

GS_TEST(huge_values_fit)
{
	struct gs_histogram h;

	gs_histogram__init(&h);
	gs_histogram__add(&h, UINT64_MAX);
	gs_histogram__add(&h, 1ULL << 63);
	GS_EXPECT_EQ(gs_histogram__quantile(&h, 1.0), UINT64_MAX);
	GS_EXPECT(gs_histogram__quantile(&h, 0.5) >= 1ULL << 63);
}

GS_TEST_MAIN(empty_is_zero, uniform_durations, small_values_are_exact,
	     constant_samples_give_that_value, huge_values_fit)
