// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_id_map.c: stitch's (input, id) -> new id renumbering, on the one hash index. */
#include <errno.h>
#include "stitch/id_map.h"
#include "tests/unit/harness.h"

#define PAIRS 20000

GS_TEST(pairs_numbered_in_order_of_first_sight_and_kept)
{
	struct gs_id_map m;
	int64_t out;

	gs_id_map__init(&m, PAIRS * 2);
	/* sparse ids as gpusnoop writes them (pid << 32 | n), two inputs sharing each id */
	for (int64_t i = 0; i < PAIRS; i++) {
		GS_EXPECT_EQ(gs_id_map__get(&m, (uint32_t)(i & 1), (i << 32) | 7, &out), 0);
		GS_EXPECT_EQ(out, i + 1);
	}
	GS_EXPECT_EQ(gs_id_map__get(&m, 1, (0LL << 32) | 7, &out), 0); /* input 1's id 7 is new */
	GS_EXPECT_EQ(out, PAIRS + 1);
	for (int64_t i = 0; i < PAIRS; i++) { /* a flow's end finds its start's id */
		GS_EXPECT_EQ(gs_id_map__get(&m, (uint32_t)(i & 1), (i << 32) | 7, &out), 0);
		GS_EXPECT_EQ(out, i + 1);
	}
	gs_id_map__release(&m);
}

GS_TEST(past_max_pairs_a_new_one_is_refused_an_old_one_still_found)
{
	struct gs_id_map m;
	int64_t out = 0;

	gs_id_map__init(&m, 2);
	GS_EXPECT_EQ(gs_id_map__get(&m, 0, -5, &out), 0);
	GS_EXPECT_EQ(gs_id_map__get(&m, 0, 1LL << 53, &out), 0);
	GS_EXPECT_EQ(gs_id_map__get(&m, 1, -5, &out), -E2BIG);
	GS_EXPECT_EQ(gs_id_map__get(&m, 0, -5, &out), 0);
	GS_EXPECT_EQ(out, 1);
	gs_id_map__release(&m);
	/* released, the map is empty again with its bound */
	GS_EXPECT_EQ(gs_id_map__get(&m, 1, -5, &out), 0);
	GS_EXPECT_EQ(out, 1);
	gs_id_map__release(&m);
}

GS_TEST_MAIN(pairs_numbered_in_order_of_first_sight_and_kept,
	     past_max_pairs_a_new_one_is_refused_an_old_one_still_found)
