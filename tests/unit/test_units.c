// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_units.c: sizes for people, seconds from the command line. */
#include <errno.h>
#include "tests/unit/harness.h"
#include "user/units.h"

static const char *bytes(uint64_t n)
{
	static char buf[32];

	gs_format_bytes(n, buf, sizeof(buf));
	return buf;
}

GS_TEST(bytes_in_binary_units)
{
	GS_EXPECT_STR_EQ(bytes(0), "0 B");
	GS_EXPECT_STR_EQ(bytes(1023), "1023 B");
	GS_EXPECT_STR_EQ(bytes(1024), "1.0 KiB");
	GS_EXPECT_STR_EQ(bytes(256ULL << 20), "256.0 MiB");
	GS_EXPECT_STR_EQ(bytes(3ULL << 29), "1.5 GiB");
	/* past TiB the unit stays TiB */
	GS_EXPECT_STR_EQ(bytes(2048ULL << 40), "2048.0 TiB");
}

GS_TEST(bytes_cut_to_the_buffer)
{
	char buf[4] = "xxx";

	gs_format_bytes(256ULL << 20, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "256");
}

GS_TEST(seconds_parsed_and_bounded)
{
	double s = -1;

	GS_EXPECT_EQ(gs_parse_seconds("2", &s), 0);
	GS_EXPECT(s == 2.0);
	GS_EXPECT_EQ(gs_parse_seconds("0.5", &s), 0);
	GS_EXPECT(s == 0.5);
	GS_EXPECT_EQ(gs_parse_seconds("", &s), -EINVAL);
	GS_EXPECT_EQ(gs_parse_seconds("1s", &s), -EINVAL);
	GS_EXPECT_EQ(gs_parse_seconds("-1", &s), -EINVAL);
	GS_EXPECT_EQ(gs_parse_seconds("nan", &s), -EINVAL);
	GS_EXPECT_EQ(gs_parse_seconds("inf", &s), -EINVAL);
	GS_EXPECT_EQ(gs_parse_seconds("1e300", &s), -EINVAL);
	GS_EXPECT(s == 0.5);
}

GS_TEST_MAIN(bytes_in_binary_units, bytes_cut_to_the_buffer, seconds_parsed_and_bounded)
