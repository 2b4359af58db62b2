// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_daemon_config.c: daemon settings from text: values, comments, and errors by line. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/daemon/config.h"
#include "user/metrics_server.h"
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

/* What setting key to value says: "ok", or its error message. */
static const char *set(const char *key, const char *value)
{
	static struct gs_daemon_config c;
	static char msg[256];

	gs_daemon_config__defaults(&c);
	memset(msg, 'x', sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	if (!gs_daemon_config__set(&c, key, value, msg, sizeof(msg)))
		return "ok";
	return msg;
}

GS_TEST(periods_and_lengths_are_range_checked)
{
	/* a period of 1e-10 s spun the main loop; one of 1e300 s overflowed its conversion */
	GS_EXPECT_STR_EQ(set("schedule", "every 0.0000000001s record 1s"),
			 "schedule period '0.0000000001s' is out of range (1s to 30d)");
	GS_EXPECT_STR_EQ(set("schedule", "every 1e300s record 1s"),
			 "schedule period '1e300s' is out of range (1s to 30d)");
	GS_EXPECT_STR_EQ(set("schedule", "every 1e308d record 1s"),
			 "schedule period '1e308d' is out of range (1s to 30d)");
	GS_EXPECT_STR_EQ(set("schedule", "every 0.999 record 0.5"),
			 "schedule period '0.999' is out of range (1s to 30d)");
	GS_EXPECT_STR_EQ(set("schedule", "every 31d record 1s"),
			 "schedule period '31d' is out of range (1s to 30d)");
	GS_EXPECT_STR_EQ(set("schedule", "every 2d record 25h"),
			 "recording length '25h' is out of range (0.1s to 24h)");
	GS_EXPECT_STR_EQ(set("schedule", "every 1m record 0.01s"),
			 "recording length '0.01s' is out of range (0.1s to 24h)");
	GS_EXPECT_STR_EQ(set("schedule", "every 1s record 0.1s"), "ok");
	GS_EXPECT_STR_EQ(set("schedule", "every 30d record 24h"), "ok");
	GS_EXPECT_STR_EQ(set("schedule", "every 720h record 86400"), "ok");
	/* not numbers at all: the usage, as before */
	GS_EXPECT_STR_EQ(set("schedule", "every nan record 1s"),
			 "'every nan record 1s' is not 'every DURATION record DURATION "
			 "[events=LIST] [keep=N] [keep-bytes=SIZE]'");
	GS_EXPECT_STR_EQ(set("schedule", "every infs record 1s"),
			 "'every infs record 1s' is not 'every DURATION record DURATION "
			 "[events=LIST] [keep=N] [keep-bytes=SIZE]'");
	GS_EXPECT_STR_EQ(set("schedule", "every -1s record 1s"),
			 "'every -1s record 1s' is not 'every DURATION record DURATION "
			 "[events=LIST] [keep=N] [keep-bytes=SIZE]'");
	GS_EXPECT_STR_EQ(set("schedule", "every 0x10 record 1s"),
			 "'every 0x10 record 1s' is not 'every DURATION record DURATION "
			 "[events=LIST] [keep=N] [keep-bytes=SIZE]'");
	/* past what a double holds: out of range too, never converted */
	GS_EXPECT_STR_EQ(set("schedule", "every 1e999 record 1s"),
			 "schedule period '1e999' is out of range (1s to 30d)");

	GS_EXPECT_STR_EQ(set("oom-record", "0.05s"),
			 "recording length '0.05s' is out of range (0.1s to 24h)");
	GS_EXPECT_STR_EQ(set("oom-record", "2d events=cpu"),
			 "recording length '2d' is out of range (0.1s to 24h)");
	GS_EXPECT_STR_EQ(set("oom-record", "nan"), "'nan' is not 'DURATION [events=LIST]' or off");
	GS_EXPECT_STR_EQ(set("oom-record", "24h"), "ok");
	GS_EXPECT_STR_EQ(set("trigger-interval", "31d"),
			 "trigger interval '31d' is out of range (0 to 30d)");
	GS_EXPECT_STR_EQ(set("trigger-interval", "1e300"),
			 "trigger interval '1e300' is out of range (0 to 30d)");
	GS_EXPECT_STR_EQ(set("trigger-interval", "-1"), "'-1' is not a number of seconds");
	GS_EXPECT_STR_EQ(set("trigger-interval", "inf"), "'inf' is not a number of seconds");
	GS_EXPECT_STR_EQ(set("trigger-interval", "0"), "ok");
	GS_EXPECT_STR_EQ(set("trigger-interval", "5m"), "ok");
	GS_EXPECT_STR_EQ(set("flight-recorder", "0.5s"),
			 "flight recorder window '0.5s' is out of range (1s to 1h)");
	GS_EXPECT_STR_EQ(set("flight-recorder", "2h"),
			 "flight recorder window '2h' is out of range (1s to 1h)");
	GS_EXPECT_STR_EQ(set("flight-recorder", "NaN"),
			 "'NaN' is not a duration (e.g. 30s) or off");
	GS_EXPECT_STR_EQ(set("flight-recorder", "1h"), "ok");
}

GS_TEST(out_of_range_leaves_the_value)
{
	struct gs_daemon_config c;
	char msg[128];

	gs_daemon_config__defaults(&c);
	GS_EXPECT_EQ(gs_daemon_config__set(&c, "trigger-interval", "99d", msg, sizeof(msg)),
		     -EINVAL);
	GS_EXPECT(c.trigger_interval_s == 60);
	GS_EXPECT_EQ(gs_daemon_config__set(&c, "oom-record", "99d", msg, sizeof(msg)), -EINVAL);
	GS_EXPECT(c.oom_record_s == 0);
	GS_EXPECT_EQ(
		gs_daemon_config__set(&c, "schedule", "every 0.1 record 0.1", msg, sizeof(msg)),
		-EINVAL);
	GS_EXPECT_EQ(c.nr_schedules, 0);
	/* the file path reports the line */
	GS_EXPECT_EQ(parse_text(&c, "top 3\nschedule every 0.0000000001s record 1s\n"), -EINVAL);
	GS_EXPECT_EQ(c.nr_schedules, 0);
}

GS_TEST(per_user_limits)
{
	struct gs_daemon_config c;

	gs_daemon_config__defaults(&c);
	GS_EXPECT_EQ(c.user_max_recordings, 2);
	GS_EXPECT_EQ(c.user_max_bytes, 64ULL << 20);
	GS_EXPECT_EQ(parse_text(&c, "user-max-recordings 0\nuser-max-bytes 1G\n"), 0);
	GS_EXPECT_EQ(c.user_max_recordings, 0);
	GS_EXPECT_EQ(c.user_max_bytes, 1ULL << 30);
	GS_EXPECT_STR_EQ(set("user-max-recordings", "16"), "ok");
	GS_EXPECT_STR_EQ(set("user-max-recordings", "17"),
			 "'17' is not a number of recordings (0 to 16)");
	GS_EXPECT_STR_EQ(set("user-max-recordings", "-1"),
			 "'-1' is not a number of recordings (0 to 16)");
	GS_EXPECT_STR_EQ(set("user-max-recordings", "99999999999999999999999"),
			 "'99999999999999999999999' is not a number of recordings (0 to 16)");
	GS_EXPECT_STR_EQ(set("user-max-bytes", "0"), "'0' is not a size (e.g. 64M)");
	GS_EXPECT_STR_EQ(set("user-max-bytes", "99999999999T"),
			 "'99999999999T' is not a size (e.g. 64M)");
}

static struct sockaddr_in6 v6(const char *text)
{
	struct sockaddr_in6 sa = { .sin6_family = AF_INET6 };

	inet_pton(AF_INET6, text, &sa.sin6_addr);
	return sa;
}

static struct sockaddr_in v4(const char *text)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };

	inet_pton(AF_INET, text, &sa.sin_addr);
	return sa;
}

