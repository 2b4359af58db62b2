// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_oom_queue.c: OOM records copied into a fixed queue, handed on oldest first. */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "profilers/oom_queue.h"
#include "tests/unit/harness.h"

static struct gs_oom_queue q; /* large: not on the stack */

GS_TEST(fifo_with_sizes)
{
	uint64_t a = 1, b[3] = { 2, 3, 4 };
	void *data;
	size_t size;

	memset(&q, 0, sizeof(q));
	GS_EXPECT(!gs_oom_queue__pop(&q, &data, &size));
	GS_EXPECT_EQ(gs_oom_queue__push(&q, &a, sizeof(a)), 0);
	GS_EXPECT_EQ(gs_oom_queue__push(&q, b, sizeof(b)), 0);
	a = 99; /* copied, not borrowed */
	GS_EXPECT(gs_oom_queue__pop(&q, &data, &size));
	GS_EXPECT_EQ(size, sizeof(a));
	GS_EXPECT_EQ(*(uint64_t *)data, 1);
	GS_EXPECT(gs_oom_queue__pop(&q, &data, &size));
	GS_EXPECT_EQ(size, sizeof(b));
	GS_EXPECT_EQ(((uint64_t *)data)[2], 4);
	GS_EXPECT(!gs_oom_queue__pop(&q, &data, &size));
}

GS_TEST(full_refuses_without_losing_what_it_holds)
{
	void *data;
	size_t size;

	memset(&q, 0, sizeof(q));
	for (uint64_t i = 0; i < GS_OOM_QUEUE_SLOTS; i++)
		GS_EXPECT_EQ(gs_oom_queue__push(&q, &i, sizeof(i)), 0);
	GS_EXPECT(gs_oom_queue__full(&q));
	GS_EXPECT_EQ(gs_oom_queue__push(&q, &size, sizeof(size)), -ENOSPC);
	for (uint64_t i = 0; i < GS_OOM_QUEUE_SLOTS; i++) {
		GS_EXPECT(gs_oom_queue__pop(&q, &data, &size));
		GS_EXPECT_EQ(*(uint64_t *)data, i);
	}
	GS_EXPECT(!gs_oom_queue__full(&q));
}

GS_TEST(wraps_around)
{
	void *data;
	size_t size;

	memset(&q, 0, sizeof(q));
	for (uint64_t i = 0; i < 5 * GS_OOM_QUEUE_SLOTS; i++) {
		GS_EXPECT_EQ(gs_oom_queue__push(&q, &i, sizeof(i)), 0);
		if (i % 3 == 2) { /* one out for each three in... */
			GS_EXPECT(gs_oom_queue__pop(&q, &data, &size));
		}
		if (gs_oom_queue__full(&q))
			while (gs_oom_queue__pop(&q, &data, &size))
				;
	}
	GS_EXPECT(q.nr < GS_OOM_QUEUE_SLOTS);
}

GS_TEST(too_big_refused_and_counted)
{
	static char big[GS_OOM_RECORD_MAX + 1];

	memset(&q, 0, sizeof(q));
	GS_EXPECT_EQ(gs_oom_queue__push(&q, big, sizeof(big)), -E2BIG);
	GS_EXPECT_EQ(q.too_big, 1);
	GS_EXPECT_EQ(q.nr, 0);
	GS_EXPECT_EQ(gs_oom_queue__push(&q, big, GS_OOM_RECORD_MAX), 0);
}

GS_TEST_MAIN(fifo_with_sizes, full_refuses_without_losing_what_it_holds, wraps_around,
	     too_big_refused_and_counted)
