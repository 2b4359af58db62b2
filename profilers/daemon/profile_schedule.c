// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * profile_schedule.c: the daemon's CPU profiles: `schedule every P profile W` entries and the
 * ones asked for over HTTP. Each is a `gpusnoop profile --format pprof` child writing through
 * a descriptor of a temporary in the output directory, exactly like a recording: the pprof
 * writer stays the one of user/profile.c, the retention and caps are the recordings'.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/daemon/config.h"
#include "profilers/daemon/daemon.h"
#include "profilers/daemon/profile_schedule.h"
#include "profilers/options.h"
#include "user/clock.h"
#include "user/log.h"
#include "user/metrics_server.h"
#include "user/out_dir.h"

/*
 * A profile child still running this long after its window is killed (its file discarded):
 * a child stuck on something cannot hold a schedule's slot, or an HTTP client, for ever.
 */
#define PROFILE_GRACE_NS (120 * 1000000000ULL)
#define PROFILE_KILL_NS	 (10 * 1000000000ULL) /* after SIGTERM, until SIGKILL */
/* on-demand profiles kept in the output directory (the newest is also served) */
#define HTTP_PROFILES_KEPT 4

/* argv of the profile child: "-a", or "-p PID" for each CUDA process; then the rest. */
struct profile_argv {
	char *argv[16 + 2 * GS_MAX_PIDS];
	char pids[GS_MAX_PIDS][16];
	char secs[32], hz[16], fd[16], ringbuf[16];
};

static int build_argv(struct gs_daemon *d, struct profile_argv *a, double secs, unsigned int hz,
		      bool cuda_only, int fd)
{
	size_t n = 0, nr_pids = 0;

	a->argv[n++] = "gpusnoop";
	a->argv[n++] = "profile";
	if (!cuda_only)
		a->argv[n++] = "-a";
	for (size_t i = 0; cuda_only && i < d->mem.raw.nr_procs && nr_pids < GS_MAX_PIDS; i++) {
		pid_t pid = d->mem.raw.procs[i]->pid;

		/* `profile -p` refuses a pid that is gone: one whose exit went unseen is left out */
		if (kill(pid, 0) && errno == ESRCH)
			continue;
		snprintf(a->pids[nr_pids], sizeof(a->pids[nr_pids]), "%d", (int)pid);
		a->argv[n++] = "-p";
		a->argv[n++] = a->pids[nr_pids++];
	}
	if (cuda_only && n == 2)
		return -ENOENT;
	snprintf(a->secs, sizeof(a->secs), "%.3f", secs);
	snprintf(a->hz, sizeof(a->hz), "%u", hz);
	snprintf(a->fd, sizeof(a->fd), "%d", fd);
	a->argv[n++] = "-d";
	a->argv[n++] = a->secs;
	a->argv[n++] = "-F";
	a->argv[n++] = a->hz;
	a->argv[n++] = "--format";
	a->argv[n++] = "pprof";
	/* the daemon's ring buffer size, as it sizes its own */
	snprintf(a->ringbuf, sizeof(a->ringbuf), "%u", d->cfg.ringbuf_mib);
	a->argv[n++] = "--ringbuf";
	a->argv[n++] = a->ringbuf;
	a->argv[n++] = "--output-fd";
	a->argv[n++] = a->fd;
	a->argv[n] = NULL;
	return 0;
}

int gs_daemon__start_profile(struct gs_daemon *d, double secs, unsigned int hz, bool cuda_only,
			     const char *kind, int schedule)
{
	struct gs_daemon_recording *r;
	struct profile_argv *a;
	char stamp[48];
	int fd, err;

	if (d->nr_recordings == MAX_RECORDINGS) {
		gs_warn("%s profile not started: %d recordings already running", kind,
			MAX_RECORDINGS);
		return -EBUSY;
	}
	a = malloc(sizeof(*a));
	if (!a)
		return -ENOMEM;
	r = &d->recordings[d->nr_recordings];
	gs_daemon_file_stamp(stamp, sizeof(stamp));
	snprintf(r->name, sizeof(r->name), "%s-%s-%s.pb.gz", kind, cuda_only ? "cuda" : "all",
		 stamp);
	/* the argv first: with no CUDA process there is nothing to create */
	err = build_argv(d, a, secs, hz, cuda_only, 0);
	if (err) {
		gs_info("%s profile: no CUDA process to profile: slot skipped", kind);
		goto out_free;
	}
	fd = gs_out_dir__create_tmp(d->out_dir, r->name, r->tmp, sizeof(r->tmp), r->path,
				    sizeof(r->path));
	if (fd < 0) {
		err = fd;
		goto out_free;
	}
	snprintf(a->fd, sizeof(a->fd), "%d", fd);
	err = gs_daemon__spawn(r, a->argv, fd, 0);
	if (err) {
		gs_err("starting a profile: %s", strerror(-err));
		gs_out_dir__discard(d->out_dir, r->tmp);
		goto out_free;
	}
	r->schedule = schedule;
	r->profile = true;
	r->overdue = false;
	r->deadline_ns = gs_clock_ns(CLOCK_MONOTONIC) + (uint64_t)(secs * 1e9) + PROFILE_GRACE_NS;
	d->nr_recordings++;
	d->profiles_started++;
	gs_info("profile of %s for %gs at %u Hz: %s",
		cuda_only ? "CUDA processes" : "every process", secs, hz, r->path);
out_free:
	free(a);
	return err;
}

