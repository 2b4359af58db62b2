// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_proc_filter.c: --cgroup's hierarchy from mountinfo, membership from /proc/PID/cgroup. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "profilers/proc_filter.h"
#include "tests/unit/harness.h"

static const char MOUNTINFO[] =
	"31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
	"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
	"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
	"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n"
	"50 23 0:40 /kubepods /mnt/pods rw - cgroup2 cgroup2 rw\n";

GS_TEST(cgroup_located_in_its_hierarchy)
{
	char key[64], rel[256];

	GS_EXPECT_EQ(gs_cgroup_locate(MOUNTINFO, "/sys/fs/cgroup/memory/a/b", key, sizeof(key), rel,
				      sizeof(rel)),
		     0);
	GS_EXPECT_STR_EQ(key, "memory");
	GS_EXPECT_STR_EQ(rel, "/a/b");
	GS_EXPECT_EQ(gs_cgroup_locate(MOUNTINFO, "/sys/fs/cgroup/unified", key, sizeof(key), rel,
				      sizeof(rel)),
		     0);
	GS_EXPECT_STR_EQ(key, "");
	GS_EXPECT_STR_EQ(rel, "/");
	GS_EXPECT_EQ(gs_cgroup_locate(MOUNTINFO, "/sys/fs/cgroup/systemd/x", key, sizeof(key), rel,
				      sizeof(rel)),
		     0);
	GS_EXPECT_STR_EQ(key, "name=systemd");
	/* a mount of a subtree: the path within the hierarchy starts at its root */
	GS_EXPECT_EQ(
		gs_cgroup_locate(MOUNTINFO, "/mnt/pods/p1", key, sizeof(key), rel, sizeof(rel)), 0);
	GS_EXPECT_STR_EQ(rel, "/kubepods/p1");
	GS_EXPECT_EQ(
		gs_cgroup_locate(MOUNTINFO, "/sys/fs/cgroupx", key, sizeof(key), rel, sizeof(rel)),
		-ENOENT);
	GS_EXPECT_EQ(gs_cgroup_locate(MOUNTINFO, "/tmp", key, sizeof(key), rel, sizeof(rel)),
		     -ENOENT);
}

static const char PROC_CGROUP[] = "9:name=systemd:/\n"
				  "4:memory:/jobs/a\n"
				  "2:cpu,cpuacct:/jobs/ab\n"
				  "0::/user.slice/s1\n";

GS_TEST(membership_at_or_below_the_cgroup)
{
	GS_EXPECT(gs_cgroup_contains(PROC_CGROUP, "memory", "/jobs/a"));
	GS_EXPECT(gs_cgroup_contains(PROC_CGROUP, "memory", "/jobs"));
	GS_EXPECT(gs_cgroup_contains(PROC_CGROUP, "memory", "/jobs/"));
	GS_EXPECT(gs_cgroup_contains(PROC_CGROUP, "memory", "/"));
	GS_EXPECT(!gs_cgroup_contains(PROC_CGROUP, "memory", "/jobs/a/b"));
	GS_EXPECT(!gs_cgroup_contains(PROC_CGROUP, "memory", "/job"));
	GS_EXPECT(gs_cgroup_contains(PROC_CGROUP, "cpuacct", "/jobs/ab"));
	GS_EXPECT(!gs_cgroup_contains(PROC_CGROUP, "cpuacct", "/jobs/a"));
	GS_EXPECT(gs_cgroup_contains(PROC_CGROUP, "", "/user.slice"));
	GS_EXPECT(!gs_cgroup_contains(PROC_CGROUP, "", "/system.slice"));
	GS_EXPECT(!gs_cgroup_contains(PROC_CGROUP, "pids", "/"));
	GS_EXPECT(!gs_cgroup_contains("garbage without colons", "", "/"));
}

GS_TEST(comm_filter_judges_a_live_process)
{
	struct gs_proc_filter *f;

	GS_EXPECT_EQ(gs_proc_filter__new(&f, "^test_proc_fil", NULL), 0);
	if (!f)
		return;
	GS_EXPECT(gs_proc_filter__match(f, getpid()));
	GS_EXPECT(!gs_proc_filter__match(f, getppid()) || getppid() == getpid());
	gs_proc_filter__forget(f, getpid());
	GS_EXPECT(gs_proc_filter__match(f, getpid()));
	gs_proc_filter__free(f);
	GS_EXPECT_EQ(gs_proc_filter__new(&f, "(", NULL), -EINVAL);
	GS_EXPECT(!f);
}

GS_TEST_MAIN(cgroup_located_in_its_hierarchy, membership_at_or_below_the_cgroup,
	     comm_filter_judges_a_live_process)
