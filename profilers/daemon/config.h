/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* config.h: the `gpusnoop daemon` settings, from defaults, a config file and flags. */
#ifndef GS_DAEMON_CONFIG_H
#define GS_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "user/metrics_server.h"

#define GS_DAEMON_PATH_MAX	 256
#define GS_DAEMON_MAX_SCHEDULES	 16
#define GS_DAEMON_EVENTS_MAX	 128
#define GS_DAEMON_MAX_RECORDINGS 16 /* running at once, all kinds together */

/*
 * Every duration is range-checked as it is parsed, before any conversion to nanoseconds:
 * a period of 1e-10 s would spin the main loop, one of 1e300 s overflow the conversion.
 */
#define GS_DAEMON_PERIOD_MIN_S 1.0	      /* schedule every */
#define GS_DAEMON_PERIOD_MAX_S (30 * 86400.0) /* schedule every, trigger-interval */
#define GS_DAEMON_RECORD_MIN_S 0.1	      /* schedule record, oom-record */
#define GS_DAEMON_RECORD_MAX_S 86400.0
#define GS_DAEMON_FLIGHT_MIN_S 1.0 /* flight-recorder */
#define GS_DAEMON_FLIGHT_MAX_S 3600.0

#define GS_DAEMON_PROFILE_HZ_MAX      999 /* schedule profile hz= (`gpusnoop profile -F`) */
#define GS_DAEMON_PROFILE_HZ_DEFAULT  99
#define GS_DAEMON_RINGBUF_MIB_DEFAULT 8
#define GS_DAEMON_RINGBUF_MIB_MAX     1024

/*
 * "schedule every 15m record 30s events=cuda-launch,cpu keep=10 keep-bytes=1G", or
 * "schedule every 10m profile 30s [hz=99] [processes=all|cuda] [keep=N] [keep-bytes=SIZE]":
 * CPU stacks sampled by `gpusnoop profile`, written as pprof (profile_schedule.c).
 */
struct gs_daemon_schedule {
	double every_s;
	double record_s;		   /* the recording's, or the profile's, window */
	char events[GS_DAEMON_EVENTS_MAX]; /* `gpusnoop record -e` list */
	bool profile;			   /* a CPU profile, not a recording */
	bool cuda_only;			   /* profile: only the CUDA processes the daemon follows */
	unsigned int hz;		   /* profile: samples per second on each CPU */
	unsigned int keep;		   /* newest traces kept; 0: no count limit */
	uint64_t keep_bytes;		   /* their total size at most; 0: no limit */
};

struct gs_daemon_config {
	char output_dir[GS_DAEMON_PATH_MAX];
	char socket_path[GS_DAEMON_PATH_MAX];
	char metrics_host[64]; /* empty: no metrics endpoint */
	uint16_t metrics_port;
	/* clients the metrics endpoint answers; none: whoever reaches metrics_host */
	struct gs_net_prefix metrics_allow[GS_METRICS_ALLOW_MAX];
	size_t nr_metrics_allow;
	uint64_t output_max_bytes; /* reports beyond this total are removed, oldest first */
	bool oom_reports;	   /* write a report when a process runs out of GPU memory */
	double trigger_interval_s; /* at most one report per process per interval */
	size_t top;		   /* stacks per process in a report; 0: all */
	bool torch;		   /* PyTorch tensors, allocated/reserved, OOMs (read at start) */
	bool call_metrics;	   /* probe launches and syncs for their metrics (read at start) */
	double flight_recorder_s;  /* events kept per process for trigger traces; 0: none */
	double oom_record_s;	   /* after an OOM report, record the process this long; 0: no */
	char oom_record_events[GS_DAEMON_EVENTS_MAX];
	/* what one non-root user's ctl requests may hold: recordings at once, bytes on disk */
	unsigned int user_max_recordings;
	unsigned int ringbuf_mib; /* the event ring buffer, MiB (read at start) */
	bool trace_perfetto;	  /* traces in Perfetto's protobuf format, not JSON */
	uint64_t user_max_bytes;
	/* one allocation in N per call site walks its stack (read at start); 1: all */
	unsigned int stack_sample;
	struct gs_daemon_schedule schedules[GS_DAEMON_MAX_SCHEDULES];
	size_t nr_schedules;
};

void gs_daemon_config__defaults(struct gs_daemon_config *c);
/*
 * Applies a config file read from f (named path in messages) on top of c. One setting a
 * line, "key value", '#' starts a comment. On a bad line logs "path:line: why" and
 * returns -EINVAL, leaving c partly applied (callers parse into a copy).
 */
int gs_daemon_config__parse(struct gs_daemon_config *c, FILE *f, const char *path);
/* Applies one "key value" setting (flags use the same keys); msg gets why on -EINVAL. */
int gs_daemon_config__set(struct gs_daemon_config *c, const char *key, const char *value, char *msg,
			  size_t msg_len);
/*
 * A reload keeps what is read at start only (`torch`, `cuda-call-metrics`: they decide the
 * probes and how events are accounted): such settings of next that differ from running are
 * set back to running's. Returns how many; their names, comma-separated, go to names.
 */
size_t gs_daemon_config__keep_start_only(struct gs_daemon_config *next,
					 const struct gs_daemon_config *running, char *names,
					 size_t len);
/*
 * For the parsers outside config.c: a schedule's period (period) or window, as parse_duration
 * checks it (-EINVAL: no duration; -ERANGE: out of range, msg says so); a SIZE like "64M".
 */
int gs_daemon_config_duration(const char *value, bool period, double *out, char *msg,
			      size_t msg_len);
int gs_daemon_config_size(const char *value, uint64_t *out);

/* Each setting's parser: writes the field at dst (or, for "whole", the config) or says why. */
typedef int gs_daemon_parse_fn(void *dst, const char *value, char *msg, size_t msg_len);

/*
 * One row of the settings table: the config key (and flag name), how it is parsed, and what
 * gpusnoop.conf(5), the installed default file and the defaults themselves are made from,
 * so that none of them can drift from the parser.
 */
struct gs_daemon_setting {
	const char *name;
	gs_daemon_parse_fn *parse;
	size_t offset, size; /* the field; size 0: the parser takes the whole config */
	/* read at start only: decides which probes are loaded; a reload keeps the running value */
	bool start_only;
	const char *value;   /* its form, for the man page: "DURATION | off" */
	const char *def;     /* the default as a file writes it; NULL: none (an example is shown) */
	const char *range;   /* what is accepted */
	const char *reload;  /* what a SIGHUP does with a new value */
	const char *doc;     /* what it does */
	const char *example; /* a line's value shown in the default file when def is NULL */
};

/* The settings table, in the order the man page and the default file list them. */
const struct gs_daemon_setting *gs_daemon_settings(size_t *nr);
/* gpusnoop.conf(5) in roff, made from the table (`gpusnoop daemon --print-config-doc`). */
void gs_daemon_config__print_doc(FILE *f, const char *version);
/* The commented default config file (`gpusnoop daemon --print-default-config`). */
void gs_daemon_config__print_default(FILE *f);

#endif /* GS_DAEMON_CONFIG_H */
