// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_py_debug_offsets.c: _Py_DebugOffsets of real 3.13, 3.14, 3.15 processes, and forged ones. */
#include <errno.h>
#include <string.h>
#include "tests/unit/harness.h"
#include "tests/unit/py_debug_blobs.h"
#include "user/py_debug_offsets.h"

/* the frame and code offsets the interpreters themselves use (checked live, python_proc.c) */
static void expect_common(const struct gs_py_debug_offsets *d)
{
	GS_EXPECT_EQ(d->tstate_current_frame, 72);
	GS_EXPECT_EQ(d->tstate_next, 8);
	GS_EXPECT_EQ(d->frame_previous, 8);
	GS_EXPECT_EQ(d->frame_executable, 0);
	GS_EXPECT_EQ(d->frame_instr_ptr, 56);
	GS_EXPECT_EQ(d->co_filename, 112);
	GS_EXPECT_EQ(d->co_name, 120);
	GS_EXPECT_EQ(d->co_qualname, 128);
	GS_EXPECT_EQ(d->co_linetable, 136);
	GS_EXPECT_EQ(d->co_firstlineno, 68);
	GS_EXPECT_EQ(d->str_state, 32);
	GS_EXPECT_EQ(d->str_length, 16);
	GS_EXPECT_EQ(d->str_ascii_size, 40);
}

static int parse(const unsigned char *blob, size_t len, struct gs_py_debug_offsets *d,
		 const char **why)
{
	memset(d, 0, sizeof(*d));
	return gs_py_debug_offsets_parse(blob, len, d, why);
}

GS_TEST(real_3_13)
{
	struct gs_py_debug_offsets d;
	const char *why;

	GS_EXPECT_EQ(parse(blob_3_13, sizeof(blob_3_13), &d, &why), 0);
	GS_EXPECT(why == NULL);
	GS_EXPECT_EQ(d.version_hex, 0x030d00f0);
	GS_EXPECT_EQ(d.minor, 13);
	GS_EXPECT_EQ(d.layout_minor, 13);
	GS_EXPECT_EQ(d.frame_owner, 70);
	GS_EXPECT_EQ(d.co_code_adaptive, 200);
	GS_EXPECT_EQ(d.runtime_interpreters_head, 632);
	GS_EXPECT_EQ(d.interp_threads_head, 7344);
	expect_common(&d);
}

GS_TEST(real_3_14)
{
	struct gs_py_debug_offsets d;
	const char *why;

	GS_EXPECT_EQ(parse(blob_3_14, sizeof(blob_3_14), &d, &why), 0);
	GS_EXPECT_EQ(d.version_hex, 0x030e0af0);
	GS_EXPECT_EQ(d.minor, 14);
	GS_EXPECT_EQ(d.frame_owner, 74);
	GS_EXPECT_EQ(d.runtime_interpreters_head, 808);
	GS_EXPECT_EQ(d.interp_threads_head, 7344);
	GS_EXPECT_EQ(d.co_code_adaptive, 208);
	expect_common(&d);
}

GS_TEST(real_3_15)
{
	struct gs_py_debug_offsets d;
	const char *why;

	GS_EXPECT_EQ(parse(blob_3_15, sizeof(blob_3_15), &d, &why), 0);
	GS_EXPECT_EQ(d.version_hex, 0x030f02f0);
	GS_EXPECT_EQ(d.minor, 15);
	GS_EXPECT_EQ(d.layout_minor, 15);
	GS_EXPECT_EQ(d.frame_owner, 74);
	GS_EXPECT_EQ(d.runtime_interpreters_head, 936);
	GS_EXPECT_EQ(d.interp_threads_head, 7336);
	GS_EXPECT_EQ(d.co_code_adaptive, 208);
	expect_common(&d);
}

static void set_word(unsigned char *b, size_t i, uint64_t v)
{
	memcpy(b + i * 8, &v, sizeof(v));
}

static const char *refused(const unsigned char *blob, size_t len)
{
	struct gs_py_debug_offsets d;
	const char *why = NULL;

	GS_EXPECT_EQ(parse(blob, len, &d, &why), -EINVAL);
	GS_EXPECT(why != NULL);
	return why ? why : "";
}

GS_TEST(corrupted_blobs_are_refused)
{
	unsigned char b[sizeof(blob_3_14)];

	memcpy(b, blob_3_14, sizeof(b));
	b[0] = 'X';
	GS_EXPECT(strstr(refused(b, sizeof(b)), "cookie"));
	refused(blob_3_14, 512); /* short */
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 1, 0x020e0af0); /* Python 2 */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "version"));
	set_word(b, 1, 0x030c00f0); /* 3.12 has no debug offsets */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "version"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 2, 1);
	GS_EXPECT(strstr(refused(b, sizeof(b)), "free-threaded"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 31 + 1, 4096); /* frame.previous past the frame */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "frame"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 31 + 3, 60); /* instr_ptr misaligned */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "misaligned"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 39, UINT64_MAX); /* code object size absurd */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "code"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 39 + 2, 112); /* co_name == co_filename */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "overlapping"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 77 + 3, 4000); /* PyASCIIObject size */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "str"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 6, 1 << 21); /* interpreter state size absurd */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "interpreter"));
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 6 + 3, 0x10000); /* threads_head past what an offset may be */
	GS_EXPECT(strstr(refused(b, sizeof(b)), "interpreter"));
}

/* 3.16 and later: the newest description, kept only when what it yields is in range */
GS_TEST(newer_version_uses_newest_layout_and_is_validated)
{
	unsigned char b[sizeof(blob_3_15)];
	struct gs_py_debug_offsets d;
	const char *why;

	memcpy(b, blob_3_15, sizeof(b));
	set_word(b, 1, 0x031000a1); /* 3.16.0a1, laid out as 3.15 */
	GS_EXPECT_EQ(parse(b, sizeof(b), &d, &why), 0);
	GS_EXPECT_EQ(d.minor, 16);
	GS_EXPECT_EQ(d.layout_minor, 15);
	expect_common(&d);
	memcpy(b, blob_3_14, sizeof(b));
	set_word(b, 1, 0x031000a1); /* 3.16 laid out as 3.14: 3.15's positions read garbage */
	refused(b, sizeof(b));
}

GS_TEST_MAIN(real_3_13, real_3_14, real_3_15, corrupted_blobs_are_refused,
	     newer_version_uses_newest_layout_and_is_validated)
