/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* daemon.h: the state of `gpusnoop daemon`, shared by its files (daemon*.c) and no others. */
#ifndef GS_DAEMON_H
#define GS_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "profilers/daemon/config.h"
#include "profilers/daemon/losses.h"
#include "profilers/mem_model.h"
#include "profilers/top_model.h"
#include "user/losses.h"
#include "user/pid_index.h"

#define MAX_FLAG_OVERRIDES 8
#define MAX_RECORDINGS	   GS_DAEMON_MAX_RECORDINGS
#define REPORT_PREFIX	   "gpusnoop-"
/* the schedule of a profile asked for over HTTP (-1: one-off recordings) */
#define GS_DAEMON_HTTP_SCHEDULE (-2)

struct gs_tracker;
struct gs_stack_table;
struct gs_metrics_server;
struct gs_ctl_server;
struct gs_out_dir;
struct gs_flight_recorder;

/* A flag given on the command line wins over the config file, also after a reload. */
struct gs_daemon_override {
	const char *key;
	const char *value;
};

/* read when no --config is given; a missing one means the defaults (one log line) */
#define GS_DAEMON_CONFIG_PATH "/etc/gpusnoop.conf"

struct gs_daemon_opts {
	const char *config_path; /* --config: must exist */
	const char *check_path;	 /* --check-config: check it and exit */
	int print;		 /* --print-config-doc, --print-default-config: print and exit */
	struct gs_daemon_override overrides[MAX_FLAG_OVERRIDES];
	size_t nr_overrides;
	int verbosity;
};

/* What the daemon counts per process beyond what the memory model holds. */
struct gs_daemon_proc {
	pid_t pid;
	struct gs_top_counts calls;	/* launches, syncs, copies: with cuda-call-metrics */
	struct gs_top_counts in_kernel; /* launches, syncs counted in BPF (call_counts.h) */
	uint64_t last_trigger_ns;
};

/* A `gpusnoop record` child writing a trace into the output directory. */
struct gs_daemon_recording {
	pid_t pid;
	int schedule;	      /* index in cfg.schedules, -1 for one-off recordings */
	bool profile;	      /* a `gpusnoop profile` child (profile_schedule.c) */
	uint64_t deadline_ns; /* a profile still running then is stopped; 0: none */
	bool overdue;	      /* it was asked to stop (SIGTERM); next time it is killed */
	char path[512];	      /* the final path, shown; nothing is there until it succeeded */
	char name[160];	      /* the file name in the output directory, less its prefix */
	char tmp[320];	      /* the temporary the child writes through its descriptor */
	int err_fd;	      /* the read end of the child's stderr, -1 once closed */
	char err_buf[512];    /* a line still being received */
	size_t err_len;
	char err_line[256]; /* its last diagnostic: why it failed, if it did */
};

struct gs_daemon {
	struct gs_daemon_opts opts;
	struct gs_daemon_config cfg;
	struct gs_tracker *tracker;
	struct gs_stack_table *stacks;
	struct gs_mem_model mem; /* PyTorch's part only with cfg.torch, as it was at start */
	struct gs_loss_window loss_window; /* since the previous report */
	struct gs_metrics_server *metrics;
	struct gs_ctl_server *ctl;
	struct gs_out_dir *out_dir;
	struct gs_flight_recorder *flight; /* NULL when off */
	struct gs_daemon_proc *procs;
	size_t nr_procs, cap_procs;
	struct gs_pid_index proc_index; /* pid -> position in procs */
	uint64_t start_ns;
	uint64_t next_schedule_ns[GS_DAEMON_MAX_SCHEDULES];
	uint64_t next_metrics_ns; /* 0: publish at the first tick */
	struct gs_daemon_recording recordings[MAX_RECORDINGS];
	size_t nr_recordings;
	uint64_t oom_events, torch_ooms, oom_kills, recordings_started, reports_written,
		report_errors, triggers_suppressed, profiles_started;
	struct gs_daemon_losses losses; /* logged once a minute at most (losses.c) */
	char latest_profile[512];	/* served over HTTP; published again after a reload */
	int error;
};

/* "20261122T130347.123456789Z": file names sort by time and never collide within a ns. */
void gs_daemon_file_stamp(char *buf, size_t len);

/*
 * Starts `gpusnoop record` on pid (0: every process; children: its descendants too) for
 * secs, writing OUTPUT_DIR/gpusnoop-KIND-...json.gz; schedule is its index, -1 for one-off
 * recordings.
 * The trace's path goes to path_out when given. Returns 0 or -errno (logged).
 */
int gs_daemon__start_recording(struct gs_daemon *d, pid_t pid, bool children, double secs,
			       const char *events, const char *kind, int schedule, char *path_out,
			       size_t len);
/*
 * The same, for a request: the recording stops by itself, its trace complete, before the
 * file passes max_bytes (record --max-bytes, and RLIMIT_FSIZE behind it); 0: no cap. The
 * trace is Perfetto's protobuf (...pftrace.gz) with perfetto, else JSON (...json.gz).
 */
int gs_daemon__start_capped_recording(struct gs_daemon *d, pid_t pid, bool children, double secs,
				      const char *events, const char *kind, int schedule,
				      uint64_t max_bytes, bool perfetto, char *path_out,
				      size_t len);
/* The trace format a ctl request asked for, or the daemon's trace-format. */
bool gs_daemon__request_perfetto(const struct gs_daemon *d, int format);
/*
 * Forks r's child to run this binary with argv: fd (the temporary it writes, closed here
 * either way) is the one descriptor it inherits besides stderr, which comes back through a
 * pipe so that a failure is logged as the child's own line; fsize, when not 0, is its
 * RLIMIT_FSIZE. Sets r's pid and stderr state. Returns 0 or -errno.
 */
int gs_daemon__spawn(struct gs_daemon_recording *r, char *const argv[], int fd, uint64_t fsize);
struct gs_ctl_peer;
/* Whether a control client may see pid's state: root, or pid runs as the client's uid. */
bool gs_daemon__may_see(const struct gs_ctl_peer *peer, pid_t pid);
/*
 * Applies the output directory's size caps: first the files users asked for through ctl
 * (half the cap for all of them together), then the directory's, so that what users ask
 * for never takes more than half the room that trigger reports have.
 */
void gs_daemon__enforce_caps(struct gs_daemon *d);
/* Collects finished recordings; applies their schedule's retention. */
void gs_daemon__reap_recordings(struct gs_daemon *d);
/* Asks running recordings to finish their traces, and waits for them (bounded). */
void gs_daemon__stop_recordings(struct gs_daemon *d);
/* Starts the scheduled recordings that are due at now (CLOCK_MONOTONIC ns). */
void gs_daemon__run_schedules(struct gs_daemon *d, uint64_t now);

/* The Prometheus text exposition of everything the daemon counts. */
void gs_daemon__render_metrics(struct gs_daemon *d, FILE *f);

#endif /* GS_DAEMON_H */
