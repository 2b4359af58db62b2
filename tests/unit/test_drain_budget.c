// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_drain_budget.c: one loop turn reads a bounded number of records for a bounded time. */
#include <stdint.h>
#include "profilers/drain_budget.h"
#include "tests/unit/harness.h"

static uint64_t fake_now;
static unsigned fake_reads;

static uint64_t fake_clock(void)
{
	fake_reads++;
	return fake_now;
}

GS_TEST(stops_at_the_record_limit)
{
	struct gs_drain_budget b = { .max_records = 1000, .clock = fake_clock };
	uint64_t n = 0;

	fake_now = 0;
	gs_drain_budget__start(&b);
	while (!gs_drain_budget__take(&b))
		n++;
	GS_EXPECT_EQ(n + 1, 1000); /* the last one taken ends the turn */
	GS_EXPECT(b.spent);
	/* a new turn starts afresh */
	gs_drain_budget__start(&b);
	GS_EXPECT(!b.spent);
	GS_EXPECT(!gs_drain_budget__take(&b));
}

GS_TEST(default_limit_is_bounded)
{
	struct gs_drain_budget b = { .clock = fake_clock };
	uint64_t n = 1;

	fake_now = 0;
	gs_drain_budget__start(&b);
	while (!gs_drain_budget__take(&b) && n < 10 * GS_DRAIN_MAX_RECORDS)
		n++;
	GS_EXPECT_EQ(n, GS_DRAIN_MAX_RECORDS);
}

GS_TEST(stops_when_the_time_is_up)
{
	struct gs_drain_budget b = { .max_ns = 20000000, .clock = fake_clock };
	uint64_t n = 1;

	fake_now = 1000;
	gs_drain_budget__start(&b);
	/* 1 us a record: 20 ms is 20,000 records, noticed at the next clock reading */
	while (!gs_drain_budget__take(&b)) {
		fake_now += 1000;
		n++;
	}
	GS_EXPECT(n >= 20000);
	GS_EXPECT(n <= 20000 + GS_DRAIN_CLOCK_EVERY);
	GS_EXPECT(b.used == n);
}

GS_TEST(clock_read_rarely)
{
	struct gs_drain_budget b = { .max_records = 10000, .clock = fake_clock };

	fake_reads = 0;
	fake_now = 0;
	gs_drain_budget__start(&b);
	while (!gs_drain_budget__take(&b))
		;
	GS_EXPECT(fake_reads <= 1 + 10000 / GS_DRAIN_CLOCK_EVERY);
}

GS_TEST_MAIN(stops_at_the_record_limit, default_limit_is_bounded, stops_when_the_time_is_up,
	     clock_read_rarely)
