// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* daemon_config.c: parsing and checking `gpusnoop daemon` settings. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/daemon_config.h"
#include "profilers/options.h"
#include "user/log.h"

#define LINE_MAX_LEN 1024
/* what a recording captures unless the setting names events: every CUDA call */
#define GS_DAEMON_DEFAULT_EVENTS "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy"

void gs_daemon_config__defaults(struct gs_daemon_config *c)
{
	*c = (struct gs_daemon_config){
		.output_dir = "/var/lib/gpusnoop",
		.socket_path = "/run/gpusnoop.sock",
		.metrics_host = "127.0.0.1",
		.metrics_port = 9464,
		.output_max_bytes = 1ULL << 30,
		.oom_reports = true,
		.trigger_interval_s = 60,
		.top = 20,
		.flight_recorder_s = 30,
		.torch = true,
		.oom_record_events = GS_DAEMON_DEFAULT_EVENTS,
	};
}

static int copy_path(char *dst, size_t len, const char *value, char *msg, size_t msg_len)
{
	if (value[0] != '/') {
		snprintf(msg, msg_len, "'%s' is not an absolute path", value);
		return -EINVAL;
	}
	if (strlen(value) >= len) {
		snprintf(msg, msg_len, "path longer than %zu bytes", len - 1);
		return -EINVAL;
	}
	strcpy(dst, value);
	return 0;
}

/* "127.0.0.1:9464", "[::1]:9464", or "off". */
static int parse_addr(struct gs_daemon_config *c, const char *value, char *msg, size_t msg_len)
{
	const char *colon = strrchr(value, ':');
	const char *host = value;
	size_t host_len;
	char *end;
	long port;

	if (!strcmp(value, "off")) {
		c->metrics_host[0] = '\0';
		return 0;
	}
	if (!colon)
		goto bad;
	host_len = (size_t)(colon - value);
	if (host[0] == '[') { /* IPv6 literal */
		if (host_len < 3 || host[host_len - 1] != ']')
			goto bad;
		host++;
		host_len -= 2;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	/* port 0: any free port, logged at start */
	if (!host_len || host_len >= sizeof(c->metrics_host) || errno || *end || port < 0 ||
	    port > 65535 || end == colon + 1)
		goto bad;
	memcpy(c->metrics_host, host, host_len);
	c->metrics_host[host_len] = '\0';
	c->metrics_port = (uint16_t)port;
	return 0;
bad:
	snprintf(msg, msg_len, "'%s' is not HOST:PORT (or off)", value);
	return -EINVAL;
}

/* "512M", "2G", "1048576": bytes, with an optional K/M/G/T (1024-based) suffix. */
static int parse_size(const char *value, uint64_t *out)
{
	unsigned long long v;
	char *end;
	int shift = 0;

	errno = 0;
	v = strtoull(value, &end, 10);
	if (errno || end == value || value[0] == '-')
		return -EINVAL;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift && end[1])
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

/* "30", "30s", "15m", "2h": seconds. */
static int parse_duration(const char *value, double *out)
{
	char num[32];
	size_t len = strlen(value);
	double scale = 1;

	if (!len || len >= sizeof(num))
		return -EINVAL;
	strcpy(num, value);
	switch (num[len - 1]) {
	case 'h':
		scale *= 60;
		/* fall through */
	case 'm':
		scale *= 60;
		/* fall through */
	case 's':
		num[len - 1] = '\0';
		break;
	}
	if (gs_parse_seconds(num, out) || *out <= 0)
		return -EINVAL;
	*out *= scale;
	return 0;
}

/* "events=LIST" (checked by `gpusnoop record` when it runs: the names are its own) */
static int parse_events(const char *word, char *events, char *msg, size_t msg_len)
{
	const char *list = word + strlen("events=");

	if (!*list || strlen(list) >= GS_DAEMON_EVENTS_MAX ||
	    strspn(list, "abcdefghijklmnopqrstuvwxyz-,") != strlen(list)) {
		snprintf(msg, msg_len, "'%s' is not an event list", word);
		return -EINVAL;
	}
	strcpy(events, list);
	return 0;
}

/* "every 15m record 30s [events=LIST] [keep=N] [keep-bytes=SIZE]" */
static int parse_schedule(struct gs_daemon_config *c, const char *value, char *msg, size_t msg_len)
{
	struct gs_daemon_schedule s = { .events = GS_DAEMON_DEFAULT_EVENTS };
	char copy[LINE_MAX_LEN], *save = NULL, *w[8];
	size_t n = 0;

	if (c->nr_schedules == GS_DAEMON_MAX_SCHEDULES) {
		snprintf(msg, msg_len, "at most %d schedules", GS_DAEMON_MAX_SCHEDULES);
		return -EINVAL;
	}
	snprintf(copy, sizeof(copy), "%s", value);
	for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
		if (n == sizeof(w) / sizeof(w[0]))
			goto usage;
		w[n++] = t;
	}
	if (n < 4 || strcmp(w[0], "every") || parse_duration(w[1], &s.every_s) ||
	    strcmp(w[2], "record") || parse_duration(w[3], &s.record_s))
		goto usage;
	for (size_t i = 4; i < n; i++) {
		char *end;

		if (!strncmp(w[i], "events=", 7)) {
			if (parse_events(w[i], s.events, msg, msg_len))
				return -EINVAL;
		} else if (!strncmp(w[i], "keep=", 5)) {
			errno = 0;
			s.keep = (unsigned int)strtoul(w[i] + 5, &end, 10);
			if (errno || *end || !w[i][5] || w[i][5] == '-')
				goto usage;
		} else if (!strncmp(w[i], "keep-bytes=", 11)) {
			if (parse_size(w[i] + 11, &s.keep_bytes))
				goto usage;
		} else {
			goto usage;
		}
	}
	if (s.record_s >= s.every_s) {
		snprintf(msg, msg_len, "a recording of %gs every %gs would overlap the next",
			 s.record_s, s.every_s);
		return -EINVAL;
	}
	c->schedules[c->nr_schedules++] = s;
	return 0;
usage:
	snprintf(msg, msg_len,
		 "'%s' is not 'every DURATION record DURATION [events=LIST] [keep=N] "
		 "[keep-bytes=SIZE]'",
		 value);
	return -EINVAL;
}

