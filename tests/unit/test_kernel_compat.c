// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_kernel_compat.c: which commands run, and without what, for a kernel's probe results. */
#include <errno.h>
#include "tests/unit/harness.h"
#include "user/kernel_compat.h"

/* what Debian's kernels answer to user/kernel_probe.c (seen booted under qemu) */
#define K5_10 (GS_KF_BIT(GS_KF_RINGBUF) | GS_KF_BIT(GS_KF_TP_BTF))
#define K5_15                                                                \
	(K5_10 | GS_KF_BIT(GS_KF_TASK_BTF) | GS_KF_BIT(GS_KF_TASK_STORAGE) | \
	 GS_KF_BIT(GS_KF_COOKIE))
#define K6_1  (K5_15 | GS_KF_BIT(GS_KF_FIND_VMA) | GS_KF_BIT(GS_KF_LOOP))
#define K6_12 (K6_1 | GS_KF_BIT(GS_KF_UPROBE_MULTI))

static bool runs(uint32_t have, enum gs_kcmd c)
{
	return !(gs_kcmd_needs(c) & ~have);
}

GS_TEST(kernel_6_12_runs_everything_with_everything)
{
	for (int c = 0; c < GS_KCMD__NR; c++) {
		GS_EXPECT(runs(K6_12, c));
		GS_EXPECT_EQ(gs_kcmd_wants(c) & ~K6_12, 0);
	}
	GS_EXPECT(gs_kcompat_python_frames(K6_12));
	GS_EXPECT(gs_kcompat_multi_links(K6_12));
}

GS_TEST(kernel_6_1_runs_everything_with_one_link_per_probe)
{
	for (int c = 0; c < GS_KCMD__NR; c++)
		GS_EXPECT(runs(K6_1, c));
	GS_EXPECT(gs_kcompat_python_frames(K6_1));
	GS_EXPECT(!gs_kcompat_multi_links(K6_1));
	GS_EXPECT_EQ(gs_kcmd_wants(GS_KCMD_LEAKS) & ~K6_1, GS_KF_BIT(GS_KF_UPROBE_MULTI));
	GS_EXPECT_EQ(gs_kcmd_wants(GS_KCMD_TREE) & ~K6_1, GS_KF_BIT(GS_KF_UPROBE_MULTI));
	/* sampling attaches no uprobes: nothing lost */
	GS_EXPECT_EQ(gs_kcmd_wants(GS_KCMD_PROFILE) & ~K6_1, 0);
}

GS_TEST(kernel_5_15_runs_everything_with_the_kernels_walk_and_native_stacks)
{
	for (int c = 0; c < GS_KCMD__NR; c++) {
		GS_EXPECT(runs(K5_15, c));
		GS_EXPECT(gs_kcmd_wants(c) & GS_KF_BIT(GS_KF_FIND_VMA));
	}
	GS_EXPECT_EQ(gs_kcmd_wants(GS_KCMD_LEAKS) & ~K5_15, GS_KF_BIT(GS_KF_FIND_VMA) |
								    GS_KF_BIT(GS_KF_LOOP) |
								    GS_KF_BIT(GS_KF_UPROBE_MULTI));
	GS_EXPECT(!gs_kcompat_python_frames(K5_15));
}

GS_TEST(kernel_5_10_lacks_task_storage_and_cookies)
{
	GS_EXPECT_EQ(gs_kcompat_needs(true) & ~K5_10, GS_KF_BIT(GS_KF_TASK_BTF) |
							      GS_KF_BIT(GS_KF_TASK_STORAGE) |
							      GS_KF_BIT(GS_KF_COOKIE));
	/* sampling uses no cookies */
	GS_EXPECT_EQ(gs_kcompat_needs(false) & ~K5_10,
		     GS_KF_BIT(GS_KF_TASK_BTF) | GS_KF_BIT(GS_KF_TASK_STORAGE));
	GS_EXPECT_EQ(gs_kcmd_needs(GS_KCMD_PROFILE), gs_kcompat_needs(false));
	GS_EXPECT_EQ(gs_kcmd_needs(GS_KCMD_LEAKS), gs_kcompat_needs(true));
}

GS_TEST(missing_features_name_the_first_kernel_with_each)
{
	char buf[256];
	int n = gs_kfeat_format(GS_KF_BIT(GS_KF_TASK_STORAGE) | GS_KF_BIT(GS_KF_LOOP), buf,
				sizeof(buf));

	GS_EXPECT_STR_EQ(buf, "task storage maps (Linux 5.11), bpf_loop() (Linux 5.17)");
	GS_EXPECT_EQ(n, (int)strlen(buf));
	gs_kfeat_format(0, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "");
}

GS_TEST(format_truncates_and_reports_the_full_length)
{
	char buf[10];
	int n = gs_kfeat_format(GS_KF_BIT(GS_KF_TASK_STORAGE) | GS_KF_BIT(GS_KF_LOOP), buf,
				sizeof(buf));

	GS_EXPECT_STR_EQ(buf, "task stor");
	GS_EXPECT_EQ(n, (int)strlen("task storage maps (Linux 5.11), bpf_loop() (Linux 5.17)"));
	GS_EXPECT(gs_kfeat_format(GS_KF_BIT(GS_KF_LOOP), NULL, 0) > 0);
}

GS_TEST(parse_names_and_refuses_unknown_ones)
{
	const char *bad = NULL, *list = "task_storage,,nope,bpf_loop";
	uint32_t mask;

	GS_EXPECT_EQ(gs_kfeat_parse("task_storage,bpf_loop,", &mask, &bad), 0);
	GS_EXPECT_EQ(mask, GS_KF_BIT(GS_KF_TASK_STORAGE) | GS_KF_BIT(GS_KF_LOOP));
	GS_EXPECT_EQ(gs_kfeat_parse("", &mask, &bad), 0);
	GS_EXPECT_EQ(mask, 0);
	GS_EXPECT_EQ(gs_kfeat_parse(list, &mask, &bad), -EINVAL);
	GS_EXPECT(bad == list + strlen("task_storage,,"));
	/* a prefix of a name is no name */
	GS_EXPECT_EQ(gs_kfeat_parse("task", &mask, &bad), -EINVAL);
	for (int f = 0; f < GS_KF__NR; f++) {
		GS_EXPECT_EQ(gs_kfeat_parse(gs_kfeat_desc(f)->name, &mask, &bad), 0);
		GS_EXPECT_EQ(mask, GS_KF_BIT(f));
	}
	GS_EXPECT(!gs_kfeat_desc(GS_KF__NR));
	GS_EXPECT(!gs_kcmd_name(GS_KCMD__NR));
	GS_EXPECT_EQ(gs_kcmd_needs(GS_KCMD__NR), 0);
}

GS_TEST_MAIN(kernel_6_12_runs_everything_with_everything,
	     kernel_6_1_runs_everything_with_one_link_per_probe,
	     kernel_5_15_runs_everything_with_the_kernels_walk_and_native_stacks,
	     kernel_5_10_lacks_task_storage_and_cookies,
	     missing_features_name_the_first_kernel_with_each,
	     format_truncates_and_reports_the_full_length, parse_names_and_refuses_unknown_ones)
