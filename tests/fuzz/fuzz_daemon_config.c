// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_daemon_config.c: libFuzzer harness for the daemon's config file (daemon_config.c). */
#include <math.h>
#include "profilers/daemon/config.h"
#include "tests/fuzz/fuzz.h"

#define TERMINATED(arr) (strnlen((arr), sizeof(arr)) < sizeof(arr))

static bool duration_ok(double s)
{
	return isfinite(s) && s >= 0;
}

/*
 * ASan sees no overflow from one field of the config into the next, so every string must
 * still end inside its array and every count stay within its table.
 */
static void check(const struct gs_daemon_config *c)
{
	GS_FUZZ_CHECK(TERMINATED(c->output_dir));
	GS_FUZZ_CHECK(TERMINATED(c->socket_path));
	GS_FUZZ_CHECK(TERMINATED(c->metrics_host));
	GS_FUZZ_CHECK(TERMINATED(c->oom_record_events));
	GS_FUZZ_CHECK(c->nr_schedules <= GS_DAEMON_MAX_SCHEDULES);
	GS_FUZZ_CHECK(duration_ok(c->trigger_interval_s));
	GS_FUZZ_CHECK(duration_ok(c->flight_recorder_s));
	GS_FUZZ_CHECK(duration_ok(c->oom_record_s));
	for (size_t i = 0; i < c->nr_schedules; i++) {
		const struct gs_daemon_schedule *s = &c->schedules[i];

		GS_FUZZ_CHECK(TERMINATED(s->events));
		GS_FUZZ_CHECK(duration_ok(s->every_s) && s->every_s > 0);
		GS_FUZZ_CHECK(duration_ok(s->record_s) && s->record_s < s->every_s);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_daemon_config c;
	char msg[256];
	FILE *f;

	gs_daemon_config__defaults(&c);
	/* glibc's fmemopen reads exactly size bytes, NULs included, as a file would */
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return 0;
	gs_daemon_config__parse(&c, f, "fuzz.conf");
	fclose(f);
	/* checked even after an error: a bad line leaves the config partly applied */
	check(&c);

	/* the flags path: the first line's key and the rest as its value, unparsed */
	if (size && size < 2048) {
		char *s = gs_fuzz_strdup(data, size);
		char *value = strpbrk(s, " \t=");

		if (value)
			*value++ = '\0';
		gs_daemon_config__defaults(&c);
		msg[0] = '\0';
		if (gs_daemon_config__set(&c, s, value ? value : "", msg, sizeof(msg)))
			GS_FUZZ_CHECK(TERMINATED(msg) && msg[0]);
		check(&c);
		free(s);
	}
	return 0;
}
