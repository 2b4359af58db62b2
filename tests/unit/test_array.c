// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_array.c: the growable array doubles, keeps its elements, and refuses overflows. */
#include <stdint.h>
#include <stdlib.h>
#include "user/array.h"
#include "tests/unit/harness.h"

struct item {
	uint64_t a, b;
};

GS_TEST(grows_by_doubling_and_keeps_elements)
{
	struct item *items = NULL;
	size_t nr = 0, cap = 0;

	for (uint64_t i = 0; i < 100; i++) {
		if (!GS_EXPECT_EQ(GS_ARRAY_RESERVE(items, nr, cap, 4), 0))
			break;
		items[nr++] = (struct item){ i, i * 3 };
	}
	GS_EXPECT_EQ(nr, 100);
	GS_EXPECT_EQ(cap, 128); /* 4, 8, ..., 128 */
	for (size_t i = 0; i < nr; i++)
		GS_EXPECT_EQ(items[i].b, i * 3);
	free(items);
}

GS_TEST(room_left_returns_the_same_block)
{
	size_t cap = 8;
	int *items = calloc(cap, sizeof(*items));

	GS_EXPECT(gs_array_reserve(items, &cap, 7, sizeof(*items), 4) == items);
	GS_EXPECT_EQ(cap, 8);
	free(items);
}

GS_TEST(overflow_is_refused_and_leaves_the_array)
{
	size_t cap = SIZE_MAX / 16 + 1;
	char block[16];

	/* doubling would need more than SIZE_MAX bytes */
	errno = 0;
	GS_EXPECT(gs_array_reserve(block, &cap, cap, 16, 4) == NULL);
	GS_EXPECT_EQ(errno, ENOMEM);
	GS_EXPECT_EQ(cap, SIZE_MAX / 16 + 1);
}

GS_TEST_MAIN(grows_by_doubling_and_keeps_elements, room_left_returns_the_same_block,
	     overflow_is_refused_and_leaves_the_array)
