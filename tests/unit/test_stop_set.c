// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_stop_set.c: start times from /proc/PID/stat, and which commands are interactive shells. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "profilers/job_control.h"
#include "profilers/stop_set.h"

#define STAT_TAIL " 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 987654 1 2 3\n"
#define TEXT(s)	  s, sizeof(s) - 1

GS_TEST(start_time_is_field_22)
{
	uint64_t start = 0;

	GS_EXPECT_EQ(gs_parse_stat_start(TEXT("42 (bash) S 1 42 42" STAT_TAIL), &start), 0);
	GS_EXPECT_EQ(start, 987654);
}

GS_TEST(start_time_after_a_hostile_comm)
{
	uint64_t start = 0;

	/* a comm may hold spaces and ')': the fields start after the last ')' */
	GS_EXPECT_EQ(gs_parse_stat_start(TEXT("42 (a) 1 2 3 (b) S 1 42 42" STAT_TAIL), &start), 0);
	GS_EXPECT_EQ(start, 987654);
}

GS_TEST(start_time_of_a_cut_or_malformed_text_is_an_error)
{
	uint64_t start = 7;

	GS_EXPECT_EQ(gs_parse_stat_start(TEXT("42 (bash) S 1 42 42 0 0"), &start), -EINVAL);
	GS_EXPECT_EQ(gs_parse_stat_start(TEXT("42 bash S 1 42 42" STAT_TAIL), &start), -EINVAL);
	GS_EXPECT_EQ(gs_parse_stat_start(TEXT("42 (x) S 1 42 42 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 "
					      "99999999999999999999999 1\n"),
					 &start),
		     -EINVAL);
	GS_EXPECT_EQ(gs_parse_stat_start(TEXT("42 (x) S 1 42 42 0 0 0 0 0 0 0 0 0 0 0 20 0 1 0 "
					      "12x 1\n"),
					 &start),
		     -EINVAL);
	GS_EXPECT_EQ(start, 7);
}

GS_TEST(own_start_time_is_read)
{
	uint64_t a = 0, b = 0;

	GS_EXPECT_EQ(gs_proc_start(getpid(), &a), 0);
	GS_EXPECT_EQ(gs_proc_start(getpid(), &b), 0);
	GS_EXPECT_EQ(a, b);
	GS_EXPECT_EQ(gs_proc_start(0, &a), -EINVAL);
}

static bool interactive(bool tty, const char *a0, const char *a1, const char *a2)
{
	char *argv[] = { (char *)a0, (char *)a1, (char *)a2, NULL };

	return gs_is_interactive_shell(argv, tty);
}

GS_TEST(interactive_shells_are_found)
{
	GS_EXPECT(interactive(false, "bash", "-i", NULL));
	GS_EXPECT(interactive(false, "/usr/bin/zsh", "-il", NULL));
	GS_EXPECT(interactive(false, "-sh", "--interactive", NULL));
	GS_EXPECT(interactive(true, "bash", NULL, NULL));
	GS_EXPECT(interactive(true, "bash", "--login", NULL));
	GS_EXPECT(interactive(true, "dash", "-o", "vi"));
	GS_EXPECT(interactive(false, "bash", "-i", "-c"));
}

GS_TEST(commands_and_scripts_are_not_interactive)
{
	GS_EXPECT(!interactive(true, "bash", "-c", "true"));
	GS_EXPECT(!interactive(true, "sh", "script.sh", NULL));
	GS_EXPECT(!interactive(false, "bash", NULL, NULL));
	GS_EXPECT(!interactive(true, "python3", "-i", NULL));
	GS_EXPECT(!interactive(true, "bash", "--", "script.sh"));
	GS_EXPECT(!interactive(true, "bash", "+i", "script.sh"));
	GS_EXPECT(!interactive(true, "/opt/bin/bashful", NULL, NULL));
}

GS_TEST_MAIN(start_time_is_field_22, start_time_after_a_hostile_comm,
	     start_time_of_a_cut_or_malformed_text_is_an_error, own_start_time_is_read,
	     interactive_shells_are_found, commands_and_scripts_are_not_interactive)
