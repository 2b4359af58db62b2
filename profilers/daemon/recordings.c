// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* recordings.c: the daemon's `gpusnoop record` children: schedules, after triggers, ctl. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "profilers/daemon/ctl_request.h"
#include "profilers/daemon/daemon.h"
#include "profilers/daemon/profile_schedule.h"
#include "user/clock.h"
#include "user/log.h"
#include "user/out_dir.h"

/* a recording asked to stop gets this long to finish its trace */
#define RECORDING_STOP_NS 10000000000ULL

/* "20261122T130347.123456789Z": file names sort by time and never collide within a ns. */
void gs_daemon_file_stamp(char *buf, size_t len)
{
	struct timespec now;
	char day[32];
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &now);
	strftime(day, sizeof(day), "%Y%m%dT%H%M%S", gmtime_r(&now.tv_sec, &tm));
	snprintf(buf, len, "%s.%09ldZ", day, now.tv_nsec);
}

/* A recording child's command line: the strings it points to live here */
struct record_argv {
	char *argv[18];
	char fd_arg[24], max_arg[24], ringbuf_arg[16];
};

/*
 * "-p PID [--children]" or "-a", then the rest: the trace's format, the daemon's ring buffer
 * size; max_bytes caps it (0: no cap).
 */
static void build_record_argv(struct record_argv *a, const struct gs_daemon *d, pid_t pid,
			      bool children, const char *target, const char *duration,
			      const char *events, int fd, uint64_t max_bytes, bool perfetto)
{
	char *argv[] = { "gpusnoop",
			 "record",
			 pid ? "-p" : "-a",
			 (char *)target,
			 "--children",
			 "-d",
			 (char *)duration,
			 "-e",
			 (char *)events,
			 "--format",
			 perfetto ? "perfetto" : "json",
			 "--ringbuf",
			 a->ringbuf_arg,
			 "--output-fd",
			 a->fd_arg,
			 "--max-bytes",
			 a->max_arg,
			 NULL };

	snprintf(a->fd_arg, sizeof(a->fd_arg), "%d,gz", fd);
	snprintf(a->max_arg, sizeof(a->max_arg), "%" PRIu64, max_bytes);
	snprintf(a->ringbuf_arg, sizeof(a->ringbuf_arg), "%u", d->cfg.ringbuf_mib);
	if (!max_bytes) /* no cap: no --max-bytes */
		argv[15] = NULL;
	if (!pid || !children) /* close the gap: no pid or no --children (-a has neither) */
		memmove(&argv[pid ? 4 : 3], &argv[5], sizeof(argv) - 5 * sizeof(argv[0]));
	_Static_assert(sizeof(argv) == sizeof(a->argv), "the argv fits");
	memcpy(a->argv, argv, sizeof(argv));
}

