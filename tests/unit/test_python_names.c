// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_python_names.c: stand-in addresses of named Python frames: stable, distinct, forgotten. */
#include "tests/unit/harness.h"
#include "user/python_names.h"

GS_TEST(same_location_same_address)
{
	struct gs_py_names *n = gs_py_names__new();
	uint64_t a = gs_py_names__intern(n, 10, 0x1000, 0, "f", "a.py", 3);
	uint64_t b = gs_py_names__intern(n, 10, 0x1000, 0, "f", "a.py", 3);
	const struct gs_py_name *got = gs_py_names__get(n, 10, a);

	GS_EXPECT(gs_py_is_addr(a));
	GS_EXPECT_EQ(a, b);
	if (GS_EXPECT(got)) {
		GS_EXPECT_STR_EQ(got->qualname, "f");
		GS_EXPECT_STR_EQ(got->file, "a.py");
		GS_EXPECT_EQ(got->line, 3);
		GS_EXPECT_EQ(got->code, 0x1000);
	}
	gs_py_names__free(n);
}

/* another line, process or code object at a reused address: another frame */
GS_TEST(line_pid_and_generation_tell_frames_apart)
{
	struct gs_py_names *n = gs_py_names__new();
	uint64_t a = gs_py_names__intern(n, 10, 0x1000, 0, "f", "a.py", 3);

	GS_EXPECT(gs_py_names__intern(n, 10, 0x1000, 0, "f", "a.py", 4) != a);
	GS_EXPECT(gs_py_names__intern(n, 11, 0x1000, 0, "f", "a.py", 3) != a);
	GS_EXPECT(gs_py_names__intern(n, 10, 0x1000, 1, "g", "b.py", 3) != a);
	gs_py_names__free(n);
}

/* a gone process's names go, and their ids are never handed out again */
GS_TEST(forgotten_ids_are_not_reused)
{
	struct gs_py_names *n = gs_py_names__new();
	uint64_t a = gs_py_names__intern(n, 10, 0x1000, 0, "f", "a.py", 3), b;

	for (int i = 0; i < 5000; i++) /* through a few rehashes */
		gs_py_names__intern(n, 12, 0x2000 + 16 * i, 0, "g", "b.py", i);
	gs_py_names__forget(n, 10);
	GS_EXPECT(!gs_py_names__get(n, 10, a));
	b = gs_py_names__intern(n, 10, 0x1000, 0, "f", "a.py", 3);
	GS_EXPECT(b != a);
	GS_EXPECT(gs_py_names__get(n, 10, b));
	GS_EXPECT_EQ(gs_py_names__intern(n, 12, 0x2000 + 16 * 7, 0, "g", "b.py", 7),
		     gs_py_names__intern(n, 12, 0x2000 + 16 * 7, 0, "g", "b.py", 7));
	GS_EXPECT(!gs_py_names__get(n, 10, GS_PY_ADDR_TAG | 0xffffffffULL));
	GS_EXPECT(!gs_py_names__get(n, 10, 0x400000)); /* a native address */
	gs_py_names__free(n);
}

/* issue 22 finding 4: a forged tagged address never names another process's frame */
GS_TEST(an_id_names_a_frame_only_for_its_own_process)
{
	struct gs_py_names *n = gs_py_names__new();
	uint64_t a = gs_py_names__intern(n, 10, 0x1000, 0, "secret", "/home/a/key.py", 3);

	GS_EXPECT(gs_py_names__get(n, 10, a));
	GS_EXPECT(!gs_py_names__get(n, 11, a));
	GS_EXPECT(!gs_py_names__get(NULL, 10, a));
	gs_py_names__free(n);
}

/* each process has its own marker, stable, known as one, and another's is nothing to it */
GS_TEST(markers_are_per_process)
{
	struct gs_py_names *n = gs_py_names__new();
	uint64_t m10 = gs_py_names__marker(n, 10), m11 = gs_py_names__marker(n, 11);
	const struct gs_py_name *got = gs_py_names__get(n, 10, m10);

	GS_EXPECT(gs_py_is_addr(m10));
	GS_EXPECT(m10 != m11);
	GS_EXPECT_EQ(gs_py_names__marker(n, 10), m10);
	if (GS_EXPECT(got)) {
		GS_EXPECT(got->marker);
		GS_EXPECT_STR_EQ(got->qualname, "[native frames missing]");
	}
	GS_EXPECT(!gs_py_names__get(n, 11, m10));
	GS_EXPECT(!gs_py_names__get(n, 10, gs_py_names__intern(n, 10, 0x1000, 0, "f", "a.py", 3))
			   ->marker);
	GS_EXPECT_EQ(gs_py_names__marker(NULL, 10), 0);
	gs_py_names__free(n);
}

GS_TEST_MAIN(same_location_same_address, line_pid_and_generation_tell_frames_apart,
	     forgotten_ids_are_not_reused, an_id_names_a_frame_only_for_its_own_process,
	     markers_are_per_process)
