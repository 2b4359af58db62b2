// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_daemon_config.c: daemon settings from text: values, comments, and errors by line. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "profilers/daemon_config.h"
#include "tests/unit/harness.h"

static int parse_text(struct gs_daemon_config *c, const char *text)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int err;

	gs_daemon_config__defaults(c);
	err = gs_daemon_config__parse(c, f, "test.conf");
	fclose(f);
	return err;
}

GS_TEST(defaults_are_safe)
{
	struct gs_daemon_config c;

	gs_daemon_config__defaults(&c);
	GS_EXPECT_STR_EQ(c.metrics_host, "127.0.0.1"); /* never every interface by default */
	GS_EXPECT_EQ(c.metrics_port, 9464);
	GS_EXPECT(c.oom_reports);
	GS_EXPECT_STR_EQ(c.output_dir, "/var/lib/gpusnoop");
}

GS_TEST(every_setting_with_comments)
{
	struct gs_daemon_config c;

	GS_EXPECT_EQ(parse_text(&c, "# a comment\n"
				    "\n"
				    "output-dir   /srv/gs   # trailing comment\n"
				    "socket /run/gs.sock\n"
				    "metrics-addr [::1]:9000\n"
				    "output-max-bytes 512M\n"
				    "oom-reports off\n"
				    "trigger-interval 2.5\n"
				    "top 0\n"),
		     0);
	GS_EXPECT_STR_EQ(c.output_dir, "/srv/gs");
	GS_EXPECT_STR_EQ(c.socket_path, "/run/gs.sock");
	GS_EXPECT_STR_EQ(c.metrics_host, "::1");
	GS_EXPECT_EQ(c.metrics_port, 9000);
	GS_EXPECT_EQ(c.output_max_bytes, 512ULL << 20);
	GS_EXPECT(!c.oom_reports);
	GS_EXPECT(c.trigger_interval_s == 2.5);
	GS_EXPECT_EQ(c.top, 0);
}

GS_TEST(metrics_off_and_any_port)
{
	struct gs_daemon_config c;

	GS_EXPECT_EQ(parse_text(&c, "metrics-addr off\n"), 0);
	GS_EXPECT_STR_EQ(c.metrics_host, "");
	GS_EXPECT_EQ(parse_text(&c, "metrics-addr 0.0.0.0:0\n"), 0);
	GS_EXPECT_STR_EQ(c.metrics_host, "0.0.0.0");
	GS_EXPECT_EQ(c.metrics_port, 0);
}

GS_TEST(bad_lines_are_errors)
{
	static const char *const bad[] = {
		"frobnicate yes\n",
		"output-dir relative/path\n",
		"metrics-addr nowhere\n",
		"metrics-addr :9464\n",
		"metrics-addr host:70000\n",
		"output-max-bytes 12X\n",
		"output-max-bytes 0\n",
		"output-max-bytes -1\n",
		"oom-reports maybe\n",
		"trigger-interval soon\n",
		"top -3\n",
		"socket\n",
	};
	struct gs_daemon_config c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		GS_EXPECT_EQ(parse_text(&c, bad[i]), -EINVAL);
}

GS_TEST(flags_use_the_same_keys)
{
	struct gs_daemon_config c;
	char msg[128] = "";

	gs_daemon_config__defaults(&c);
	GS_EXPECT_EQ(gs_daemon_config__set(&c, "metrics-addr", "127.0.0.1:1", msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(c.metrics_port, 1);
	GS_EXPECT_EQ(gs_daemon_config__set(&c, "output-dir", "x", msg, sizeof(msg)), -EINVAL);
	GS_EXPECT_STR_EQ(msg, "'x' is not an absolute path");
}

GS_TEST(schedules_and_oom_recording)
{
	struct gs_daemon_config c;
	const struct gs_daemon_schedule *s;

	GS_EXPECT_EQ(parse_text(&c, "schedule every 15m record 30s\n"
				    "schedule every 2h record 1m events=cuda-sync,cpu keep=3 "
				    "keep-bytes=1G\n"
				    "oom-record 10s events=cpu\n"),
		     0);
	GS_EXPECT_EQ(c.nr_schedules, 2);
	s = &c.schedules[0];
	GS_EXPECT(s->every_s == 900 && s->record_s == 30);
	GS_EXPECT_STR_EQ(s->events, "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy");
	GS_EXPECT_EQ(s->keep, 0);
	s = &c.schedules[1];
	GS_EXPECT(s->every_s == 7200 && s->record_s == 60);
	GS_EXPECT_STR_EQ(s->events, "cuda-sync,cpu");
	GS_EXPECT_EQ(s->keep, 3);
	GS_EXPECT_EQ(s->keep_bytes, 1ULL << 30);
	GS_EXPECT(c.oom_record_s == 10);
	GS_EXPECT_STR_EQ(c.oom_record_events, "cpu");
	GS_EXPECT_EQ(parse_text(&c, "oom-record off\n"), 0);
	GS_EXPECT(c.oom_record_s == 0);
}

GS_TEST(bad_schedules_are_errors)
{
	static const char *const bad[] = {
		"schedule every 1m\n",
		"schedule every 1m record 2m\n", /* overlaps the next */
		"schedule each 1m record 1s\n",
		"schedule every 1x record 1s\n",
		"schedule every 1m record 1s keep=-1\n",
		"schedule every 1m record 1s events=Bad;rm\n",
		"schedule every 1m record 1s colour=blue\n",
		"oom-record soon\n",
		"oom-record 1s cpu\n",
	};
	struct gs_daemon_config c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		GS_EXPECT_EQ(parse_text(&c, bad[i]), -EINVAL);
}

GS_TEST_MAIN(defaults_are_safe, every_setting_with_comments, metrics_off_and_any_port,
	     bad_lines_are_errors, flags_use_the_same_keys, schedules_and_oom_recording,
	     bad_schedules_are_errors)
