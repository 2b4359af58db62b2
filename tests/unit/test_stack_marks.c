// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_stack_marks.c: truncation marks: their addresses, their texts, where they go. */
#include "tests/unit/harness.h"
#include "user/python_names.h"
#include "user/stack_marks.h"

GS_TEST(marks_are_told_apart_from_every_other_address)
{
	struct gs_py_names *names = gs_py_names__new();

	GS_EXPECT(names);
	GS_EXPECT(gs_stack_mark_is(gs_stack_mark_truncated(22)));
	GS_EXPECT(gs_stack_mark_is(gs_stack_mark_truncated(0)));
	GS_EXPECT(!gs_stack_mark_is(0x7fffffffe000ULL));	      /* user */
	GS_EXPECT(!gs_stack_mark_is(0xffffffff81000130ULL));	      /* kernel */
	GS_EXPECT(!gs_stack_mark_is(GS_PY_ADDR_TAG | 5));	      /* a Python frame */
	GS_EXPECT(!gs_stack_mark_is(gs_py_names__marker(names, 10))); /* native frames missing */
	GS_EXPECT(gs_py_is_addr(gs_stack_mark_truncated(1)));	      /* symbolized apart */
	gs_py_names__free(names);
}

GS_TEST(texts_say_how_many_frames_are_missing)
{
	const char *a = gs_stack_mark_name(gs_stack_mark_truncated(22));

	GS_EXPECT_STR_EQ(a, "[truncated: 22 more]");
	GS_EXPECT(a == gs_stack_mark_name(gs_stack_mark_truncated(22))); /* made once */
	GS_EXPECT_STR_EQ(gs_stack_mark_name(gs_stack_mark_truncated(1ULL << 40)),
			 "[truncated: 4294967295+ more]");
	GS_EXPECT_STR_EQ(gs_stack_mark_name(gs_stack_mark_truncated(0)), "[truncated]");
}

GS_TEST(a_mark_goes_where_frames_went_missing)
{
	__u64 s[4] = { 1, 2 };
	size_t nr = 2;

	gs_stack_mark_insert_truncated(s, &nr, 4, 1, 7);
	if (!GS_EXPECT_EQ(nr, 3))
		return;
	GS_EXPECT_EQ(s[0], 1);
	GS_EXPECT_EQ(s[1], gs_stack_mark_truncated(7));
	GS_EXPECT_EQ(s[2], 2);
	gs_stack_mark_insert_truncated(s, &nr, 4, 9, 3); /* past the end: last */
	GS_EXPECT_EQ(nr, 4);
	GS_EXPECT_EQ(s[3], gs_stack_mark_truncated(3));
	/* full: the outermost frame makes room and counts as missing */
	gs_stack_mark_insert_truncated(s, &nr, 4, 0, 7);
	GS_EXPECT_EQ(nr, 4);
	GS_EXPECT_EQ(s[0], gs_stack_mark_truncated(8));
	GS_EXPECT_EQ(s[1], 1);
	GS_EXPECT_EQ(s[2], gs_stack_mark_truncated(7));
	GS_EXPECT_EQ(s[3], 2);
	nr = 0;
	gs_stack_mark_insert_truncated(s, &nr, 0, 0, 7);
	GS_EXPECT_EQ(nr, 0);
}

GS_TEST_MAIN(marks_are_told_apart_from_every_other_address, texts_say_how_many_frames_are_missing,
	     a_mark_goes_where_frames_went_missing)