#define MATCH(p, sa) gs_net_prefix__match((p), (const struct sockaddr *)&(sa))

GS_TEST(metrics_allow_list)
{
	struct gs_daemon_config c;
	struct sockaddr_in a;
	struct sockaddr_in6 b;

	gs_daemon_config__defaults(&c);
	GS_EXPECT_EQ(c.nr_metrics_allow, 0); /* whoever reaches the loopback address */
	GS_EXPECT_EQ(parse_text(&c, "metrics-allow 127.0.0.1,::1,10.1.0.0/16,fd00::/8\n"), 0);
	GS_EXPECT_EQ(c.nr_metrics_allow, 4);
	a = v4("127.0.0.1");
	GS_EXPECT(MATCH(&c.metrics_allow[0], a));
	a = v4("127.0.0.2");
	GS_EXPECT(!MATCH(&c.metrics_allow[0], a));
	b = v6("::ffff:127.0.0.1"); /* a dual-stack listener sees IPv4 clients so */
	GS_EXPECT(MATCH(&c.metrics_allow[0], b));
	b = v6("::1");
	GS_EXPECT(MATCH(&c.metrics_allow[1], b));
	GS_EXPECT(!MATCH(&c.metrics_allow[0], b));
	a = v4("10.1.255.7");
	GS_EXPECT(MATCH(&c.metrics_allow[2], a));
	a = v4("10.2.0.1");
	GS_EXPECT(!MATCH(&c.metrics_allow[2], a));
	b = v6("fdff::1");
	GS_EXPECT(MATCH(&c.metrics_allow[3], b));
	b = v6("fe00::1");
	GS_EXPECT(!MATCH(&c.metrics_allow[3], b));
	GS_EXPECT_EQ(parse_text(&c, "metrics-allow 0.0.0.0/0\n"), 0);
	a = v4("192.0.2.1");
	GS_EXPECT(MATCH(&c.metrics_allow[0], a));
	b = v6("2001:db8::1");
	GS_EXPECT(!MATCH(&c.metrics_allow[0], b)); /* IPv4's everything is not IPv6's */
	GS_EXPECT_EQ(parse_text(&c, "metrics-allow any\n"), 0);
	GS_EXPECT_EQ(c.nr_metrics_allow, 0);

	GS_EXPECT_STR_EQ(set("metrics-allow", "localhost"),
			 "'localhost' is not an address or ADDRESS/BITS");
	GS_EXPECT_STR_EQ(set("metrics-allow", "10.0.0.0/33"),
			 "'10.0.0.0/33' is not an address or ADDRESS/BITS");
	GS_EXPECT_STR_EQ(set("metrics-allow", "::/129"),
			 "'::/129' is not an address or ADDRESS/BITS");
	GS_EXPECT_STR_EQ(set("metrics-allow", "10.0.0.0/-1"),
			 "'10.0.0.0/-1' is not an address or ADDRESS/BITS");
	GS_EXPECT_STR_EQ(set("metrics-allow", ","), "',' is not a list of addresses (or any)");
	GS_EXPECT_STR_EQ(set("metrics-allow", "1.1.1.1,1.1.1.2,1.1.1.3,1.1.1.4,1.1.1.5,1.1.1.6,"
					      "1.1.1.7,1.1.1.8,1.1.1.9,1.1.1.10,1.1.1.11,1.1.1.12,"
					      "1.1.1.13,1.1.1.14,1.1.1.15,1.1.1.16,1.1.1.17"),
			 "at most 16 addresses");
}

