// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_rank_files.c: record -o DIR/: which output names a directory, one file per rank. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "profilers/timeline/rank_files.h"
#include "tests/unit/harness.h"

static bool exists(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return !access(path, F_OK);
}

GS_TEST(a_directory_is_a_name_ending_in_slash_or_an_existing_one)
{
	char dir[] = "/tmp/gs_ranks_XXXXXX";

	if (!GS_EXPECT(mkdtemp(dir)))
		return;
	GS_EXPECT(gs_rank_files_wanted(dir));
	GS_EXPECT(gs_rank_files_wanted("/nonexistent/new/"));
	GS_EXPECT(!gs_rank_files_wanted("/nonexistent/trace.json"));
	GS_EXPECT(!gs_rank_files_wanted("/etc/hostname"));
	GS_EXPECT(!gs_rank_files_wanted(NULL));
	GS_EXPECT(!gs_rank_files_wanted(""));
	rmdir(dir);
}

GS_TEST(one_file_per_rank_else_per_pid_in_place_only_when_closed)
{
	char dir[] = "/tmp/gs_ranks_XXXXXX", sub[64], path[128];
	struct gs_rank_files *rr;

	if (!GS_EXPECT(mkdtemp(dir)))
		return;
	snprintf(sub, sizeof(sub), "%s/made/", dir);
	if (!GS_EXPECT_EQ(gs_rank_files__open(&rr, sub, 1000), 0))
		return;
	GS_EXPECT_EQ(gs_rank_files__file(rr, 1, 100), 0);
	GS_EXPECT_EQ(gs_rank_files__file(rr, -1, 200), 1);
	GS_EXPECT_EQ(gs_rank_files__file(rr, 1, 101), 0); /* another process of rank 1 */
	GS_EXPECT_EQ(gs_rank_files__file(rr, -1, 201), 2);
	GS_EXPECT_EQ(gs_rank_files__file(rr, -1, 200), 1);
	GS_EXPECT_EQ(rr->nr, 3);
	GS_EXPECT(!exists(sub, "rank-1.json")); /* temporaries until the end */
	for (size_t i = 0; i < rr->nr; i++)
		gs_trace_writer__finish(rr->files[i].writer);
	GS_EXPECT_EQ(gs_rank_files__close(rr), 0);
	GS_EXPECT(exists(sub, "rank-1.json"));
	/* beside ranks, the rankless files in no-rank/: HTA would read one as rank 0 */
	GS_EXPECT(!exists(sub, "pid-200.json"));
	GS_EXPECT(exists(sub, "no-rank/pid-200.json"));
	GS_EXPECT(exists(sub, "no-rank/pid-201.json"));
	gs_rank_files__free(rr);
	for (size_t i = 0; i < 3; i++) {
		static const char *const names[] = { "rank-1.json", "no-rank/pid-200.json",
						     "no-rank/pid-201.json" };

		snprintf(path, sizeof(path), "%s%s", sub, names[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%sno-rank", sub);
	GS_EXPECT_EQ(rmdir(path), 0);
	GS_EXPECT_EQ(rmdir(sub), 0); /* nothing else in it */
	rmdir(dir);
}

GS_TEST(rankless_files_stay_in_place_without_ranks)
{
	char dir[] = "/tmp/gs_ranks_XXXXXX", path[64];
	struct gs_rank_files *rr;

	if (!GS_EXPECT(mkdtemp(dir)) || !GS_EXPECT_EQ(gs_rank_files__open(&rr, dir, 1000), 0))
		return;
	GS_EXPECT_EQ(gs_rank_files__file(rr, -1, 300), 0);
	gs_trace_writer__finish(rr->files[0].writer);
	GS_EXPECT_EQ(gs_rank_files__close(rr), 0);
	gs_rank_files__free(rr);
	GS_EXPECT(exists(dir, "pid-300.json"));
	GS_EXPECT(!exists(dir, "no-rank"));
	snprintf(path, sizeof(path), "%s/pid-300.json", dir);
	unlink(path);
	GS_EXPECT_EQ(rmdir(dir), 0);
}

GS_TEST(a_failed_recording_leaves_no_file)
{
	char dir[] = "/tmp/gs_ranks_XXXXXX";
	struct gs_rank_files *rr;

	if (!GS_EXPECT(mkdtemp(dir)) || !GS_EXPECT_EQ(gs_rank_files__open(&rr, dir, 1000), 0))
		return;
	GS_EXPECT_EQ(gs_rank_files__file(rr, 0, 100), 0);
	gs_rank_files__free(rr);     /* never closed */
	GS_EXPECT_EQ(rmdir(dir), 0); /* empty: the temporary is gone */
}

GS_TEST(a_file_where_the_directory_should_be_is_refused)
{
	struct gs_rank_files *rr;

	GS_EXPECT_EQ(gs_rank_files__open(&rr, "/etc/hostname/", 1000), -ENOTDIR);
	GS_EXPECT(rr == NULL);
}

GS_TEST_MAIN(a_directory_is_a_name_ending_in_slash_or_an_existing_one,
	     one_file_per_rank_else_per_pid_in_place_only_when_closed,
	     rankless_files_stay_in_place_without_ranks, a_failed_recording_leaves_no_file,
	     a_file_where_the_directory_should_be_is_refused)
