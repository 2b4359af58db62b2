// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_loss_window.c: each report says what was lost since the previous one. */
#include <stdint.h>
#include <linux/types.h>
#include "tests/unit/harness.h"
#include "user/losses.h"

GS_TEST(each_window_gets_its_own_losses)
{
	struct gs_loss_window w = { 0 };
	uint64_t stats[GS_STAT__MAX] = { 0 }, start;

	GS_EXPECT_EQ(gs_loss_window__take(&w, stats, 100, &start), 0);
	GS_EXPECT_EQ(start, 0); /* the first window starts with the session */
	stats[GS_STAT_RINGBUF_FULL] = 5;
	stats[GS_STAT_UID_OVER_SHARE] = 2;
	GS_EXPECT_EQ(gs_loss_window__take(&w, stats, 200, &start), 7);
	GS_EXPECT_EQ(start, 100);
	GS_EXPECT_EQ(gs_loss_window__take(&w, stats, 300, &start), 0); /* nothing new */
	GS_EXPECT_EQ(start, 200);
	stats[GS_STAT_INFLIGHT_FULL] = 1;
	GS_EXPECT_EQ(gs_loss_window__take(&w, stats, 400, &start), 1);
}

GS_TEST(over_share_drops_are_losses)
{
	uint64_t stats[GS_STAT__MAX] = { 0 };

	stats[GS_STAT_UID_OVER_SHARE] = 3;
	stats[GS_STAT_OOM_FALLBACK] = 9; /* not a loss: those came the usual way */
	GS_EXPECT_EQ(gs_losses_dropped(stats), 3);
}

GS_TEST_MAIN(each_window_gets_its_own_losses, over_share_drops_are_losses)