/* SIGHUP: torch and cuda-call-metrics stay as they were at start; the rest is applied */
GS_TEST(reload_keeps_start_only_settings)
{
	struct gs_daemon_config running, next;
	char names[64];

	GS_EXPECT_EQ(parse_text(&running, "torch on\ncuda-call-metrics off\ntop 5\n"), 0);
	GS_EXPECT_EQ(parse_text(&next, "torch off\ncuda-call-metrics on\ntop 7\n"), 0);
	GS_EXPECT_EQ(gs_daemon_config__keep_start_only(&next, &running, names, sizeof(names)), 2);
	GS_EXPECT_STR_EQ(names, "torch, cuda-call-metrics");
	GS_EXPECT(next.torch);
	GS_EXPECT(!next.call_metrics);
	GS_EXPECT_EQ(next.top, 7);
	/* nothing start-only changed: nothing kept, nothing said */
	GS_EXPECT_EQ(gs_daemon_config__keep_start_only(&next, &running, names, sizeof(names)), 0);
	GS_EXPECT_STR_EQ(names, "");
	/* a short buffer still gets whole names only, and the count stays right */
	next.torch = false;
	next.call_metrics = true;
	GS_EXPECT_EQ(gs_daemon_config__keep_start_only(&next, &running, names, 8), 2);
	GS_EXPECT_STR_EQ(names, "torch");
}

/* Every row of the table carries what gpusnoop.conf(5) and the default file are made of. */
GS_TEST(every_setting_is_documented)
{
	size_t nr;
	const struct gs_daemon_setting *st = gs_daemon_settings(&nr);

	GS_EXPECT(nr >= 15);
	for (size_t i = 0; i < nr; i++) {
		GS_EXPECT(st[i].name && st[i].parse && st[i].value && st[i].range && st[i].doc);
		/* start-only ones say so by that flag; the others say what a reload does */
		GS_EXPECT(st[i].start_only || st[i].reload);
		/* the man page quotes the form; the default file shows def or the example */
		GS_EXPECT(!strchr(st[i].value, '"'));
		GS_EXPECT(st[i].def || st[i].example);
		for (size_t j = 0; j < i; j++)
			GS_EXPECT(strcmp(st[i].name, st[j].name));
	}
}