/* "10s [events=LIST]" */
static int parse_oom_record(struct gs_daemon_config *c, const char *value, char *msg,
			    size_t msg_len)
{
	char copy[LINE_MAX_LEN], *save = NULL;
	char *dur, *events, *extra;

	snprintf(copy, sizeof(copy), "%s", value);
	dur = strtok_r(copy, " \t", &save);
	events = strtok_r(NULL, " \t", &save);
	extra = strtok_r(NULL, " \t", &save);
	if (!strcmp(dur, "off") && !events) {
		c->oom_record_s = 0;
		return 0;
	}
	if (parse_duration(dur, &c->oom_record_s) || extra ||
	    (events && strncmp(events, "events=", 7))) {
		snprintf(msg, msg_len, "'%s' is not 'DURATION [events=LIST]' or off", value);
		return -EINVAL;
	}
	return events ? parse_events(events, c->oom_record_events, msg, msg_len) : 0;
}

static int parse_bool(const char *value, bool *out)
{
	if (!strcmp(value, "on") || !strcmp(value, "true") || !strcmp(value, "yes"))
		*out = true;
	else if (!strcmp(value, "off") || !strcmp(value, "false") || !strcmp(value, "no"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

int gs_daemon_config__set(struct gs_daemon_config *c, const char *key, const char *value, char *msg,
			  size_t msg_len)
{
	char *end;

	if (!strcmp(key, "output-dir"))
		return copy_path(c->output_dir, sizeof(c->output_dir), value, msg, msg_len);
	if (!strcmp(key, "socket"))
		return copy_path(c->socket_path, sizeof(c->socket_path), value, msg, msg_len);
	if (!strcmp(key, "metrics-addr"))
		return parse_addr(c, value, msg, msg_len);
	if (!strcmp(key, "output-max-bytes")) {
		if (!parse_size(value, &c->output_max_bytes) && c->output_max_bytes)
			return 0;
		snprintf(msg, msg_len, "'%s' is not a size (e.g. 512M, 2G)", value);
		return -EINVAL;
	}
	if (!strcmp(key, "oom-reports")) {
		if (!parse_bool(value, &c->oom_reports))
			return 0;
		snprintf(msg, msg_len, "'%s' is not on or off", value);
		return -EINVAL;
	}
	if (!strcmp(key, "trigger-interval")) {
		if (!gs_parse_seconds(value, &c->trigger_interval_s))
			return 0;
		snprintf(msg, msg_len, "'%s' is not a number of seconds", value);
		return -EINVAL;
	}
	if (!strcmp(key, "torch")) {
		if (!parse_bool(value, &c->torch))
			return 0;
		snprintf(msg, msg_len, "'%s' is not on or off", value);
		return -EINVAL;
	}
	if (!strcmp(key, "cuda-call-metrics")) {
		if (!parse_bool(value, &c->call_metrics))
			return 0;
		snprintf(msg, msg_len, "'%s' is not on or off", value);
		return -EINVAL;
	}
	if (!strcmp(key, "top")) {
		unsigned long v;

		errno = 0;
		v = strtoul(value, &end, 10);
		if (!errno && !*end && value[0] != '-' && *value && v <= 100000) {
			c->top = v;
			return 0;
		}
		snprintf(msg, msg_len, "'%s' is not a stack count", value);
		return -EINVAL;
	}
	if (!strcmp(key, "schedule"))
		return parse_schedule(c, value, msg, msg_len);
	if (!strcmp(key, "flight-recorder")) {
		if (!strcmp(value, "off")) {
			c->flight_recorder_s = 0;
			return 0;
		}
		if (!parse_duration(value, &c->flight_recorder_s))
			return 0;
		snprintf(msg, msg_len, "'%s' is not a duration (e.g. 30s) or off", value);
		return -EINVAL;
	}
	if (!strcmp(key, "oom-record"))
		return parse_oom_record(c, value, msg, msg_len);
	snprintf(msg, msg_len, "unknown setting '%s'", key);
	return -EINVAL;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

int gs_daemon_config__parse(struct gs_daemon_config *c, FILE *f, const char *path)
{
	char line[LINE_MAX_LEN], msg[256];
	unsigned int lineno = 0;

	while (fgets(line, sizeof(line), f)) {
		char *key, *value, *hash;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			gs_err("%s:%u: line longer than %d bytes", path, lineno, LINE_MAX_LEN - 2);
			return -EINVAL;
		}
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		key = trim(line);
		if (!*key)
			continue;
		value = key + strcspn(key, " \t");
		if (*value)
			*value++ = '\0';
		value = trim(value);
		if (!*value) {
			gs_err("%s:%u: '%s' needs a value", path, lineno, key);
			return -EINVAL;
		}
		if (gs_daemon_config__set(c, key, value, msg, sizeof(msg))) {
			gs_err("%s:%u: %s", path, lineno, msg);
			return -EINVAL;
		}
	}
	if (ferror(f)) {
		gs_err("%s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}
