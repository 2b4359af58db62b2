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

GS_TEST(kernel_5_10_runs_every_command_on_the_old_builds)
{
	/* proc, mem, cuda and cpu's 5.10 builds */
	GS_EXPECT(gs_kcompat_old_objects(K5_10));
	GS_EXPECT_EQ(gs_kcompat_needs(true) & ~K5_10, 0);
	GS_EXPECT_EQ(gs_kcompat_needs(false) & ~K5_10, 0);
	for (int c = 0; c < GS_KCMD__NR; c++)
		GS_EXPECT(runs(K5_10, c));
	GS_EXPECT_EQ(gs_kcompat_cpu_needs() & ~K5_10, 0);
	GS_EXPECT_EQ(gs_kcmd_needs(GS_KCMD_PROFILE), gs_kcompat_cpu_needs());
	GS_EXPECT_EQ(gs_kcompat_old_reason(K5_10), GS_KF_BIT(GS_KF_TASK_BTF) |
							   GS_KF_BIT(GS_KF_TASK_STORAGE) |
							   GS_KF_BIT(GS_KF_COOKIE));
	/* the one line names bpf_loop(), the feature the Python walk itself needs */
	GS_EXPECT(!gs_kcompat_python_frames(K5_10));
	GS_EXPECT_EQ(gs_kcompat_python_missing(K5_10), GS_KF_BIT(GS_KF_LOOP));
	GS_EXPECT(gs_kcompat_kernel_stack_walk(K5_10));
}

GS_TEST(old_builds_have_no_python_walk_nor_bounded_stack_walk)
{
	uint32_t no_storage = K6_12 & ~GS_KF_BIT(GS_KF_TASK_STORAGE);
	uint32_t no_cookie = K6_12 & ~GS_KF_BIT(GS_KF_COOKIE);

	/* bpf_loop() and bpf_find_vma() there, but the 5.10 builds use neither */
	GS_EXPECT(!gs_kcompat_python_frames(no_storage));
	GS_EXPECT_EQ(gs_kcompat_python_missing(no_storage), GS_KF_BIT(GS_KF_TASK_STORAGE));
	GS_EXPECT_EQ(gs_kcompat_python_missing(no_cookie), GS_KF_BIT(GS_KF_COOKIE));
	GS_EXPECT(gs_kcompat_kernel_stack_walk(no_storage));
	GS_EXPECT(gs_kcompat_kernel_stack_walk(no_cookie));
	/* the usual builds: their own walks where the kernel has the helpers */
	GS_EXPECT_EQ(gs_kcompat_python_missing(K6_12), 0);
	GS_EXPECT_EQ(gs_kcompat_old_reason(K6_12), 0);
	GS_EXPECT(!gs_kcompat_kernel_stack_walk(K6_12));
	GS_EXPECT(!gs_kcompat_kernel_stack_walk(K6_1));
	GS_EXPECT(gs_kcompat_kernel_stack_walk(K5_15));
	GS_EXPECT_EQ(gs_kcompat_python_missing(K5_15), GS_KF_BIT(GS_KF_LOOP));
	/* without the ring buffer nothing runs, on any build */
	for (int c = 0; c < GS_KCMD__NR; c++)
		GS_EXPECT(!runs(K6_12 & ~GS_KF_BIT(GS_KF_RINGBUF), c));
}

GS_TEST(old_builds_only_where_a_feature_they_cover_is_missing)
{
	GS_EXPECT(!gs_kcompat_old_objects(K5_15));
	GS_EXPECT(!gs_kcompat_old_objects(K6_1));
	GS_EXPECT(!gs_kcompat_old_objects(K6_12));
	/* each of the three alone (a backport, or GPUSNOOP_KERNEL_FEATURES_OFF) */
	GS_EXPECT(gs_kcompat_old_objects(K6_12 & ~GS_KF_BIT(GS_KF_COOKIE)));
	GS_EXPECT(gs_kcompat_old_objects(K6_12 & ~GS_KF_BIT(GS_KF_TASK_STORAGE)));
	GS_EXPECT(gs_kcompat_old_objects(K6_12 & ~GS_KF_BIT(GS_KF_TASK_BTF)));
	/* the old builds still need the ring buffer and BTF tracepoints */
	GS_EXPECT_EQ(gs_kcompat_needs(true), GS_KF_BIT(GS_KF_RINGBUF) | GS_KF_BIT(GS_KF_TP_BTF));
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
	     kernel_5_10_runs_every_command_on_the_old_builds,
	     old_builds_have_no_python_walk_nor_bounded_stack_walk,
	     old_builds_only_where_a_feature_they_cover_is_missing,
	     missing_features_name_the_first_kernel_with_each,
	     format_truncates_and_reports_the_full_length, parse_names_and_refuses_unknown_ones)
