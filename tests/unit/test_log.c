// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_log.c: a message below the level costs nothing: its arguments are never evaluated. */
#include "user/log.h"
#include "tests/unit/harness.h"

static int calls;

static int counted(void)
{
	return ++calls;
}

GS_TEST(hidden_levels_do_not_evaluate_arguments)
{
	calls = 0;
	gs_log_set_level(GS_LOG_ERR);
	gs_warn("hidden %d", counted());
	gs_info("hidden %d", counted());
	gs_dbg("hidden %d", counted());
	GS_EXPECT_EQ(calls, 0);
	gs_log_set_level(GS_LOG_INFO);
	gs_dbg("hidden %d", counted());
	GS_EXPECT_EQ(calls, 0);
}

GS_TEST(shown_levels_evaluate_arguments_once)
{
	calls = 0;
	gs_log_set_level(GS_LOG_DEBUG);
	gs_dbg("test_log: shown %d", counted());
	gs_warn("test_log: shown %d", counted());
	GS_EXPECT_EQ(calls, 2);
	gs_log_set_level(GS_LOG_INFO);
}

GS_TEST_MAIN(hidden_levels_do_not_evaluate_arguments, shown_levels_evaluate_arguments_once)
