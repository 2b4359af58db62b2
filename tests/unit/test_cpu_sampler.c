// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_cpu_sampler.c: the online-CPU list parser of the sampler. */
#include <errno.h>
#include "profilers/cpu_sampler.h"
#include "tests/unit/harness.h"

static int count(const bool *cpus, int max)
{
	int n = 0;

	for (int i = 0; i < max; i++)
		n += cpus[i];
	return n;
}

GS_TEST(ranges_and_singles)
{
	bool cpus[16];

	GS_EXPECT_EQ(gs_parse_cpu_list("0-3,5,8-9\n", cpus, 16), 0);
	GS_EXPECT_EQ(count(cpus, 16), 7);
	GS_EXPECT(cpus[0] && cpus[3] && !cpus[4] && cpus[5] && cpus[8] && cpus[9] && !cpus[10]);
	GS_EXPECT_EQ(gs_parse_cpu_list("0", cpus, 16), 0);
	GS_EXPECT_EQ(count(cpus, 16), 1);
	/* CPUs beyond max are ignored, not written */
	GS_EXPECT_EQ(gs_parse_cpu_list("14-40", cpus, 16), 0);
	GS_EXPECT_EQ(count(cpus, 16), 2);
}

GS_TEST(junk_is_rejected)
{
	bool cpus[8];

	GS_EXPECT_EQ(gs_parse_cpu_list("3-1", cpus, 8), -EINVAL);
	GS_EXPECT_EQ(gs_parse_cpu_list("a", cpus, 8), -EINVAL);
	GS_EXPECT_EQ(gs_parse_cpu_list("1;2", cpus, 8), -EINVAL);
	GS_EXPECT_EQ(gs_parse_cpu_list("-1", cpus, 8), -EINVAL);
}

GS_TEST_MAIN(ranges_and_singles, junk_is_rejected)
