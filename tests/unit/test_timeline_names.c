// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_timeline_names.c: each process named once per file, with its last label; threads at once. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/timeline/rank_files.h"
#include "profilers/timeline/names.h"
#include "stitch/chrome_trace.h"
#include "tests/unit/harness.h"
#include "user/json.h"

/* The process_name rows n writes for output, as text; caller frees. */
static char *rows(const struct gs_timeline_names *n, size_t output)
{
	struct gs_chrome_trace t;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	gs_chrome_trace__begin(&t, f);
	gs_timeline_names__write(n, output, &t);
	gs_chrome_trace__finish(&t);
	fclose(f);
	return text;
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p++)
		n++;
	return n;
}

GS_TEST(a_process_is_named_once_with_its_label_after_exec)
{
	struct gs_timeline_names *n = gs_timeline_names__new();
	char *text;

	if (!GS_EXPECT(n))
		return;
	GS_EXPECT(gs_timeline_names__process_wanted(n, 10));
	GS_EXPECT_EQ(gs_timeline_names__set_process(n, 10, 1, "gpusnoop (rank 0)"), 0);
	GS_EXPECT(!gs_timeline_names__process_wanted(n, 10));
	/* the exec: its comm and rank change; relabeled in place at its next event */
	gs_timeline_names__gone(n, 10, true, true);
	GS_EXPECT(gs_timeline_names__process_wanted(n, 10));
	GS_EXPECT_EQ(gs_timeline_names__set_process(n, 10, 1, "python3 (rank 0)"), 0);
	GS_EXPECT_EQ(gs_timeline_names__nr(n), 1);
	text = rows(n, 1);
	GS_EXPECT_EQ(count(text, "process_name"), 1);
	GS_EXPECT(strstr(text, "\"python3 (rank 0)\"") != NULL);
	GS_EXPECT(strstr(text, "gpusnoop") == NULL);
	free(text);
	gs_timeline_names__free(n);
}

GS_TEST(an_exit_kept_stays_named_a_forgotten_one_is_named_anew)
{
	struct gs_timeline_names *n = gs_timeline_names__new();
	char *text;

	if (!GS_EXPECT(n))
		return;
	gs_timeline_names__set_process(n, 10, 1, "a (rank 0)");
	gs_timeline_names__set_process(n, 20, 0, "b");
	GS_EXPECT(gs_timeline_names__thread_wanted(n, 10, 11));
	/* -o DIR/: its late samples after its exit come to the same name, the same track */
	gs_timeline_names__gone(n, 10, false, true);
	GS_EXPECT(!gs_timeline_names__process_wanted(n, 10));
	GS_EXPECT(!gs_timeline_names__thread_wanted(n, 10, 11));
	/* one file: a reused pid is another process */
	gs_timeline_names__gone(n, 20, false, false);
	GS_EXPECT(gs_timeline_names__process_wanted(n, 20));
	gs_timeline_names__set_process(n, 20, 0, "c");
	GS_EXPECT_EQ(gs_timeline_names__nr(n), 3);
	GS_EXPECT_EQ(gs_timeline_names__get(n, 0)->pid, 10);
	GS_EXPECT(gs_timeline_names__get(n, 3) == NULL);
	/* each file names only its own processes */
	text = rows(n, 1);
	GS_EXPECT_EQ(count(text, "process_name"), 1);
	GS_EXPECT(strstr(text, "\"a (rank 0)\"") != NULL);
	free(text);
	text = rows(n, 0);
	GS_EXPECT_EQ(count(text, "process_name"), 2);
	free(text);
	gs_timeline_names__free(n);
}

GS_TEST(a_thread_is_named_once_and_nvtx_names_stay)
{
	struct gs_timeline_names *n = gs_timeline_names__new();

	if (!GS_EXPECT(n))
		return;
	GS_EXPECT(gs_timeline_names__thread_wanted(n, 10, 12));
	GS_EXPECT(!gs_timeline_names__thread_wanted(n, 10, 12));
	GS_EXPECT(!gs_timeline_names__thread_wanted(n, 10, 0)); /* tid 0 is no thread */
	GS_EXPECT_EQ(gs_timeline_names__thread_named(n, 10, 13), 0);
	GS_EXPECT(!gs_timeline_names__thread_wanted(n, 10, 13));
	/* an exec names its threads anew */
	gs_timeline_names__gone(n, 10, true, true);
	GS_EXPECT(gs_timeline_names__thread_wanted(n, 10, 12));
	gs_timeline_names__free(n);
}

/* Kineto's distributedInfo of a rank file, with the world's size when its environment said it */
static char *top_level(const struct gs_rank_file *f)
{
	struct gs_json j;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return NULL;
	gs_json__init(&j, m);
	gs_json__begin_object(&j, NULL);
	gs_rank_files__top_level(f, &j);
	gs_json__end_object(&j);
	fclose(m);
	return text;
}

GS_TEST(a_rank_file_says_its_rank_whatever_the_events)
{
	char *text = top_level(&(struct gs_rank_file){ .rank = 3, .world_size = 8 });

	GS_EXPECT(text && strstr(text, "\"distributedInfo\":{\"rank\": 3, \"world_size\": 8}"));
	free(text);
	text = top_level(&(struct gs_rank_file){ .rank = 0, .world_size = -1 });
	GS_EXPECT(text && strstr(text, "\"distributedInfo\":{\"rank\": 0}"));
	free(text);
	text = top_level(&(struct gs_rank_file){ .rank = -1, .pid = 7 });
	GS_EXPECT(text && !strstr(text, "distributedInfo"));
	free(text);
}

/* HTA 0.5 keeps rows with a "dur" only: a trace of samples or counters had none (KeyError) */
GS_TEST(an_instant_and_a_counter_last_zero)
{
	struct gs_chrome_trace t;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!GS_EXPECT(f))
		return;
	gs_chrome_trace__begin(&t, f);
	gs_chrome_trace__event(&t, "i", "sample", "cpu_sample", 1, 2, 3000);
	gs_chrome_trace__end_event(&t);
	gs_chrome_trace__counter(&t, 1, "CUDA memory", 4000, "bytes", 5);
	gs_chrome_trace__finish(&t);
	fclose(f);
	GS_EXPECT_EQ(count(text, "\"dur\":0"), 2);
	GS_EXPECT(strstr(text, "\"ph\":\"i\"") && strstr(text, "\"ph\":\"C\""));
	free(text);
}

GS_TEST_MAIN(an_instant_and_a_counter_last_zero, a_process_is_named_once_with_its_label_after_exec,
	     an_exit_kept_stays_named_a_forgotten_one_is_named_anew,
	     a_thread_is_named_once_and_nvtx_names_stay,
	     a_rank_file_says_its_rank_whatever_the_events)