int gs_daemon__spawn(struct gs_daemon_recording *r, char *const argv[], int fd, uint64_t fsize)
{
	struct rlimit cap = { fsize, fsize };
	int pipe_fds[2], err;
	pid_t child;

	if (pipe2(pipe_fds, O_CLOEXEC)) {
		err = -errno;
		close(fd);
		return err;
	}
	child = fork();
	if (!child) {
		/* the descriptors it inherits on purpose: its file, which cannot pass the cap,
		 * and stderr, through the daemon, which keeps the last line for a failure */
		if (fcntl(fd, F_SETFD, 0) || (fsize && setrlimit(RLIMIT_FSIZE, &cap)) ||
		    dup2(pipe_fds[1], STDERR_FILENO) < 0)
			_exit(127);
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	err = child < 0 ? -errno : 0;
	close(fd);
	close(pipe_fds[1]);
	if (err) {
		close(pipe_fds[0]);
		return err;
	}
	fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
	r->err_fd = pipe_fds[0];
	r->err_len = 0;
	r->err_line[0] = '\0';
	r->pid = child;
	return 0;
}

bool gs_daemon__request_perfetto(const struct gs_daemon *d, int format)
{
	return format == GS_CTL_FORMAT_DEFAULT ? d->cfg.trace_perfetto
					       : format == GS_CTL_FORMAT_PERFETTO;
}

int gs_daemon__start_recording(struct gs_daemon *d, pid_t pid, bool children, double secs,
			       const char *events, const char *kind, int schedule, char *path_out,
			       size_t len)
{
	return gs_daemon__start_capped_recording(d, pid, children, secs, events, kind, schedule, 0,
						 d->cfg.trace_perfetto, path_out, len);
}

/*
 * Starts `gpusnoop record` (this same binary) on pid, or on every process when pid is 0,
 * writing DIR/gpusnoop-KIND-...json.gz. The child gets a descriptor of a temporary created
 * here (0600, O_EXCL, in the directory opened once), never a name to open: the trace is
 * renamed into place only when the child succeeded, see gs_daemon__reap_recordings().
 */
int gs_daemon__start_capped_recording(struct gs_daemon *d, pid_t pid, bool children, double secs,
				      const char *events, const char *kind, int schedule,
				      uint64_t max_bytes, bool perfetto, char *path_out, size_t len)
{
	char stamp[48], target[16], duration[32];
	struct gs_daemon_recording *r;
	struct record_argv argv;
	int fd, err;

	if (d->nr_recordings == MAX_RECORDINGS) {
		gs_warn("%s recording not started: %d already running", kind, MAX_RECORDINGS);
		return -EBUSY;
	}
	r = &d->recordings[d->nr_recordings];
	gs_daemon_file_stamp(stamp, sizeof(stamp));
	if (pid)
		snprintf(target, sizeof(target), "%d", (int)pid);
	else
		snprintf(target, sizeof(target), "all");
	snprintf(r->name, sizeof(r->name), "%s-%s-%s.%s.gz", kind, target, stamp,
		 perfetto ? "pftrace" : "json");
	fd = gs_out_dir__create_tmp(d->out_dir, r->name, r->tmp, sizeof(r->tmp), r->path,
				    sizeof(r->path));
	if (fd < 0)
		return fd;
	snprintf(duration, sizeof(duration), "%.3f", secs);
	build_record_argv(&argv, d, pid, children, target, duration, events, fd, max_bytes,
			  perfetto);
	err = gs_daemon__spawn(r, argv.argv, fd, max_bytes);
	if (err) {
		gs_err("starting a recording: %s", strerror(-err));
		gs_out_dir__discard(d->out_dir, r->tmp);
		return err;
	}
	r->schedule = schedule;
	r->profile = false;
	r->deadline_ns = 0;
	r->overdue = false;
	d->nr_recordings++;
	d->recordings_started++;
	gs_info("recording %s for %gs (%s): %s", pid ? target : "every process", secs, events,
		r->path);
	if (path_out)
		snprintf(path_out, len, "%s", r->path);
	return 0;
}

/*
 * One line of the child's stderr: passed on to ours, as before it had its own pipe, and kept,
 * printable and without its prefix, when it says what went wrong: gpusnoop's "error: " lines
 * and argp's "gpusnoop record: " ones.
 */
static void child_line(struct gs_daemon_recording *r, const char *line, size_t len)
{
	static const char *const prefixes[] = { "gpusnoop: error: ", "gpusnoop record: " };
	size_t n = 0, plen = 0;

	fprintf(stderr, "%.*s\n", (int)len, line);
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]) && !plen; i++)
		if (len >= strlen(prefixes[i]) && !strncmp(line, prefixes[i], strlen(prefixes[i])))
			plen = strlen(prefixes[i]);
	if (!plen)
		return;
	for (; n < len - plen && n + 1 < sizeof(r->err_line); n++) {
		char c = line[plen + n];

		r->err_line[n] = c >= 0x20 && c < 0x7f ? c : '?';
	}
	r->err_line[n] = '\0';
}

/* What the child wrote to stderr since the last call; closes the pipe at its end. Bounded. */
static void drain_child_stderr(struct gs_daemon_recording *r)
{
	for (int reads = 0; r->err_fd >= 0 && reads < 64; reads++) {
		ssize_t n =
			read(r->err_fd, r->err_buf + r->err_len, sizeof(r->err_buf) - r->err_len);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0 || errno != EAGAIN) { /* its end: the last line, unterminated */
				child_line(r, r->err_buf, r->err_len);
				r->err_len = 0;
				close(r->err_fd);
				r->err_fd = -1;
			}
			return;
		}
		r->err_len += (size_t)n;
		while ((nl = memchr(r->err_buf, '\n', r->err_len))) {
			size_t len = (size_t)(nl - r->err_buf);

			child_line(r, r->err_buf, len);
			r->err_len -= len + 1;
			memmove(r->err_buf, nl + 1, r->err_len);
		}
		if (r->err_len == sizeof(r->err_buf)) { /* a line this long is cut */
			child_line(r, r->err_buf, r->err_len);
			r->err_len = 0;
		}
	}
}

/* The child's exit, as its own last message says it when it said one. */
static void failure_reason(const struct gs_daemon_recording *r, int status, char *buf, size_t len)
{
	if (r->err_line[0])
		snprintf(buf, len, "%s", r->err_line);
	else if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "wait status %d", status);
}

