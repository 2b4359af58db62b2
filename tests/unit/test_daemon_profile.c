// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_daemon_profile.c: profile schedules and ringbuf settings; loss lines once a minute. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "profilers/daemon/config.h"
#include "profilers/daemon/losses.h"
#include "tests/unit/harness.h"

/* What setting key to value says: "ok", or its error message; the config in *out. */
static const char *set(const char *key, const char *value, struct gs_daemon_config *out)
{
	static struct gs_daemon_config c;
	static char msg[256];

	gs_daemon_config__defaults(&c);
	snprintf(msg, sizeof(msg), "untouched");
	if (!gs_daemon_config__set(&c, key, value, msg, sizeof(msg))) {
		if (out)
			*out = c;
		return "ok";
	}
	return msg;
}

GS_TEST(profile_schedules)
{
	struct gs_daemon_config c;
	const struct gs_daemon_schedule *s = &c.schedules[0];

	GS_EXPECT_STR_EQ(set("schedule", "every 10m profile 30s", &c), "ok");
	GS_EXPECT_EQ(c.nr_schedules, 1);
	GS_EXPECT(s->profile && !s->cuda_only);
	GS_EXPECT(s->every_s == 600 && s->record_s == 30);
	GS_EXPECT_EQ(s->hz, 99);
	GS_EXPECT_EQ(s->keep, 0);
	GS_EXPECT_STR_EQ(set("schedule",
			     "every 1h profile 1m hz=499 processes=cuda keep=24 keep-bytes=100M",
			     &c),
			 "ok");
	GS_EXPECT(s->profile && s->cuda_only);
	GS_EXPECT(s->every_s == 3600 && s->record_s == 60);
	GS_EXPECT_EQ(s->hz, 499);
	GS_EXPECT_EQ(s->keep, 24);
	GS_EXPECT_EQ(s->keep_bytes, 100ULL << 20);
	/* a recording stays one */
	GS_EXPECT_STR_EQ(set("schedule", "every 1h record 1m", &c), "ok");
	GS_EXPECT(!s->profile);
}

GS_TEST(bad_profile_schedules)
{
	static const char *const bad[] = {
		"every 1m profile",
		"every 1m profile 2m",
		"every 1m profile 1s hz=0",
		"every 1m profile 1s hz=1000",
		"every 1m profile 1s hz=-5",
		"every 1m profile 1s hz=99x",
		"every 1m profile 1s processes=gpu",
		"every 1m profile 1s keep=-1",
		"every 1m profile 1s keep-bytes=lots",
		"every 1m profile 1s events=cpu",
		"every 1m profile 1s colour=blue",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		GS_EXPECT(strcmp(set("schedule", bad[i], NULL), "ok"));
	GS_EXPECT_STR_EQ(set("schedule", "every 1m profile 2m", NULL),
			 "a profile of 120s every 60s would overlap the next");
	GS_EXPECT_STR_EQ(set("schedule", "every 1m profile 1s hz=1000", NULL),
			 "'every 1m profile 1s hz=1000' is not 'every DURATION profile DURATION "
			 "[hz=1..999] [processes=all|cuda] [keep=N] [keep-bytes=SIZE]'");
	GS_EXPECT_STR_EQ(set("schedule", "every 1m profile 1e9s", NULL),
			 "recording length '1e9s' is out of range (0.1s to 24h)");
}

GS_TEST(ringbuf_sizes)
{
	struct gs_daemon_config c;

	gs_daemon_config__defaults(&c);
	GS_EXPECT_EQ(c.ringbuf_mib, 8);
	GS_EXPECT_STR_EQ(set("ringbuf", "1", &c), "ok");
	GS_EXPECT_EQ(c.ringbuf_mib, 1);
	GS_EXPECT_STR_EQ(set("ringbuf", "1024M", &c), "ok");
	GS_EXPECT_EQ(c.ringbuf_mib, 1024);
	static const char *const bad[] = { "0", "3", "2048", "-4", "4G", "x", "", "16 ", "1e1" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		GS_EXPECT(strcmp(set("ringbuf", bad[i], NULL), "ok"));
	GS_EXPECT_STR_EQ(set("ringbuf", "3", NULL),
			 "'3' is not a ring buffer size (MiB, a power of 2 from 1 to 1024)");
}

GS_TEST(ringbuf_is_read_at_start_only)
{
	struct gs_daemon_config running, next;
	char names[64];

	gs_daemon_config__defaults(&running);
	next = running;
	next.ringbuf_mib = 64;
	GS_EXPECT_EQ(gs_daemon_config__keep_start_only(&next, &running, names, sizeof(names)), 1);
	GS_EXPECT_STR_EQ(names, "ringbuf");
	GS_EXPECT_EQ(next.ringbuf_mib, 8);
}

GS_TEST(losses_logged_once_a_minute_by_kind)
{
	struct gs_daemon_losses l = { 0 };
	uint64_t stats[GS_STAT__MAX] = { 0 };
	const uint64_t s = 1000000000ULL;
	char line[256];

	/* nothing lost: nothing said */
	GS_EXPECT_EQ(gs_daemon_losses__tick(&l, stats, 5 * s, line, sizeof(line)), 0);
	stats[GS_STAT_RINGBUF_FULL] = 120;
	stats[GS_STAT_UID_OVER_SHARE] = 7;
	stats[GS_STAT_STOPS] = 3; /* not a loss */
	GS_EXPECT_EQ(gs_daemon_losses__tick(&l, stats, 6 * s, line, sizeof(line)), 1);
	GS_EXPECT_STR_EQ(line, " ringbuf_full 120, uid_over_share 7");
	/* more, within the minute: held back, then said as the difference */
	stats[GS_STAT_RINGBUF_FULL] = 200;
	l.own[GS_DAEMON_LOSS_FLIGHT_NOMEM] = 2;
	GS_EXPECT_EQ(gs_daemon_losses__tick(&l, stats, 65 * s, line, sizeof(line)), 0);
	GS_EXPECT_EQ(gs_daemon_losses__tick(&l, stats, 66 * s, line, sizeof(line)), 1);
	GS_EXPECT_STR_EQ(line, " ringbuf_full 80, flight_recorder_nomem 2");
	/* a quiet minute: nothing */
	GS_EXPECT_EQ(gs_daemon_losses__tick(&l, stats, 200 * s, line, sizeof(line)), 0);
}

GS_TEST_MAIN(profile_schedules, bad_profile_schedules, ringbuf_sizes, ringbuf_is_read_at_start_only,
	     losses_logged_once_a_minute_by_kind)
