// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* config.c: parsing and checking `gpusnoop daemon` settings. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include "profilers/daemon/config.h"
#include "profilers/daemon/event_list.h"
#include "profilers/daemon/losses.h"
#include "profilers/daemon/profile_schedule.h"
#include "profilers/options.h"
#include "user/log.h"

#define LINE_MAX_LEN 1024
/* what a recording captures unless the setting names events: every CUDA call */
#define GS_DAEMON_DEFAULT_EVENTS "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy"

/* output-dir, socket: an absolute path (both fields are GS_DAEMON_PATH_MAX long) */
static int parse_path(void *dst, const char *value, char *msg, size_t msg_len)
{
	size_t len = GS_DAEMON_PATH_MAX;

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

/* socket: an absolute path that fits a unix socket's address, checked before bind() is */
static int parse_socket(void *dst, const char *value, char *msg, size_t msg_len)
{
	size_t max = sizeof(((struct sockaddr_un *)0)->sun_path);

	if (value[0] == '/' && strlen(value) >= max) {
		snprintf(msg, msg_len, "socket path longer than %zu bytes", max - 1);
		return -EINVAL;
	}
	return parse_path(dst, value, msg, msg_len);
}

/* "127.0.0.1:9464", "[::1]:9464", or "off". */
static int parse_addr(void *whole, const char *value, char *msg, size_t msg_len)
{
	struct gs_daemon_config *c = whole;
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

/* "ADDR" or "ADDR/BITS", IPv4 or IPv6, into the IPv4-mapped IPv6 form that matching uses. */
static int parse_prefix(const char *word, struct gs_net_prefix *p)
{
	char addr[INET6_ADDRSTRLEN], *slash;
	unsigned long bits;
	bool v4;

	if (strlen(word) >= sizeof(addr))
		return -EINVAL;
	strcpy(addr, word);
	slash = strchr(addr, '/');
	if (slash)
		*slash++ = '\0';
	memset(p, 0, sizeof(*p));
	v4 = inet_pton(AF_INET, addr, p->addr + 12) == 1;
	if (v4)
		p->addr[10] = p->addr[11] = 0xff;
	else if (inet_pton(AF_INET6, addr, p->addr) != 1)
		return -EINVAL;
	bits = v4 ? 32 : 128;
	if (slash) {
		char *end;
		unsigned long max = bits;

		errno = 0;
		bits = strtoul(slash, &end, 10);
		if (errno || *end || !isdigit((unsigned char)slash[0]) || bits > max)
			return -EINVAL;
	}
	p->bits = (uint8_t)(bits + (v4 ? 96 : 0));
	return 0;
}

/* "127.0.0.1,::1", "10.0.0.0/8", or "any" */
static int parse_allow(void *whole, const char *value, char *msg, size_t msg_len)
{
	struct gs_daemon_config *c = whole;
	struct gs_net_prefix allow[GS_METRICS_ALLOW_MAX];
	char copy[LINE_MAX_LEN], *save = NULL;
	size_t n = 0;

	if (!strcmp(value, "any")) {
		c->nr_metrics_allow = 0;
		return 0;
	}
	snprintf(copy, sizeof(copy), "%s", value);
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (n == GS_METRICS_ALLOW_MAX) {
			snprintf(msg, msg_len, "at most %d addresses", GS_METRICS_ALLOW_MAX);
			return -EINVAL;
		}
		if (parse_prefix(t, &allow[n++])) {
			snprintf(msg, msg_len, "'%.64s' is not an address or ADDRESS/BITS", t);
			return -EINVAL;
		}
	}
	if (!n) {
		snprintf(msg, msg_len, "'%s' is not a list of addresses (or any)", value);
		return -EINVAL;
	}
	memcpy(c->metrics_allow, allow, n * sizeof(allow[0]));
	c->nr_metrics_allow = n;
	return 0;
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

/* What a duration setting accepts, for its checks and its message. */
struct duration_range {
	const char *what;
	double min, max;
	const char *text;
};

static const struct duration_range period_range = { "schedule period", GS_DAEMON_PERIOD_MIN_S,
						    GS_DAEMON_PERIOD_MAX_S, "1s to 30d" };
static const struct duration_range record_range = { "recording length", GS_DAEMON_RECORD_MIN_S,
						    GS_DAEMON_RECORD_MAX_S, "0.1s to 24h" };
static const struct duration_range trigger_range = { "trigger interval", 0, GS_DAEMON_PERIOD_MAX_S,
						     "0 to 30d" };
static const struct duration_range flight_range = { "flight recorder window",
						    GS_DAEMON_FLIGHT_MIN_S, GS_DAEMON_FLIGHT_MAX_S,
						    "1s to 1h" };

/*
 * "30", "30s", "15m", "2h", "1d": seconds, within r. -EINVAL for what is no duration,
 * -ERANGE (with msg) for one out of range: checked on the double, before anyone converts it.
 */
static int parse_duration(const char *value, const struct duration_range *r, double *out, char *msg,
			  size_t msg_len)
{
	char num[32], *end;
	size_t len = strlen(value);
	double scale = 1, v;

	if (!len || len >= sizeof(num))
		return -EINVAL;
	strcpy(num, value);
	switch (num[len - 1]) {
	case 'd':
		scale *= 24;
		/* fall through */
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
	/* a plain decimal number: no sign, "nan", "inf" or hex; huge ones get the range error */
	if (!(isdigit((unsigned char)num[0]) || num[0] == '.') ||
	    strspn(num, "0123456789.eE+-") != strlen(num))
		return -EINVAL;
	v = strtod(num, &end);
	if (end == num || *end || isnan(v))
		return -EINVAL;
	v *= scale;
	if (!isfinite(v) || v < r->min || v > r->max) {
		snprintf(msg, msg_len, "%s '%s' is out of range (%s)", r->what, value, r->text);
		return -ERANGE;
	}
	*out = v;
	return 0;
}

/* "events=LIST": names `gpusnoop record -e` takes, checked now, not when a recording fails */
static int parse_events(const char *word, char *events, char *msg, size_t msg_len)
{
	const char *list = word + strlen("events=");

	if (gs_daemon_check_events(list, GS_DAEMON_EVENTS_MAX, msg, msg_len))
		return -EINVAL;
	strcpy(events, list);
	return 0;
}

/* "every 15m record 30s [events=LIST] [keep=N] [keep-bytes=SIZE]" */
static int parse_schedule(void *whole, const char *value, char *msg, size_t msg_len)
{
	struct gs_daemon_config *c = whole;
	struct gs_daemon_schedule s = { .events = GS_DAEMON_DEFAULT_EVENTS };
	char copy[LINE_MAX_LEN], *save = NULL, *w[8];
	size_t n = 0;
	int err;

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
	if (n >= 4 && !strcmp(w[0], "every") && !strcmp(w[2], "profile"))
		return gs_daemon_parse_profile_schedule(c, value, w, n, msg, msg_len);
	if (n < 4 || strcmp(w[0], "every") || strcmp(w[2], "record"))
		goto usage;
	err = parse_duration(w[1], &period_range, &s.every_s, msg, msg_len);
	if (!err)
		err = parse_duration(w[3], &record_range, &s.record_s, msg, msg_len);
	if (err == -ERANGE)
		return -EINVAL;
	if (err)
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
static int parse_oom_record(void *whole, const char *value, char *msg, size_t msg_len)
{
	struct gs_daemon_config *c = whole;
	char copy[LINE_MAX_LEN], *save = NULL;
	char *dur, *events, *extra;
	double secs = 0;
	int err;

	snprintf(copy, sizeof(copy), "%s", value);
	dur = strtok_r(copy, " \t", &save);
	events = strtok_r(NULL, " \t", &save);
	extra = strtok_r(NULL, " \t", &save);
	if (dur && !strcmp(dur, "off") && !events) {
		c->oom_record_s = 0;
		return 0;
	}
	err = dur ? parse_duration(dur, &record_range, &secs, msg, msg_len) : -EINVAL;
	if (err == -ERANGE)
		return -EINVAL;
	if (err || extra || (events && strncmp(events, "events=", 7))) {
		snprintf(msg, msg_len, "'%s' is not 'DURATION [events=LIST]' or off", value);
		return -EINVAL;
	}
	if (events && parse_events(events, c->oom_record_events, msg, msg_len))
		return -EINVAL;
	c->oom_record_s = secs;
	return 0;
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

static int parse_switch(void *dst, const char *value, char *msg, size_t msg_len)
{
	if (!parse_bool(value, dst))
		return 0;
	snprintf(msg, msg_len, "'%s' is not on or off", value);
	return -EINVAL;
}

static int parse_user_max_recordings(void *dst, const char *value, char *msg, size_t msg_len)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (!errno && !*end && isdigit((unsigned char)value[0]) && v <= GS_DAEMON_MAX_RECORDINGS) {
		*(unsigned int *)dst = (unsigned int)v;
		return 0;
	}
	snprintf(msg, msg_len, "'%s' is not a number of recordings (0 to %d)", value,
		 GS_DAEMON_MAX_RECORDINGS);
	return -EINVAL;
}

/* a size of at least one byte: 0 would mean no limit at all */
static int parse_cap(void *dst, const char *value, char *msg, size_t msg_len)
{
	uint64_t v;

	if (!parse_size(value, &v) && v) {
		*(uint64_t *)dst = v;
		return 0;
	}
	snprintf(msg, msg_len, "'%s' is not a size (e.g. 64M)", value);
	return -EINVAL;
}

static int parse_trigger_interval(void *dst, const char *value, char *msg, size_t msg_len)
{
	int err = parse_duration(value, &trigger_range, dst, msg, msg_len);

	if (err == -EINVAL)
		snprintf(msg, msg_len, "'%s' is not a number of seconds", value);
	return err ? -EINVAL : 0;
}

static int parse_top(void *dst, const char *value, char *msg, size_t msg_len)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (!errno && !*end && value[0] != '-' && *value && v <= 100000) {
		*(size_t *)dst = v;
		return 0;
	}
	snprintf(msg, msg_len, "'%s' is not a stack count", value);
	return -EINVAL;
}

static int parse_stack_sample(void *dst, const char *value, char *msg, size_t msg_len)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(value, &end, 10);
	if (!errno && !*end && value[0] != '-' && *value && v >= 1 && v <= 1000000) {
		*(unsigned int *)dst = (unsigned int)v;
		return 0;
	}
	snprintf(msg, msg_len, "'%s' is not a count from 1 to 1000000", value);
	return -EINVAL;
}

static int parse_flight_recorder(void *dst, const char *value, char *msg, size_t msg_len)
{
	int err;

	if (!strcmp(value, "off")) {
		*(double *)dst = 0;
		return 0;
	}
	err = parse_duration(value, &flight_range, dst, msg, msg_len);
	if (err == -EINVAL)
		snprintf(msg, msg_len, "'%s' is not a duration (e.g. 30s) or off", value);
	return err ? -EINVAL : 0;
}

static int parse_trace_format(void *dst, const char *value, char *msg, size_t msg_len)
{
	if (!strcmp(value, "json") || !strcmp(value, "perfetto")) {
		*(bool *)dst = !strcmp(value, "perfetto");
		return 0;
	}
	snprintf(msg, msg_len, "'%s' is not a trace format (json or perfetto)", value);
	return -EINVAL;
}

/*
 * Every setting: its name (config key, and flag name), its parser, where it goes, whether a
 * SIGHUP applies it, and its documentation. Start-only ones decide which probes are loaded at
 * start: changing them in a running daemon would account half its events one way, half
 * another. The defaults are the `def` column (gs_daemon_config__defaults() applies it).
 */
#define FIELD(f) offsetof(struct gs_daemon_config, f), sizeof(((struct gs_daemon_config *)0)->f)
#define WHOLE	 0, 0
#define AT_ONCE	 "applies at once"
#define REOPENS	 "reopened at once; if it cannot be, the running configuration stays"
#define SIZES	 "a size: bytes, or with a K, M, G or T suffix (1024-based), at least 1"
#define SWITCH	 "on or off (true/false, yes/no)"

static const struct gs_daemon_setting settings[] = {
	{ "output-dir", parse_path, FIELD(output_dir), false, "PATH", "/var/lib/gpusnoop",
	  "an absolute path, at most 255 bytes", REOPENS,
	  "Where reports and traces are written. Created 0700 when missing; an existing one must "
	  "be root's and not writable by group or others.",
	  NULL },
	{ "socket", parse_socket, FIELD(socket_path), false, "PATH", "/run/gpusnoop.sock",
	  "an absolute path, at most 107 bytes (a unix socket's limit)", REOPENS,
	  "The control socket that gpusnoop ctl asks. Any local user may connect; each sees only "
	  "their own processes.",
	  NULL },
	{ "metrics-addr", parse_addr, WHOLE, false, "HOST:PORT | off", "127.0.0.1:9464",
	  "a host name, an IPv4 address or an [IPv6] one, and a port 0 to 65535 (0: any free "
	  "port, logged); or off",
	  REOPENS,
	  "The Prometheus endpoint, http://HOST:PORT/metrics. It lists the pid and comm of "
	  "every followed process to whoever can connect: keep it on loopback or limit it with "
	  "metrics-allow.",
	  NULL },
	{ "metrics-allow", parse_allow, WHOLE, false, "ADDR[/BITS],... | any", "any",
	  "at most 16 IPv4 or IPv6 addresses or prefixes, comma-separated, or any", AT_ONCE,
	  "The clients the metrics endpoint answers; any: whoever reaches metrics-addr.", NULL },
	{ "user-max-recordings", parse_user_max_recordings, FIELD(user_max_recordings), false, "N",
	  "2", "0 to 16", AT_ONCE,
	  "How many recordings one non-root user's ctl requests may run at once (root is not "
	  "limited).",
	  NULL },
	{ "user-max-bytes", parse_cap, FIELD(user_max_bytes), false, "SIZE", "64M", SIZES, AT_ONCE,
	  "What one non-root user's requested files may occupy; the oldest go first, the newest "
	  "stays. A user's recording stops, its trace complete, at this size (at least 1M).",
	  NULL },
	{ "output-max-bytes", parse_cap, FIELD(output_max_bytes), false, "SIZE", "1G", SIZES,
	  AT_ONCE,
	  "The cap on the files in output-dir: beyond it the oldest go. What users asked for "
	  "takes at most half of it.",
	  NULL },
	{ "oom-reports", parse_switch, FIELD(oom_reports), false, "on | off", "on", SWITCH, AT_ONCE,
	  "Write a report when a process runs out of CUDA memory, PyTorch reports an OOM, or the "
	  "kernel's OOM killer picks a CUDA process.",
	  NULL },
	{ "trigger-interval", parse_trigger_interval, FIELD(trigger_interval_s), false, "DURATION",
	  "60s", "0 to 30d", AT_ONCE,
	  "At most one report per process per interval (0: every trigger); the others are "
	  "counted.",
	  NULL },
	{ "torch", parse_switch, FIELD(torch), true, "on | off", "on", SWITCH, NULL,
	  "Follow PyTorch's caching allocator: tensors, allocated and reserved bytes per device, "
	  "and its OOMs.",
	  NULL },
	{ "cuda-call-metrics", parse_switch, FIELD(call_metrics), true, "on | off", "off", SWITCH,
	  NULL,
	  "Count launches and synchronizations per process for the metrics, at the cost of a "
	  "probe on every launch and a pair on every synchronization; they are counted in the "
	  "kernel, not sent.",
	  NULL },
	{ "stack-sample", parse_stack_sample, FIELD(stack_sample), true, "N", "1", "1 to 1000000",
	  NULL,
	  "One CUDA allocation in N per call site (process and calling address) has its stack "
	  "walked, native and Python; the others carry their call site alone, as one frame, and a "
	  "report groups them by it. A failed allocation (an OOM) always carries its whole stack. "
	  "1: every allocation its stack.",
	  NULL },
	{ "top", parse_top, FIELD(top), false, "N", "20", "0 to 100000", AT_ONCE,
	  "Stacks per process in a report; 0: all.", NULL },
	{ "schedule", parse_schedule, WHOLE, false,
	  "every DURATION record DURATION [events=LIST] [keep=N] [keep-bytes=SIZE] | every "
	  "DURATION profile DURATION [hz=N] [processes=all|cuda] [keep=N] [keep-bytes=SIZE]",
	  NULL,
	  "a period of 1s to 30d, a recording or profile of 0.1s to 24h and shorter than the "
	  "period; at most 16 schedules; LIST as gpusnoop record -e takes it; hz 1 to 999",
	  "applies at once; every schedule's period starts again",
	  "A recording of every process, or a CPU profile (pprof) of every process or of those "
	  "using CUDA, repeated; give several lines for several schedules. Files are "
	  "gpusnoop-scheduleN-all-TIME.json.gz (or .pb.gz); keep=N keeps the newest N, "
	  "keep-bytes= at most that much (0: no limit). A slot whose previous run still runs is "
	  "skipped. The latest profile is also served at /debug/pprof/profile.",
	  "every 15m record 30s events=cuda-launch,cuda-sync keep=20 keep-bytes=2G" },
	{ "flight-recorder", parse_flight_recorder, FIELD(flight_recorder_s), false,
	  "DURATION | off", "30s", "1s to 1h, or off",
	  "applies at once; the new window starts empty",
	  "How much of each process's recent CUDA memory calls a trigger report's trace "
	  "(.trace.json, or .pftrace) shows, at most 16384 calls per process.",
	  NULL },
	{ "oom-record", parse_oom_record, WHOLE, false, "DURATION [events=LIST] | off", "off",
	  "0.1s to 24h, or off; LIST as gpusnoop record -e takes it (default "
	  "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy)",
	  AT_ONCE,
	  "After the OOM report of a process that is still alive, record what it does next for "
	  "this long, into gpusnoop-record-PID-TIME.json.gz.",
	  "30s events=cuda-mem,cuda-launch,cpu" },
	{ "trace-format", parse_trace_format, FIELD(trace_perfetto), false, "json | perfetto",
	  "json", "json or perfetto", AT_ONCE,
	  "The format of the traces the daemon writes: trigger reports' flight-recorder traces "
	  "(.trace.json, or .pftrace) and its recordings, scheduled or asked for with ctl record "
	  "(.json.gz, or .pftrace.gz). json is Chrome Trace Event JSON, what Holistic Trace "
	  "Analysis and Kineto tools read; perfetto is Perfetto's protobuf trace, several times "
	  "smaller, for ui.perfetto.dev and trace_processor.",
	  NULL },
	{ "ringbuf", gs_daemon_parse_ringbuf, FIELD(ringbuf_mib), true, "MIB", "8",
	  "a power of 2, 1 to 1024", NULL,
	  "The size of each of the daemon's event ring buffers, in MiB. Under a flood, events "
	  "past it are lost, counted in gpusnoop_events_lost_total and logged once a minute; "
	  "other users' OOM events keep their share (16 MiB lost none in scripts/bench/"
	  "oom_survival.py).",
	  NULL },
};

const struct gs_daemon_setting *gs_daemon_settings(size_t *nr)
{
	*nr = sizeof(settings) / sizeof(settings[0]);
	return settings;
}

void gs_daemon_config__defaults(struct gs_daemon_config *c)
{
	char msg[256];

	memset(c, 0, sizeof(*c)); /* padding too: two default configs compare equal */
	strcpy(c->oom_record_events, GS_DAEMON_DEFAULT_EVENTS);
	/* every default parses: tests/unit/test_daemon_config.c checks each row */
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
		if (settings[i].def)
			settings[i].parse((char *)c + settings[i].offset, settings[i].def, msg,
					  sizeof(msg));
}

_Static_assert(sizeof(((struct gs_daemon_config *)0)->output_dir) == GS_DAEMON_PATH_MAX &&
		       sizeof(((struct gs_daemon_config *)0)->socket_path) == GS_DAEMON_PATH_MAX,
	       "parse_path writes GS_DAEMON_PATH_MAX bytes at most");

int gs_daemon_config__set(struct gs_daemon_config *c, const char *key, const char *value, char *msg,
			  size_t msg_len)
{
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const struct gs_daemon_setting *st = &settings[i];

		if (!strcmp(key, st->name))
			return st->parse((char *)c + st->offset, value, msg, msg_len);
	}
	snprintf(msg, msg_len, "unknown setting '%s'", key);
	return -EINVAL;
}

size_t gs_daemon_config__keep_start_only(struct gs_daemon_config *next,
					 const struct gs_daemon_config *running, char *names,
					 size_t len)
{
	size_t n = 0, used = 0;

	if (len)
		names[0] = '\0';
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		const struct gs_daemon_setting *st = &settings[i];
		char *field = (char *)next + st->offset;
		const char *was = (const char *)running + st->offset;
		int w;

		if (!st->start_only || !memcmp(field, was, st->size))
			continue;
		memcpy(field, was, st->size);
		w = used < len ? snprintf(names + used, len - used, "%s%s", n ? ", " : "", st->name)
			       : 0;
		if (w > 0 && (size_t)w < len - used)
			used += (size_t)w;
		else if (used < len)
			names[used] = '\0'; /* whole names only */
		n++;
	}
	return n;
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

int gs_daemon_config_duration(const char *value, bool period, double *out, char *msg,
			      size_t msg_len)
{
	return parse_duration(value, period ? &period_range : &record_range, out, msg, msg_len);
}

int gs_daemon_config_size(const char *value, uint64_t *out)
{
	return parse_size(value, out);
}
