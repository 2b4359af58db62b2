// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_ctl_request.c: control request lines: every valid form, every malformed one, its reason. */
#include <errno.h>
#include <string.h>
#include "profilers/daemon/ctl_request.h"
#include "tests/unit/harness.h"

#define USAGE                                                                                    \
	"(status, leaks PID [--children] [json], snapshot PID, record PID [--children] SECONDS " \
	"[EVENTS] [format=json|perfetto])"

/* The reason a line is refused, or "ok". */
static const char *reason(const char *line)
{
	static char msg[256];
	struct gs_ctl_request req;

	memset(msg, 'x', sizeof(msg));
	if (!gs_ctl_request__parse(line, &req, msg, sizeof(msg)))
		return "ok";
	return msg;
}

GS_TEST(valid_forms)
{
	struct gs_ctl_request r;
	char msg[128];

	GS_EXPECT_EQ(gs_ctl_request__parse("status", &r, msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(r.verb, GS_CTL_STATUS);
	GS_EXPECT_EQ(gs_ctl_request__parse("  leaks\t42  ", &r, msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(r.verb, GS_CTL_LEAKS);
	GS_EXPECT_EQ(r.pid, 42);
	GS_EXPECT(!r.json);
	GS_EXPECT_EQ(gs_ctl_request__parse("leaks 42 json", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(r.json);
	GS_EXPECT_EQ(gs_ctl_request__parse("leaks 42 text", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(!r.json);
	GS_EXPECT_EQ(gs_ctl_request__parse("snapshot 1073741823", &r, msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(r.verb, GS_CTL_SNAPSHOT);
	GS_EXPECT_EQ(r.pid, 0x3fffffff);
	GS_EXPECT_EQ(gs_ctl_request__parse("record 7 1.5", &r, msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(r.verb, GS_CTL_RECORD);
	GS_EXPECT_EQ(r.pid, 7);
	GS_EXPECT(r.secs == 1.5);
	GS_EXPECT_STR_EQ(r.events, "");
	GS_EXPECT_EQ(gs_ctl_request__parse("record 7 3600 cuda-mem,cpu", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(r.secs == 3600);
	GS_EXPECT_STR_EQ(r.events, "cuda-mem,cpu");
	GS_EXPECT_EQ(gs_ctl_request__parse("record 7 0.1", &r, msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(gs_ctl_request__parse("record 7 1e2", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(r.secs == 100);
}

GS_TEST(unknown_and_extra_words)
{
	GS_EXPECT_STR_EQ(reason(""), "unknown request '' " USAGE);
	GS_EXPECT_STR_EQ(reason(" \t "), "unknown request '' " USAGE);
	GS_EXPECT_STR_EQ(reason("frobnicate"), "unknown request 'frobnicate' " USAGE);
	GS_EXPECT_STR_EQ(reason("STATUS"), "unknown request 'STATUS' " USAGE);
	GS_EXPECT_STR_EQ(reason("status now"), "unexpected 'now' after the request " USAGE);
	GS_EXPECT_STR_EQ(reason("leaks 1 json x"), "unexpected 'x' after the request " USAGE);
	GS_EXPECT_STR_EQ(reason("snapshot 1 2"), "unexpected '2' after the request " USAGE);
	GS_EXPECT_STR_EQ(reason("record 1 2 cpu x y"), "unexpected 'x' after the request " USAGE);
}

GS_TEST(malformed_pids)
{
	static const char *const bad[] = {
		"leaks 0",
		"leaks -1",
		"leaks +1",
		"leaks 0x10",
		"leaks 1a",
		"leaks 1073741824",
		"leaks 99999999999999999999999",
		"snapshot 1.0",
		"record nan 1",
	};

	GS_EXPECT_STR_EQ(reason("leaks"), "leaks needs a pid " USAGE);
	GS_EXPECT_STR_EQ(reason("snapshot"), "snapshot needs a pid " USAGE);
	GS_EXPECT_STR_EQ(reason("record"), "record needs a pid " USAGE);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *pid = strchr(bad[i], ' ') + 1;
		char want[128];

		snprintf(want, sizeof(want), "'%.*s' is not a pid", (int)strcspn(pid, " "), pid);
		GS_EXPECT_STR_EQ(reason(bad[i]), want);
	}
}

GS_TEST(record_lengths_range_checked)
{
	static const char *const bad[] = {
		"0",
		"0.0",
		"-1",
		"+1",
		"0.0000000001",
		"0.09",
		"3600.001",
		"3601",
		"nan",
		"NaN",
		"inf",
		"-inf",
		"infinity",
		"1e400",
		"1e-400",
		"0x10",
		"1s",
		"1,5",
		".",
		"e",
		"1e",
		"--1",
		"1e+99999999999",
		"99999999999999999999999999999999999999999999",
	};

	GS_EXPECT_STR_EQ(reason("record 1"), "record needs a length in seconds " USAGE);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[128], want[160];

		snprintf(line, sizeof(line), "record 1 %s", bad[i]);
		snprintf(want, sizeof(want),
			 "'%.32s%s' is not a recording length in seconds (0.1 to 3600)", bad[i],
			 strlen(bad[i]) > 32 ? "..." : "");
		GS_EXPECT_STR_EQ(reason(line), want);
	}
}

#define NAMES                                                                                   \
	"(cuda-mem, cuda-launch, cuda-launch-latency, cuda-sync, cuda-memcpy, torch-mem, cpu, " \
	"gpu, nvtx)"

GS_TEST(formats_and_event_lists)
{
	char events[129], line[160];

	GS_EXPECT_STR_EQ(reason("leaks 1 xml"), "unknown format 'xml' (text or json)");
	GS_EXPECT_STR_EQ(reason("leaks 1 JSON"), "unknown format 'JSON' (text or json)");
	GS_EXPECT_STR_EQ(reason("record 1 1 Bad;rm"), "'Bad;rm' is not an event " NAMES);
	GS_EXPECT_STR_EQ(reason("record 1 1 cpu/x"), "'cpu/x' is not an event " NAMES);
	/* names `record -e` would refuse when the recording starts: refused now */
	GS_EXPECT_STR_EQ(reason("record 1 1 cuda-foo"), "'cuda-foo' is not an event " NAMES);
	GS_EXPECT_STR_EQ(reason("record 1 1 cpu,gpus"), "'gpus' is not an event " NAMES);
	GS_EXPECT_STR_EQ(reason("record 1 1 cpu,,gpu"), "'' is not an event " NAMES);
	GS_EXPECT_STR_EQ(reason("record 1 1 cpu,"), "'' is not an event " NAMES);
	GS_EXPECT_STR_EQ(reason("record 1 1 cuda-mem,cuda-launch-latency,torch-mem,gpu"), "ok");
	GS_EXPECT_STR_EQ(reason("record 1 1 nvtx,cuda-launch"), "ok"); /* as record -e nvtx */
	memset(events, 'a', 128);
	events[128] = '\0';
	snprintf(line, sizeof(line), "record 1 1 %s", events);
	GS_EXPECT_STR_EQ(reason(line), "event list longer than 127 bytes");
	events[127] = '\0';
	snprintf(line, sizeof(line), "record 1 1 %s", events);
	GS_EXPECT_STR_EQ(reason(line),
			 "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is not an event " NAMES);
	for (size_t i = 0; i < 124; i += 4)
		memcpy(events + i, "cpu,", 4);
	memcpy(events + 124, "cpu", 4); /* 127 bytes fit */
	snprintf(line, sizeof(line), "record 1 1 %s", events);
	GS_EXPECT_STR_EQ(reason(line), "ok");
}

GS_TEST(echoed_words_are_short_and_printable)
{
	char line[64];

	GS_EXPECT_STR_EQ(reason("\x1b[31mred"), "unknown request '?[31mred' " USAGE);
	GS_EXPECT_STR_EQ(reason("caf\xc3\xa9"), "unknown request 'caf?"
						"?' " USAGE);
	memset(line, 'v', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	GS_EXPECT_STR_EQ(reason(line),
			 "unknown request 'vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv...' " USAGE);
}

GS_TEST(long_lines_and_small_buffers)
{
	static char line[GS_CTL_REQUEST_MAX + 1];
	struct gs_ctl_request r;
	char msg[8];

	memset(line, ' ', sizeof(line) - 1);
	memcpy(line, "status", 6);
	line[GS_CTL_REQUEST_MAX - 1] = '\0'; /* 1023 bytes: the most a line may hold */
	GS_EXPECT_STR_EQ(reason(line), "ok");
	line[GS_CTL_REQUEST_MAX - 1] = ' ';
	GS_EXPECT_STR_EQ(reason(line), "request too long (at most 1023 bytes)");
	/* the reason is cut to fit, never overflows, and is still terminated */
	memset(msg, 'x', sizeof(msg));
	GS_EXPECT_EQ(gs_ctl_request__parse("frobnicate", &r, msg, sizeof(msg)), -EINVAL);
	GS_EXPECT_STR_EQ(msg, "unknown");
	GS_EXPECT_EQ(gs_ctl_request__parse("frobnicate", &r, NULL, 0), -EINVAL);
	GS_EXPECT_STR_EQ(gs_ctl_verb_name(GS_CTL_RECORD), "record");
}

GS_TEST(children_with_leaks_and_record)
{
	struct gs_ctl_request r;
	char msg[256];

	GS_EXPECT_EQ(gs_ctl_request__parse("leaks 42 --children json", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(r.children && r.json && r.pid == 42);
	GS_EXPECT_EQ(gs_ctl_request__parse("leaks --children 42", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(r.children && !r.json && r.pid == 42);
	GS_EXPECT_EQ(gs_ctl_request__parse("leaks 42", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(!r.children);
	GS_EXPECT_EQ(
		gs_ctl_request__parse("record 7 --children 2 cpu,cuda-mem", &r, msg, sizeof(msg)),
		0);
	GS_EXPECT(r.children && r.pid == 7 && r.secs == 2 && !strcmp(r.events, "cpu,cuda-mem"));
	GS_EXPECT_EQ(gs_ctl_request__parse("record 7 2 cpu --children", &r, msg, sizeof(msg)), 0);
	GS_EXPECT(r.children && !strcmp(r.events, "cpu"));
	GS_EXPECT_STR_EQ(reason("leaks 1 --children --children"), "'--children' given twice");
	GS_EXPECT_STR_EQ(reason("snapshot 1 --children"),
			 "'--children' goes with leaks and record");
	GS_EXPECT_STR_EQ(reason("status --children"), "'--children' goes with leaks and record");
	GS_EXPECT_STR_EQ(reason("leaks --children"), "leaks needs a pid " USAGE);
	GS_EXPECT_STR_EQ(reason("record 1 2 cpu x --children"),
			 "unexpected 'x' after the request " USAGE);
	GS_EXPECT_STR_EQ(reason("leaks 1 --child"), "unknown format '--child' (text or json)");
}

GS_TEST(a_recordings_format)
{
	struct gs_ctl_request r;
	char msg[128];

	GS_EXPECT_EQ(gs_ctl_request__parse("record 7 1", &r, msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(r.format, GS_CTL_FORMAT_DEFAULT);
	GS_EXPECT_EQ(gs_ctl_request__parse("record 7 1 cpu format=perfetto --children", &r, msg,
					   sizeof(msg)),
		     0);
	GS_EXPECT_EQ(r.format, GS_CTL_FORMAT_PERFETTO);
	GS_EXPECT(r.children);
	GS_EXPECT_STR_EQ(r.events, "cpu");
	GS_EXPECT_EQ(gs_ctl_request__parse("record format=json 7 1", &r, msg, sizeof(msg)), 0);
	GS_EXPECT_EQ(r.format, GS_CTL_FORMAT_JSON);
	GS_EXPECT_STR_EQ(reason("record 7 1 format=pb"),
			 "unknown trace format 'pb' (json or perfetto)");
	GS_EXPECT_STR_EQ(reason("record 7 1 format=json format=json"), "'format=' given twice");
	GS_EXPECT_STR_EQ(reason("leaks 7 format=json"), "'format=json' goes with record");
}

GS_TEST_MAIN(children_with_leaks_and_record, valid_forms, a_recordings_format,
	     unknown_and_extra_words, malformed_pids, record_lengths_range_checked,
	     formats_and_event_lists, echoed_words_are_short_and_printable,
	     long_lines_and_small_buffers)