/* Reads the profile at path for the HTTP server (bounded); NULL when it cannot. */
static void *read_profile(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t used = 0;
	char *buf;
	ssize_t n;

	if (fd < 0)
		return NULL;
	buf = malloc(GS_DAEMON_PROFILE_SERVE_MAX);
	while (buf && used < GS_DAEMON_PROFILE_SERVE_MAX &&
	       (n = read(fd, buf + used, GS_DAEMON_PROFILE_SERVE_MAX - used)) > 0)
		used += (size_t)n;
	close(fd);
	if (buf && (used == GS_DAEMON_PROFILE_SERVE_MAX || !used)) {
		gs_warn("%s: empty or larger than %u bytes: not served over HTTP", path,
			GS_DAEMON_PROFILE_SERVE_MAX);
		free(buf);
		return NULL;
	}
	*len = used;
	return buf;
}

void gs_daemon__profile_done(struct gs_daemon *d, const char *path, int schedule)
{
	size_t len = 0;
	void *data;

	if (schedule == GS_DAEMON_HTTP_SCHEDULE)
		gs_out_dir__retain(d->out_dir, "http-", HTTP_PROFILES_KEPT, 0);
	snprintf(d->latest_profile, sizeof(d->latest_profile), "%s", path);
	if (!d->metrics)
		return;
	data = read_profile(path, &len);
	if (data && !gs_metrics_server__publish_profile(d->metrics, data, len)) {
		free(data);
		return;
	}
	free(data);
	gs_daemon__profile_failed(d, schedule);
}

void gs_daemon__republish_profile(struct gs_daemon *d)
{
	size_t len = 0;
	void *data;

	if (!d->metrics || !d->latest_profile[0])
		return;
	/* retention may have removed it meanwhile: then there is nothing to serve */
	data = read_profile(d->latest_profile, &len);
	if (data)
		gs_metrics_server__publish_profile(d->metrics, data, len);
	free(data);
}

void gs_daemon__profile_failed(struct gs_daemon *d, int schedule)
{
	if (d->metrics && schedule == GS_DAEMON_HTTP_SCHEDULE)
		gs_metrics_server__fail_profile(d->metrics);
}

void gs_daemon__watch_profiles(struct gs_daemon *d, uint64_t now_ns)
{
	for (size_t i = 0; i < d->nr_recordings; i++) {
		struct gs_daemon_recording *r = &d->recordings[i];

		if (!r->profile || !r->deadline_ns || now_ns < r->deadline_ns)
			continue;
		/* SIGTERM first: the child resumes what it stopped and ends its file */
		gs_warn("profile %s: still running long after its window: %s", r->path,
			r->overdue ? "killed" : "asked to stop");
		kill(r->pid, r->overdue ? SIGKILL : SIGTERM);
		r->deadline_ns = r->overdue ? 0 : now_ns + PROFILE_KILL_NS;
		r->overdue = true;
	}
}

static bool http_profile_running(const struct gs_daemon *d)
{
	for (size_t i = 0; i < d->nr_recordings; i++)
		if (d->recordings[i].schedule == GS_DAEMON_HTTP_SCHEDULE)
			return true;
	return false;
}

/* The scope and rate of an on-demand profile: the first profile schedule's, else all at 99. */
void gs_daemon__serve_profile_requests(struct gs_daemon *d)
{
	unsigned int secs, hz = GS_DAEMON_PROFILE_HZ_DEFAULT;
	bool cuda_only = false;

	if (!d->metrics || http_profile_running(d))
		return;
	secs = gs_metrics_server__take_profile_request(d->metrics);
	if (!secs)
		return;
	for (size_t i = 0; i < d->cfg.nr_schedules; i++) {
		if (d->cfg.schedules[i].profile) {
			hz = d->cfg.schedules[i].hz;
			cuda_only = d->cfg.schedules[i].cuda_only;
			break;
		}
	}
	if (gs_daemon__start_profile(d, secs, hz, cuda_only, "http", GS_DAEMON_HTTP_SCHEDULE))
		gs_metrics_server__fail_profile(d->metrics);
}
