// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_python_merge.c: Python frames replace the eval loops that ran them on native stacks. */
#include "tests/unit/harness.h"
#include "user/python_merge.h"
#include "user/python_names.h"

#define EVAL   0x1000 /* the eval loop: [0x1000, 0x2000) */
#define COLD   0x9000 /* its .cold part: [0x9000, 0x9100) */
#define PY(id) (GS_PY_ADDR_TAG | (id))
#define END    GS_PY_F_RUN_END
#define MARKER PY(0xabcd)

static const struct gs_py_eval_ranges eval = { { EVAL, COLD }, { 0x2000, 0x9100 } };

static size_t merge(const __u64 *native, size_t nr, const __u32 *flags, size_t nr_py, __u64 *out,
		    size_t max)
{
	struct gs_py_frame py[8];
	__u64 named[8];

	for (size_t i = 0; i < nr_py; i++) {
		py[i] = (struct gs_py_frame){ .code = 0x100 + i, .flags = flags[i] };
		named[i] = PY(i + 1);
	}
	return gs_py_merge(native, nr, py, named, nr_py, &eval, MARKER, out, max);
}

/* 3.11+: one eval loop ran three frames, another (called from C) the outer two */
GS_TEST(each_eval_loop_gives_way_to_its_run)
{
	static const __u64 native[] = { 0x500, 0x1234, 0x600, 0x1800, 0x700 };
	static const __u32 flags[] = { 0, 0, END, 0, END };
	__u64 out[16];
	size_t n = merge(native, 5, flags, 5, out, 16);

	if (!GS_EXPECT_EQ(n, 8))
		return;
	GS_EXPECT_EQ(out[0], 0x500);
	GS_EXPECT_EQ(out[1], PY(1));
	GS_EXPECT_EQ(out[2], PY(2));
	GS_EXPECT_EQ(out[3], PY(3));
	GS_EXPECT_EQ(out[4], 0x600);
	GS_EXPECT_EQ(out[5], PY(4));
	GS_EXPECT_EQ(out[6], PY(5));
	GS_EXPECT_EQ(out[7], 0x700);
}

/* frame pointers stopped before the interpreter: the Python frames follow a marker */
GS_TEST(frames_native_unwinding_missed_follow_a_marker)
{
	static const __u64 native[] = { 0x500, 0x600 };
	static const __u32 flags[] = { 0, END, END };
	__u64 out[16];
	size_t n = merge(native, 2, flags, 3, out, 16);

	if (!GS_EXPECT_EQ(n, 6))
		return;
	GS_EXPECT_EQ(out[1], 0x600);
	GS_EXPECT_EQ(out[2], MARKER);
	GS_EXPECT_EQ(out[3], PY(1));
	GS_EXPECT_EQ(out[5], PY(3));
}

/* a return address one past the loop's end is a call at its last byte; .cold counts too */
GS_TEST(return_addresses_are_looked_up_in_the_call)
{
	static const __u64 native[] = { 0x2000, 0x2000, 0x9100 };
	static const __u32 flags[] = { END, END };
	__u64 out[16];
	size_t n = merge(native, 3, flags, 2, out, 16);

	if (!GS_EXPECT_EQ(n, 3))
		return;
	GS_EXPECT_EQ(out[0], 0x2000); /* the ip itself is not a return address */
	GS_EXPECT_EQ(out[1], PY(1));
	GS_EXPECT_EQ(out[2], PY(2));
}

/* an eval frame with no Python run left stays, and the output is bounded */
GS_TEST(extra_eval_frames_stay_and_output_is_bounded)
{
	static const __u64 native[] = { 0x1100, 0x1200, 0x1300, 0x500 };
	static const __u32 flags[] = { END };
	__u64 out[3];
	size_t n = merge(native, 4, flags, 1, out, 3);

	if (!GS_EXPECT_EQ(n, 3))
		return;
	GS_EXPECT_EQ(out[0], PY(1));
	GS_EXPECT_EQ(out[1], 0x1200);
	GS_EXPECT_EQ(out[2], 0x1300);
}

GS_TEST_MAIN(each_eval_loop_gives_way_to_its_run, frames_native_unwinding_missed_follow_a_marker,
	     return_addresses_are_looked_up_in_the_call,
	     extra_eval_frames_stay_and_output_is_bounded)