/* The defaults are the table's def column: each parses, and they are today's values. */
GS_TEST(defaults_come_from_the_table)
{
	struct gs_daemon_config c, d;
	size_t nr;
	const struct gs_daemon_setting *st = gs_daemon_settings(&nr);
	char msg[256];

	gs_daemon_config__defaults(&d);
	for (size_t i = 0; i < nr; i++) {
		gs_daemon_config__defaults(&c);
		if (st[i].def)
			GS_EXPECT_EQ(
				gs_daemon_config__set(&c, st[i].name, st[i].def, msg, sizeof(msg)),
				0);
		if (st[i].example)
			GS_EXPECT_EQ(gs_daemon_config__set(&c, st[i].name, st[i].example, msg,
							   sizeof(msg)),
				     0);
	}
	GS_EXPECT_STR_EQ(d.socket_path, "/run/gpusnoop.sock");
	GS_EXPECT_EQ(d.output_max_bytes, 1ULL << 30);
	GS_EXPECT(d.trigger_interval_s == 60 && d.flight_recorder_s == 30 && d.oom_record_s == 0);
	GS_EXPECT_EQ(d.top, 20);
	GS_EXPECT(d.torch && !d.call_metrics && d.oom_reports);
	GS_EXPECT_EQ(d.user_max_recordings, 2);
	GS_EXPECT_EQ(d.user_max_bytes, 64ULL << 20);
	GS_EXPECT_EQ(d.nr_metrics_allow, 0);
	GS_EXPECT_EQ(d.nr_schedules, 0);
	GS_EXPECT_STR_EQ(d.oom_record_events, "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy");
}

/* The default file is the defaults: parsed, it changes nothing. */
GS_TEST(default_file_parses_to_the_defaults)
{
	struct gs_daemon_config c, d;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	gs_daemon_config__print_default(f);
	fclose(f);
	GS_EXPECT_EQ(parse_text(&c, text), 0);
	gs_daemon_config__defaults(&d);
	GS_EXPECT(!memcmp(&c, &d, sizeof(c)));
	GS_EXPECT(strstr(text, "\n#schedule every 15m record 30s "));
	free(text);
}

/* Event lists are the names `record -e` takes, checked at load, not when recordings fail. */
GS_TEST(event_lists_are_checked_up_front)
{
	GS_EXPECT_STR_EQ(set("schedule", "every 1h record 1s events=cuda-foo"),
			 "'cuda-foo' is not an event (cuda-mem, cuda-launch, cuda-launch-latency, "
			 "cuda-sync, cuda-memcpy, torch-mem, cpu, gpu, nvtx)");
	GS_EXPECT_STR_EQ(set("oom-record", "1s events=cpu,,gpu"),
			 "'' is not an event (cuda-mem, cuda-launch, cuda-launch-latency, "
			 "cuda-sync, cuda-memcpy, torch-mem, cpu, gpu, nvtx)");
	GS_EXPECT_STR_EQ(set("oom-record", "1s events=torch-mem,cuda-launch-latency,gpu,cpu"),
			 "ok");
	GS_EXPECT_STR_EQ(set("schedule", "every 1h record 1s events=nvtx,cuda-launch"), "ok");
	GS_EXPECT_STR_EQ(set("oom-record", "1s events="),
			 "an empty event list (cuda-mem, cuda-launch, cuda-launch-latency, "
			 "cuda-sync, cuda-memcpy, torch-mem, cpu, gpu, nvtx)");
	/* a unix socket's path has 108 bytes: a longer one would fail only at bind() */
	GS_EXPECT_STR_EQ(set("socket",
			     "/run/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
			     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
			 "socket path longer than 107 bytes");
	GS_EXPECT_STR_EQ(set("socket", "run/gs.sock"), "'run/gs.sock' is not an absolute path");
}

GS_TEST_MAIN(defaults_are_safe, every_setting_with_comments, metrics_off_and_any_port,
	     bad_lines_are_errors, flags_use_the_same_keys, schedules_and_oom_recording,
	     bad_schedules_are_errors, periods_and_lengths_are_range_checked,
	     out_of_range_leaves_the_value, per_user_limits, metrics_allow_list,
	     reload_keeps_start_only_settings, every_setting_is_documented,
	     defaults_come_from_the_table, default_file_parses_to_the_defaults,
	     event_lists_are_checked_up_front)
