// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* profile_config.c: the settings this part of the daemon adds: profile schedules, ringbuf. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/daemon/config.h"
#include "profilers/daemon/losses.h"
#include "profilers/daemon/profile_schedule.h"

#define LINE_MAX_LEN 1024

int gs_daemon_parse_ringbuf(void *dst, const char *value, char *msg, size_t msg_len)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (!errno && isdigit((unsigned char)value[0]) && (!*end || !strcmp(end, "M")) && v &&
	    v <= GS_DAEMON_RINGBUF_MIB_MAX && !(v & (v - 1))) {
		*(unsigned int *)dst = (unsigned int)v;
		return 0;
	}
	snprintf(msg, msg_len, "'%s' is not a ring buffer size (MiB, a power of 2 from 1 to %d)",
		 value, GS_DAEMON_RINGBUF_MIB_MAX);
	return -EINVAL;
}

static int parse_profile_word(struct gs_daemon_schedule *s, const char *w)
{
	unsigned long v;
	char *end;

	if (!strncmp(w, "hz=", 3)) {
		errno = 0;
		v = strtoul(w + 3, &end, 10);
		if (errno || *end || w[3] < '1' || w[3] > '9' || v > GS_DAEMON_PROFILE_HZ_MAX)
			return -EINVAL;
		s->hz = (unsigned int)v;
	} else if (!strcmp(w, "processes=all") || !strcmp(w, "processes=cuda")) {
		s->cuda_only = !strcmp(w, "processes=cuda");
	} else if (!strncmp(w, "keep=", 5)) {
		errno = 0;
		v = strtoul(w + 5, &end, 10);
		if (errno || *end || w[5] < '0' || w[5] > '9' || v > 1000000)
			return -EINVAL;
		s->keep = (unsigned int)v;
	} else if (!strncmp(w, "keep-bytes=", 11)) {
		return gs_daemon_config_size(w + 11, &s->keep_bytes);
	} else {
		return -EINVAL;
	}
	return 0;
}

int gs_daemon_parse_profile_schedule(struct gs_daemon_config *c, const char *value, char *const *w,
				     size_t n, char *msg, size_t msg_len)
{
	struct gs_daemon_schedule s = { .profile = true, .hz = GS_DAEMON_PROFILE_HZ_DEFAULT };
	int err;

	if (n < 4 || strcmp(w[0], "every") || strcmp(w[2], "profile"))
		goto usage;
	err = gs_daemon_config_duration(w[1], true, &s.every_s, msg, msg_len);
	if (!err)
		err = gs_daemon_config_duration(w[3], false, &s.record_s, msg, msg_len);
	if (err == -ERANGE)
		return -EINVAL;
	for (size_t i = 4; i < n && !err; i++)
		err = parse_profile_word(&s, w[i]);
	if (err)
		goto usage;
	if (s.record_s >= s.every_s) {
		snprintf(msg, msg_len, "a profile of %gs every %gs would overlap the next",
			 s.record_s, s.every_s);
		return -EINVAL;
	}
	c->schedules[c->nr_schedules++] = s;
	return 0;
usage:
	snprintf(msg, msg_len,
		 "'%s' is not 'every DURATION profile DURATION [hz=1..%d] [processes=all|cuda] "
		 "[keep=N] [keep-bytes=SIZE]'",
		 value, GS_DAEMON_PROFILE_HZ_MAX);
	return -EINVAL;
}
