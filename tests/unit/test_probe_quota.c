// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_probe_quota.c: per-user slots for files probed per process, given back at exit. */
#include "tests/unit/harness.h"
#include "profilers/probe_quota.h"

GS_TEST(a_user_gets_at_most_its_slots)
{
	struct gs_probe_quota *q = gs_probe_quota__new(3);

	if (!GS_EXPECT(q))
		return;
	GS_EXPECT(gs_probe_quota__take(q, 1000, 10, 1, 100));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 10, 1, 101));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 11, 1, 100)); /* same file, another process */
	GS_EXPECT(!gs_probe_quota__take(q, 1000, 12, 1, 102));
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 3);
	/* what is held already is no new slot */
	GS_EXPECT(gs_probe_quota__take(q, 1000, 10, 1, 101));
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 3);
	/* another user has slots of its own */
	GS_EXPECT(gs_probe_quota__take(q, 1001, 12, 1, 102));
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1001), 1);
	gs_probe_quota__free(q);
}

GS_TEST(an_exit_gives_its_slots_back)
{
	struct gs_probe_quota *q = gs_probe_quota__new(2);

	if (!GS_EXPECT(q))
		return;
	GS_EXPECT(gs_probe_quota__take(q, 1000, 10, 1, 100));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 10, 1, 101));
	GS_EXPECT(!gs_probe_quota__take(q, 1000, 11, 1, 100));
	gs_probe_quota__release_pid(q, 11); /* holds none: changes nothing */
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 2);
	gs_probe_quota__release_pid(q, 10);
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 0);
	GS_EXPECT(gs_probe_quota__take(q, 1000, 11, 1, 100));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 11, 1, 101));
	GS_EXPECT(!gs_probe_quota__take(q, 1000, 11, 1, 102));
	gs_probe_quota__free(q);
}

GS_TEST(an_exit_leaves_the_other_processes_slots)
{
	struct gs_probe_quota *q = gs_probe_quota__new(10);

	if (!GS_EXPECT(q))
		return;
	GS_EXPECT(gs_probe_quota__take(q, 1000, 10, 1, 100));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 11, 1, 100));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 11, 1, 101));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 12, 1, 100));
	gs_probe_quota__release_pid(q, 10); /* the first process: the last one takes its place */
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 3);
	GS_EXPECT(gs_probe_quota__take(q, 1000, 13, 1, 102)); /* where the last one was */
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 4);
	/* the others' files are still theirs: taking them again takes no new slot */
	GS_EXPECT(gs_probe_quota__take(q, 1000, 12, 1, 100));
	GS_EXPECT(gs_probe_quota__take(q, 1000, 11, 1, 101));
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 4);
	gs_probe_quota__release_pid(q, 12);
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 3);
	gs_probe_quota__release_pid(q, 11);
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1000), 1);
	gs_probe_quota__free(q);
}

GS_TEST(many_users_and_processes)
{
	struct gs_probe_quota *q = gs_probe_quota__new(GS_PROBE_QUOTA_PER_USER);
	size_t taken = 0;

	if (!GS_EXPECT(q))
		return;
	for (uid_t uid = 1; uid <= 50; uid++)
		for (pid_t pid = 1; pid <= 40; pid++)
			taken += gs_probe_quota__take(q, uid, (pid_t)(uid * 100 + pid), 1, 7);
	GS_EXPECT_EQ(taken, 50 * GS_PROBE_QUOTA_PER_USER);
	for (pid_t pid = 1; pid <= 40; pid++)
		gs_probe_quota__release_pid(q, 100 + pid);
	GS_EXPECT_EQ(gs_probe_quota__held(q, 1), 0);
	GS_EXPECT_EQ(gs_probe_quota__held(q, 2), GS_PROBE_QUOTA_PER_USER);
	gs_probe_quota__free(q);
}

GS_TEST_MAIN(a_user_gets_at_most_its_slots, an_exit_gives_its_slots_back,
	     an_exit_leaves_the_other_processes_slots, many_users_and_processes)
