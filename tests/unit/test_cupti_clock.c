// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_cupti_clock.c: CUPTI's times onto CLOCK_MONOTONIC, whichever clock CUPTI kept. */
#include "profilers/cuda/cupti_clock.h"
#include "tests/unit/harness.h"

/* a machine up 2 hours, its wall clock in November 2026 */
#define MONO	   (7200ULL * 1000000000ULL)
#define TO_REAL_NS 1795548945838842886LL

GS_TEST(timestamp_callback_times_are_kept_as_they_are)
{
	struct gs_cupti_clock c;
	uint64_t start = MONO, end = MONO + 1000;

	gs_cupti_clock__init(&c, TO_REAL_NS);
	gs_cupti_clock__map(&c, &start, &end);
	GS_EXPECT_EQ(start, MONO);
	GS_EXPECT_EQ(end, MONO + 1000);
	gs_cupti_clock__check(&c, MONO - 100, MONO + 30, MONO + 100);
	GS_EXPECT_EQ(c.checks, 1);
	GS_EXPECT_EQ(c.max_error_ns, 130); /* 30 off the middle, and half the 200 ns window */
	GS_EXPECT_STR_EQ(gs_cupti_clock__method(&c), "cupti_timestamp_callback_clock_monotonic");
}

GS_TEST(cuptis_realtime_is_shifted_by_the_recordings_offset)
{
	struct gs_cupti_clock c;
	uint64_t start = MONO + TO_REAL_NS, end = MONO + TO_REAL_NS + 2000;

	gs_cupti_clock__init(&c, TO_REAL_NS);
	gs_cupti_clock__map(&c, &start, &end);
	GS_EXPECT_EQ(start, MONO);
	GS_EXPECT_EQ(end, MONO + 2000);
	gs_cupti_clock__check(&c, MONO - 50, MONO + TO_REAL_NS - 20, MONO + 50);
	GS_EXPECT_EQ(c.max_error_ns, 70);
	GS_EXPECT_STR_EQ(gs_cupti_clock__method(&c), "cupti_clock_realtime_shifted");
	start = MONO;
	end = MONO + 1;
	gs_cupti_clock__map(&c, &start, &end); /* another process, with the callback */
	GS_EXPECT_EQ(start, MONO);
	GS_EXPECT_STR_EQ(gs_cupti_clock__method(&c),
			 "cupti_timestamp_callback_clock_monotonic+cupti_clock_realtime_shifted");
}

GS_TEST(a_check_with_its_readings_reversed_is_ignored)
{
	struct gs_cupti_clock c;

	gs_cupti_clock__init(&c, TO_REAL_NS);
	gs_cupti_clock__check(&c, MONO + 100, MONO, MONO);
	GS_EXPECT_EQ(c.checks, 0);
	GS_EXPECT_EQ(c.max_error_ns, 0);
}

GS_TEST_MAIN(timestamp_callback_times_are_kept_as_they_are,
	     cuptis_realtime_is_shifted_by_the_recordings_offset,
	     a_check_with_its_readings_reversed_is_ignored)