/* A finished child's trace: renamed into place when it succeeded, else removed. */
static void finish_recording(struct gs_daemon *d, struct gs_daemon_recording *r, int status)
{
	const char *what = r->profile ? "profile" : "recording";
	char why[300];

	/* what it still had to say: its pipe ends with it (64 reads of 512 bytes at most) */
	drain_child_stderr(r);
	if (r->err_fd >= 0) {
		close(r->err_fd);
		r->err_fd = -1;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		failure_reason(r, status, why, sizeof(why));
		gs_warn("%s %s failed: %s", what, r->path, why);
		gs_out_dir__discard(d->out_dir, r->tmp);
	} else if (!gs_out_dir__commit(d->out_dir, r->tmp, r->name)) {
		gs_info("%s done: %s", what, r->path);
		if (r->profile)
			gs_daemon__profile_done(d, r->path, r->schedule);
		return;
	}
	if (r->profile)
		gs_daemon__profile_failed(d, r->schedule);
}

/* Collects finished recordings; applies their schedule's retention. */
void gs_daemon__reap_recordings(struct gs_daemon *d)
{
	for (size_t i = 0; i < d->nr_recordings;) {
		struct gs_daemon_recording *r = &d->recordings[i];
		int status;

		drain_child_stderr(r);
		if (waitpid(r->pid, &status, WNOHANG) != r->pid) {
			i++;
			continue;
		}
		finish_recording(d, r, status);
		if (r->schedule >= 0 && (size_t)r->schedule < d->cfg.nr_schedules) {
			const struct gs_daemon_schedule *s = &d->cfg.schedules[r->schedule];
			char sub[32];

			snprintf(sub, sizeof(sub), "schedule%d-", r->schedule);
			gs_out_dir__retain(d->out_dir, sub, s->keep, s->keep_bytes);
		}
		gs_daemon__enforce_caps(d); /* what users asked for first, then the whole cap */
		*r = d->recordings[--d->nr_recordings];
	}
}

/* Asks running recordings to finish their traces, and waits for them (bounded). */
void gs_daemon__stop_recordings(struct gs_daemon *d)
{
	uint64_t deadline = gs_clock_ns(CLOCK_MONOTONIC) + RECORDING_STOP_NS;

	for (size_t i = 0; i < d->nr_recordings; i++)
		kill(d->recordings[i].pid, SIGINT);
	while (d->nr_recordings && gs_clock_ns(CLOCK_MONOTONIC) < deadline) {
		gs_daemon__reap_recordings(d);
		if (d->nr_recordings)
			usleep(20000);
	}
	for (size_t i = 0; i < d->nr_recordings; i++) {
		gs_warn("recording %s did not stop: killed", d->recordings[i].path);
		kill(d->recordings[i].pid, SIGKILL);
		waitpid(d->recordings[i].pid, NULL, 0);
		if (d->recordings[i].err_fd >= 0)
			close(d->recordings[i].err_fd);
		gs_out_dir__discard(d->out_dir, d->recordings[i].tmp);
	}
	d->nr_recordings = 0;
}

static bool schedule_running(const struct gs_daemon *d, size_t schedule)
{
	for (size_t i = 0; i < d->nr_recordings; i++)
		if (d->recordings[i].schedule == (int)schedule)
			return true;
	return false;
}

void gs_daemon__run_schedules(struct gs_daemon *d, uint64_t now)
{
	for (size_t i = 0; i < d->cfg.nr_schedules; i++) {
		const struct gs_daemon_schedule *s = &d->cfg.schedules[i];
		uint64_t every_ns = (uint64_t)(s->every_s * 1e9);
		char kind[32];

		if (!d->next_schedule_ns[i])
			d->next_schedule_ns[i] = now + every_ns;
		if (now < d->next_schedule_ns[i])
			continue;
		/* a late loop skips missed slots instead of firing them in a burst */
		while (d->next_schedule_ns[i] <= now)
			d->next_schedule_ns[i] += every_ns;
		/* never two of one schedule at once: retention must only see finished traces */
		if (schedule_running(d, i)) {
			gs_warn("schedule %zu: the previous one still runs: slot skipped", i);
			continue;
		}
		snprintf(kind, sizeof(kind), "schedule%zu", i);
		if (s->profile)
			gs_daemon__start_profile(d, s->record_s, s->hz, s->cuda_only, kind, (int)i);
		else
			gs_daemon__start_recording(d, 0, false, s->record_s, s->events, kind,
						   (int)i, NULL, 0);
	}
}
