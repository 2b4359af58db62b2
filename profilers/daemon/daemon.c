// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* daemon.c: `gpusnoop daemon`: events in, triggers, reports, control requests, the main loop. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "profilers/daemon/ctl_request.h"
#include "profilers/daemon/ctl_tree.h"
#include "profilers/cuda/api.h"
#include "profilers/call_counts.h"
#include "profilers/daemon/daemon.h"
#include "profilers/daemon/config.h"
#include "profilers/daemon/flight_recorder.h"
#include "profilers/daemon/flight_trace.h"
#include "profilers/daemon/profile_schedule.h"
#include "profilers/leak_report.h"
#include "profilers/mem_model.h"
#include "profilers/options.h"
#include "profilers/run_loop.h"
#include "profilers/cmd/subcommands.h"
#include "profilers/tracker.h"
#include "user/array.h"
#include "user/clock.h"
#include "user/ctl_socket.h"
#include "user/log.h"
#include "user/metrics_server.h"
#include "user/out_dir.h"
#include "user/out_file.h"
#include "user/stack_table.h"
#include "user/text_escape.h"

#define POLL_MS		  100
#define METRICS_EVERY_NS  1000000000ULL
#define FLIGHT_MAX_EVENTS 16384 /* per process: ~0.8 MiB at most */
/* allocator actions kept per PyTorch process for its OOM snapshot: ~0.5 MiB at most */
#define SNAPSHOT_ENTRIES 10000

static volatile sig_atomic_t reload_requested;

static void on_sighup(int sig)
{
	reload_requested = sig;
}

static struct gs_daemon_proc *proc_stats(struct gs_daemon *d, pid_t pid, bool create)
{
	size_t pos;

	if (gs_pid_index__get(&d->proc_index, pid, &pos))
		return &d->procs[pos];
	if (!create || GS_ARRAY_RESERVE(d->procs, d->nr_procs, d->cap_procs, 16) ||
	    gs_pid_index__set(&d->proc_index, pid, d->nr_procs))
		return NULL;
	d->procs[d->nr_procs] = (struct gs_daemon_proc){ .pid = pid };
	return &d->procs[d->nr_procs++];
}

static void forget_proc_stats(struct gs_daemon *d, pid_t pid)
{
	size_t pos;

	if (!gs_pid_index__get(&d->proc_index, pid, &pos))
		return;
	gs_pid_index__remove(&d->proc_index, pid);
	/* the last entry fills the hole; its index entry exists, so moving it allocates nothing */
	d->procs[pos] = d->procs[--d->nr_procs];
	if (pos < d->nr_procs)
		gs_pid_index__set(&d->proc_index, d->procs[pos].pid, pos);
}

/* A report's loss window: taken once for the files of one report, so each says the same. */
struct report_window {
	uint64_t lost, start_ns;
};

/*
 * One report over one process (reason "trigger" with t, or "snapshot"), text or JSON; w: the
 * window its files share, NULL: its own.
 */
static int write_proc_report(struct gs_daemon *d, struct gs_mem_proc *p, const char *reason,
			     const struct gs_leak_trigger *t, bool json, FILE *f,
			     const struct report_window *w)
{
	struct gs_leak_proc_report proc;
	struct gs_leak_report r = {
		.reason = reason,
		.trigger = t,
		.now_ns = gs_clock_ns(CLOCK_MONOTONIC),
		.top = d->cfg.top,
		.stack_sample = d->cfg.stack_sample, /* > 1: says what the stacks leave out */
		.procs = &proc,
		.nr_procs = 1,
	};
	int err;

	err = gs_leak_proc_report__build(&proc, &d->mem, p, gs_tracker__comm(d->tracker, p->pid),
					 r.now_ns, 0);
	if (err)
		return err;
	gs_tracker__stats(d->tracker, r.stats);
	if (w) {
		r.window_lost = w->lost;
		r.window_start_ns = w->start_ns;
	} else {
		r.window_lost = gs_loss_window__take(&d->loss_window, r.stats, r.now_ns,
						     &r.window_start_ns);
	}
	if (json)
		gs_leak_report__write_json(f, &r, d->stacks);
	else
		gs_leak_report__write_text(f, &r, d->stacks);
	gs_leak_proc_report__release(&proc);
	return 0;
}

/* The flight recorder's last seconds of the process, with the report's loss window. */
static int write_flight_trace(struct gs_daemon *d, struct gs_mem_proc *p,
			      const struct gs_leak_trigger *t, uint64_t now,
			      const struct report_window *w, FILE *f)
{
	uint64_t stats[GS_STAT__MAX];
	struct gs_flight_trace ft = {
		.fr = d->flight,
		.pid = p->pid,
		.now_ns = now,
		.outstanding_now = gs_mem_model__cuda_bytes(&d->mem, p->pid) - p->pinned_bytes,
		.trigger = t,
		.tracker = d->tracker,
		.stacks = d->stacks,
		.symcache = gs_tracker__symcache(d->tracker),
		.perfetto = d->cfg.trace_perfetto,
		.stats = stats,
		.window_lost = w->lost,
		.window_start_ns = w->start_ns,
		.flight_nomem = d->losses.own[GS_DAEMON_LOSS_FLIGHT_NOMEM],
	};

	gs_tracker__stats(d->tracker, stats);
	return gs_flight_trace__write(f, &ft);
}

/* The JSON report comes last: once it is in place, so are the files beside it. */
enum report_output { REPORT_TEXT, REPORT_TRACE, REPORT_SNAPSHOT, REPORT_JSON, REPORT__MAX };

/*
 * Writes the report as KIND-PID-TIME.txt and .json under the output directory, and for a
 * trigger the flight recorder's last seconds of the process as .trace.json.
 */
static int write_report_files(struct gs_daemon *d, struct gs_mem_proc *p, const char *kind,
			      const struct gs_leak_trigger *t, char *json_path, size_t len)
{
	const char *const exts[] = { ".txt", d->cfg.trace_perfetto ? ".pftrace" : ".trace.json",
				     ".memory_snapshot.pickle", ".json" };
	char stamp[48], name[160], path[512];
	uint64_t now = gs_clock_ns(CLOCK_MONOTONIC), stats[GS_STAT__MAX];
	struct report_window w;
	int err = 0;

	gs_tracker__stats(d->tracker, stats);
	w.lost = gs_loss_window__take(&d->loss_window, stats, now, &w.start_ns);
	gs_daemon_file_stamp(stamp, sizeof(stamp));
	for (size_t i = 0; i < REPORT__MAX && !err; i++) {
		struct gs_out *out;
		FILE *f;

		if (i == REPORT_TRACE && !(t && d->flight))
			continue;
		/* a PyTorch process's trigger: its memory as torch.cuda._memory_viz draws it */
		if (i == REPORT_SNAPSHOT && !(t && gs_mem_model__torch_proc(&d->mem, p->pid)))
			continue;

		snprintf(name, sizeof(name), "%s-%d-%s%s", kind, (int)p->pid, stamp, exts[i]);
		/* written beside its name, renamed when complete: no partial report is left */
		err = gs_out_dir__create(d->out_dir, name, &out, path, sizeof(path));
		if (err)
			break;
		f = gs_out__file(out);
		if (i == REPORT_SNAPSHOT)
			err = gs_mem_model__write_snapshot(&d->mem, p->pid, now, f);
		else if (i == REPORT_TRACE)
			err = write_flight_trace(d, p, t, now, &w, f);
		else
			err = write_proc_report(d, p, t ? "trigger" : "snapshot", t,
						i == REPORT_JSON, f, &w);
		/* each logs its error, the first write error's errno before the writer's */
		err = err ? gs_out__fail(out, err) : gs_out__close(out);
		if (!err && i == REPORT_JSON)
			snprintf(json_path, len, "%s", path);
	}
	gs_daemon__enforce_caps(d);
	if (err)
		d->report_errors++;
	else
		d->reports_written++;
	return err;
}

/* After a trigger: a report now, then (if configured) what the process does next. */
static void triggered(struct gs_daemon *d, struct gs_mem_proc *p, const struct gs_leak_trigger *t,
		      bool alive)
{
	char path[512];

	if (write_report_files(d, p, t->kind, t, path, sizeof(path)))
		return;
	gs_info("pid %d (%s): %s: report %s", (int)p->pid, gs_tracker__comm(d->tracker, p->pid),
		t->kind, path);
	if (alive && d->cfg.oom_record_s > 0)
		gs_daemon__start_recording(d, p->pid, false, d->cfg.oom_record_s,
					   d->cfg.oom_record_events, "record", -1, NULL, 0);
}

/* At most one report per process per trigger-interval; counts what it holds back. */
static bool rate_limited(struct gs_daemon *d, pid_t pid, uint64_t ts_ns)
{
	struct gs_daemon_proc *st = proc_stats(d, pid, true);
	uint64_t interval_ns = (uint64_t)(d->cfg.trigger_interval_s * 1e9);

	if (!st)
		return true;
	if (st->last_trigger_ns && ts_ns - st->last_trigger_ns < interval_ns) {
		d->triggers_suppressed++;
		return true;
	}
	st->last_trigger_ns = ts_ns;
	return false;
}

static void cuda_oom(struct gs_daemon *d, const struct gs_mem_alloc *e, uint32_t stack_id)
{
	struct gs_leak_trigger t = gs_leak_trigger_cuda_oom(e, stack_id);
	struct gs_mem_proc *p = gs_mem_model__proc(&d->mem, (pid_t)e->hdr.pid, false);

	d->oom_events++;
	if (d->cfg.oom_reports && p && !rate_limited(d, p->pid, e->hdr.ts_ns))
		triggered(d, p, &t, true);
}

/* PyTorch's allocator gave up: c10::reportOutOfMemoryToProfiler or OutOfMemoryError. */
static void on_torch_oom(void *ctx, const struct gs_torch_oom *e)
{
	struct gs_daemon *d = ctx;
	struct gs_mem_effect fx;
	struct gs_leak_trigger t;
	struct gs_mem_proc *p;

	if (gs_mem_model__torch_oom(&d->mem, e, &fx)) {
		gs_warn("PyTorch OOM of pid %d: out of memory", (int)e->hdr.pid);
		return;
	}
	if (!fx.torch_oom) /* the throw after the profiler hook: the same OOM */
		return;
	d->torch_ooms++;
	p = gs_mem_model__proc(&d->mem, (pid_t)e->hdr.pid, false);
	t = gs_leak_trigger_torch_oom(p->pid, &fx.oom);
	if (d->cfg.oom_reports && !rate_limited(d, p->pid, e->hdr.ts_ns))
		triggered(d, p, &t, true);
}

static void on_torch_mem(void *ctx, const struct gs_torch_mem *e)
{
	struct gs_daemon *d = ctx;
	struct gs_mem_effect fx;

	if (gs_mem_model__tensor(&d->mem, e, &fx))
		d->losses.own[GS_DAEMON_LOSS_MODEL_NOMEM]++;
}

/* The kernel is about to kill a CUDA process for memory: what it held, before it is gone. */
static void on_oom_kill(void *ctx, pid_t pid)
{
	struct gs_daemon *d = ctx;
	struct gs_mem_proc *p = gs_mem_model__proc(&d->mem, pid, false);
	struct gs_leak_trigger t = { .kind = "oom-kill", .pid = pid };

	d->oom_kills++;
	if (d->cfg.oom_reports && p)
		triggered(d, p, &t, false);
}

/* Keeps the event for a trigger's trace; a full memory only loses the trace, not the report. */
static void remember(struct gs_daemon *d, pid_t pid, const struct gs_flight_event *fe)
{
	if (d->flight && gs_flight_recorder__add(d->flight, pid, fe))
		d->losses.own[GS_DAEMON_LOSS_FLIGHT_NOMEM]++; /* logged by log_losses() */
}

static void on_alloc(void *ctx, const struct gs_mem_alloc *e)
{
	struct gs_daemon *d = ctx;
	struct gs_mem_effect fx;
	int err;

	proc_stats(d, (pid_t)e->hdr.pid, true);
	err = gs_mem_model__alloc(&d->mem, e, &fx);
	if (err) {
		gs_err("tracking allocations: %s", strerror(-err));
		d->error = err;
		return;
	}
	/* segments are PyTorch's reserved memory: its OOM says more than their calls */
	if (fx.route != GS_ROUTE_RAW)
		return;
	remember(d, (pid_t)e->hdr.pid,
		 &(struct gs_flight_event){ .ts_ns = e->hdr.ts_ns,
					    .entry_ts_ns = e->entry_ts_ns,
					    .ptr = e->ptr,
					    .size = e->size,
					    .tid = e->hdr.tid,
					    .stack_id = fx.stack_id,
					    .ret = e->ret,
					    .api = e->api,
					    .kind = e->ret ? GS_FLIGHT_FAILED : GS_FLIGHT_ALLOC });
	if (fx.cuda_oom)
		cuda_oom(d, e, fx.stack_id);
}

static void on_free(void *ctx, const struct gs_mem_free *e)
{
	struct gs_daemon *d = ctx;
	struct gs_mem_effect fx;

	proc_stats(d, (pid_t)e->hdr.pid, true);
	if (gs_mem_model__free(&d->mem, e, &fx))
		d->losses.own[GS_DAEMON_LOSS_MODEL_NOMEM]++;
	else if (fx.route == GS_ROUTE_RAW)
		remember(d, (pid_t)e->hdr.pid,
			 &(struct gs_flight_event){ .ts_ns = e->hdr.ts_ns,
						    .entry_ts_ns = e->hdr.ts_ns,
						    .ptr = e->ptr,
						    .size = fx.freed_size,
						    .tid = e->hdr.tid,
						    .api = e->api,
						    .kind = GS_FLIGHT_FREE });
}

/* Launches and synchronizations, only probed with cuda-call-metrics on. */
static void on_cuda_call(void *ctx, const struct gs_cuda_call *e)
{
	struct gs_daemon *d = ctx;
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);
	struct gs_daemon_proc *st = proc_stats(d, (pid_t)e->hdr.pid, true);
	struct gs_mem_effect fx;

	if (!api || !st)
		return;
	gs_mem_model__cuda_call(&d->mem, e, &fx);
	gs_top_counts__add_call(&st->calls, api, e); /* counted as `gpusnoop top` counts them */
}

static void on_free_ret(void *ctx, const struct gs_mem_free_ret *e)
{
	struct gs_daemon *d = ctx;
	struct gs_mem_effect fx;

	gs_mem_model__free_ret(&d->mem, e, &fx);
}

/* A process that exits or execs takes its CUDA memory with it: forget it. */
static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	struct gs_daemon *d = ctx;

	gs_mem_model__proc_gone(&d->mem, pid, exec);
	if (d->flight)
		gs_flight_recorder__forget(d->flight, pid);
	if (exec)
		return; /* its counters, and its failures' stacks, go on with the process */
	forget_proc_stats(d, pid);
	gs_call_counts__forget(gs_tracker__objects(d->tracker), pid);
	gs_stack_table__forget(d->stacks, pid); /* after exit nothing refers to them */
}

/* A process's launches and syncs the kernel counted (no record sent): its totals so far. */
static void on_call_totals(void *ctx, const struct gs_call_totals *t)
{
	struct gs_daemon *d = ctx;
	struct gs_daemon_proc *st;

	/* gone, its exit not seen (or not yet): no series is made for it */
	if (kill(t->pid, 0) && errno == ESRCH) {
		gs_call_counts__forget(gs_tracker__objects(d->tracker), t->pid);
		return;
	}
	st = proc_stats(d, t->pid, true);
	if (!st)
		return;
	st->in_kernel.launches = t->launches;
	st->in_kernel.syncs = t->syncs;
	st->in_kernel.sync_ns = t->sync_ns;
}

static void publish_metrics(struct gs_daemon *d)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!d->metrics)
		return;
	if (d->cfg.call_metrics)
		gs_call_counts__each(gs_tracker__objects(d->tracker), on_call_totals, d);
	f = open_memstream(&text, &len);
	if (!f)
		return;
	gs_daemon__render_metrics(d, f);
	if (!fclose(f))
		gs_metrics_server__publish(d->metrics, text, len);
	free(text);
}

/* Root may ask about any process; anyone else only about their own. */
bool gs_daemon__may_see(const struct gs_ctl_peer *peer, pid_t pid)
{
	char path[64];
	struct stat st;

	if (peer->uid == 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return !stat(path, &st) && st.st_uid == peer->uid;
}

/* Users whose records were dropped for taking more than their share: a user sees its own. */
static void ctl_status_uid_drops(struct gs_daemon *d, const struct gs_ctl_peer *peer, FILE *out)
{
	uint32_t uids[64];
	uint64_t drops[64];
	size_t n = gs_tracker__uid_drops(d->tracker, uids, drops, 64);

	for (size_t i = 0; i < n; i++)
		if (peer->uid == 0 || peer->uid == uids[i])
			fprintf(out, "user %u: %" PRIu64 " events dropped (over its share)\n",
				uids[i], drops[i]);
}

static void ctl_status(struct gs_daemon *d, const struct gs_ctl_peer *peer, FILE *out)
{
	uint64_t now = gs_clock_ns(CLOCK_MONOTONIC);
	char b[32], comm[GS_TEXT_SAFE_LEN(16)];

	fprintf(out,
		"gpusnoop daemon %s: up %.0f s, %zu CUDA processes, %" PRIu64
		" OOM events, %" PRIu64 " reports in %s, %" PRIu64 " events lost\n",
		GS_VERSION, (double)(now - d->start_ns) / 1e9, d->mem.raw.nr_procs, d->oom_events,
		d->reports_written, d->cfg.output_dir, gs_tracker__dropped(d->tracker));
	ctl_status_uid_drops(d, peer, out);
	for (size_t i = 0; i < d->mem.raw.nr_procs; i++) {
		struct gs_mem_proc *p = d->mem.raw.procs[i];

		if (!gs_daemon__may_see(peer, p->pid))
			continue;
		gs_format_bytes(gs_alloc_table__bytes(p->allocs), b, sizeof(b));
		fprintf(out, "pid %d (%s): %s outstanding in %zu allocations, %" PRIu64 " failed\n",
			(int)p->pid,
			gs_text_safe(gs_tracker__comm(d->tracker, p->pid), comm, sizeof(comm)), b,
			gs_alloc_table__count(p->allocs), p->failed_allocations);
	}
}

/* "leaks PID [json]", "snapshot PID", "record PID ...": a process the peer may see, that we follow. */
static struct gs_mem_proc *ctl_target(struct gs_daemon *d, const struct gs_ctl_peer *peer, int pid,
				      FILE *out)
{
	struct gs_mem_proc *p;

	if (!gs_daemon__may_see(peer, (pid_t)pid)) {
		fprintf(out, "error: pid %d: permission denied (not your process)\n", pid);
		return NULL;
	}
	p = gs_mem_model__proc(&d->mem, (pid_t)pid, false);
	if (!p)
		fprintf(out, "error: pid %d: not a CUDA process the daemon follows\n", pid);
	return p;
}

/*
 * What a non-root user asks for is named "gpusnoop-user<UID>-<KIND>-...": the file records
 * who asked, and that user's files (and all users' together) can be capped apart from the
 * trigger reports they must not push out. Root's requests keep plain names.
 */
#define USER_TAG "user"
/* the least a user's recording may write, whatever user-max-bytes says */
#define USER_RECORDING_MIN_BYTES (1ULL << 20)

static void user_tag(const struct gs_ctl_peer *peer, char *tag, size_t len)
{
	if (peer->uid)
		snprintf(tag, len, USER_TAG "%u-", (unsigned int)peer->uid);
	else
		tag[0] = '\0';
}

void gs_daemon__enforce_caps(struct gs_daemon *d)
{
	/* at least 1: a keep_bytes of 0 would mean no limit */
	uint64_t users_max = d->cfg.output_max_bytes / 2 ? d->cfg.output_max_bytes / 2 : 1;

	gs_out_dir__retain(d->out_dir, USER_TAG, 0, users_max);
	gs_out_dir__enforce_cap(d->out_dir);
}

/* One user's files within user-max-bytes (the newest always stays), then the caps. */
static void enforce_user_caps(struct gs_daemon *d, const char *tag)
{
	if (*tag)
		gs_out_dir__retain(d->out_dir, tag, 0, d->cfg.user_max_bytes);
	gs_daemon__enforce_caps(d);
}

/* Running recordings that the user with tag asked for (their file names say so). */
static unsigned int user_recordings(const struct gs_daemon *d, const char *tag)
{
	size_t prefix_len = strlen(REPORT_PREFIX);
	unsigned int n = 0;

	for (size_t i = 0; i < d->nr_recordings; i++) {
		const char *path = d->recordings[i].path, *base = strrchr(path, '/');

		base = base ? base + 1 : path;
		n += !strncmp(base, REPORT_PREFIX, prefix_len) &&
		     !strncmp(base + prefix_len, tag, strlen(tag));
	}
	return n;
}

/* A user's recording ends itself at user-max-bytes (a trace needs room for its end). */
static uint64_t user_recording_cap(const struct gs_daemon *d)
{
	return d->cfg.user_max_bytes > USER_RECORDING_MIN_BYTES ? d->cfg.user_max_bytes
								: USER_RECORDING_MIN_BYTES;
}

static void ctl_record(struct gs_daemon *d, const struct gs_ctl_peer *peer,
		       const struct gs_ctl_request *req, struct gs_mem_proc *p, FILE *out)
{
	char tag[32], kind[48], path[512];
	unsigned int running;
	int err;

	user_tag(peer, tag, sizeof(tag));
	/* so that one user cannot take every recording slot: root is not limited */
	running = *tag ? user_recordings(d, tag) : 0;
	if (*tag && running >= d->cfg.user_max_recordings) {
		fprintf(out,
			"error: at most %u recordings per user at once; %u of yours are running\n",
			d->cfg.user_max_recordings, running);
		return;
	}
	enforce_user_caps(d, tag);
	snprintf(kind, sizeof(kind), "%srecord", tag);
	err = gs_daemon__start_capped_recording(
		d, p->pid, false, req->secs,
		req->events[0] ? req->events : d->cfg.oom_record_events, kind, -1,
		*tag ? user_recording_cap(d) : 0, gs_daemon__request_perfetto(d, req->format), path,
		sizeof(path));
	if (err == -EBUSY)
		fprintf(out, "error: busy: %d recordings are running\n", MAX_RECORDINGS);
	else if (err)
		fprintf(out, "error: could not start the recording (see the daemon's log)\n");
	else
		fprintf(out, "%s\n", path);
}

static void on_ctl_request(void *ctx, const struct gs_ctl_peer *peer, char *line, FILE *out)
{
	struct gs_daemon *d = ctx;
	struct gs_ctl_request req;
	char msg[256], tag[32], kind[48], path[512];
	struct gs_mem_proc *p;

	if (gs_ctl_request__parse(line, &req, msg, sizeof(msg))) {
		gs_dbg("control request from pid %d uid %u: %s", (int)peer->pid, peer->uid, msg);
		fprintf(out, "error: %s\n", msg);
		return;
	}
	gs_dbg("control request from pid %d uid %u: %s", (int)peer->pid, peer->uid,
	       gs_ctl_verb_name(req.verb));
	if (req.verb == GS_CTL_STATUS) {
		ctl_status(d, peer, out);
		return;
	}
	if (req.children) {
		gs_daemon__ctl_tree(d, peer, &req, out);
		return;
	}
	p = ctl_target(d, peer, req.pid, out);
	if (!p)
		return;
	switch (req.verb) {
	case GS_CTL_LEAKS:
		if (write_proc_report(d, p, "snapshot", NULL, req.json, out, NULL))
			fprintf(out, "error: out of memory\n");
		break;
	case GS_CTL_SNAPSHOT:
		user_tag(peer, tag, sizeof(tag));
		snprintf(kind, sizeof(kind), "%ssnapshot", tag);
		if (!write_report_files(d, p, kind, NULL, path, sizeof(path)))
			fprintf(out, "%s\n", path);
		else
			fprintf(out, "error: could not write the report under %s\n",
				d->cfg.output_dir);
		enforce_user_caps(d, tag);
		break;
	case GS_CTL_RECORD:
		ctl_record(d, peer, &req, p, out);
		break;
	default:
		break;
	}
}

/*
 * Defaults, then the config file (--config, else GS_DAEMON_CONFIG_PATH when it exists), then
 * the flags; logs and returns -EINVAL on a bad one. At start and at each reload alike.
 */
static int load_config(const struct gs_daemon_opts *o, struct gs_daemon_config *c)
{
	const char *path = o->config_path ? o->config_path : GS_DAEMON_CONFIG_PATH;
	char msg[256];
	FILE *f;
	int err = 0;

	gs_daemon_config__defaults(c);
	f = fopen(path, "re");
	if (!f && (o->config_path || errno != ENOENT)) {
		err = -errno;
		gs_err("%s: %s", path, strerror(-err));
		return err;
	}
	if (!f) {
		gs_info("%s: not there: default settings (see gpusnoop.conf(5))", path);
	} else {
		err = gs_daemon_config__parse(c, f, path);
		fclose(f);
		if (err)
			return err;
	}
	for (size_t i = 0; i < o->nr_overrides; i++) {
		if (gs_daemon_config__set(c, o->overrides[i].key, o->overrides[i].value, msg,
					  sizeof(msg))) {
			gs_err("--%s: %s", o->overrides[i].key, msg);
			return -EINVAL;
		}
	}
	return 0;
}

/* --check-config FILE: the checks a start or a reload makes of it, and nothing else. */
static int check_config(const struct gs_daemon_opts *o)
{
	struct gs_daemon_opts only = *o;
	struct gs_daemon_config c;

	only.config_path = o->check_path;
	if (load_config(&only, &c))
		return 1;
	gs_info("%s: valid", o->check_path);
	return 0;
}

/* Opens what the config names: output directory, control socket, metrics endpoint. */
static int open_endpoints(struct gs_daemon *d)
{
	int err;

	err = gs_out_dir__open(&d->out_dir, d->cfg.output_dir, REPORT_PREFIX,
			       d->cfg.output_max_bytes);
	if (err)
		return err;
	err = gs_ctl_server__open(&d->ctl, d->cfg.socket_path);
	if (err)
		return err;
	if (d->cfg.metrics_host[0]) {
		err = gs_metrics_server__start(&d->metrics, d->cfg.metrics_host,
					       d->cfg.metrics_port, d->cfg.metrics_allow,
					       d->cfg.nr_metrics_allow);
		if (err)
			return err;
		gs_info("metrics on http://%s:%u/metrics", d->cfg.metrics_host,
			gs_metrics_server__port(d->metrics));
	}
	return 0;
}

static void close_endpoints(struct gs_daemon *d)
{
	gs_metrics_server__free(d->metrics);
	gs_ctl_server__free(d->ctl);
	gs_out_dir__free(d->out_dir);
	d->metrics = NULL;
	d->ctl = NULL;
	d->out_dir = NULL;
}

/* SIGHUP: a config that does not parse or open changes nothing. */
static void reload(struct gs_daemon *d)
{
	struct gs_daemon_config next, prev = d->cfg;
	char kept[128];

	if (load_config(&d->opts, &next)) {
		gs_err("reload: keeping the running configuration");
		return;
	}
	if (gs_daemon_config__keep_start_only(&next, &d->cfg, kept, sizeof(kept)))
		gs_warn("reload: %s unchanged: read at start only, restart the daemon to change",
			kept);
	close_endpoints(d);
	d->cfg = next;
	if (open_endpoints(d)) {
		gs_err("reload: new configuration cannot be applied; restoring the previous one");
		close_endpoints(d);
		d->cfg = prev;
		if (open_endpoints(d)) {
			gs_err("reload: previous configuration cannot be restored either");
			d->error = -EIO;
			return;
		}
	}
	memset(d->next_schedule_ns, 0, sizeof(d->next_schedule_ns));
	d->next_metrics_ns = 0; /* a reopened endpoint has nothing to serve until it publishes */
	gs_daemon__republish_profile(d);
	if (d->cfg.flight_recorder_s != prev.flight_recorder_s) {
		/* a new window starts empty: what the old one held is dropped */
		gs_flight_recorder__free(d->flight);
		d->flight = NULL;
		if (d->cfg.flight_recorder_s > 0)
			d->flight = gs_flight_recorder__new(
				(uint64_t)(d->cfg.flight_recorder_s * 1e9), FLIGHT_MAX_EVENTS);
		if (d->cfg.flight_recorder_s > 0 && !d->flight)
			gs_warn("reload: flight recorder: out of memory; traces are off");
	}
	gs_info("configuration reloaded");
}

_Static_assert(GS_CTL_LINE_MAX == GS_CTL_REQUEST_MAX, "one request line limit");

/*
 * Waits for events, control clients or a client's deadline, whichever comes first: a client
 * is served as far as its bytes go and never waited for, so none holds events or others.
 */
static int wait_for_work(void *ctx, int timeout_ms)
{
	struct gs_daemon *d = ctx;
	struct pollfd fds[1 + GS_CTL_POLLFDS_MAX];
	int timeout = timeout_ms, ctl_ms = gs_ctl_server__timeout_ms(d->ctl);
	size_t nfds;

	fds[0] = (struct pollfd){ .fd = gs_tracker__fd(d->tracker), .events = POLLIN };
	nfds = 1 + gs_ctl_server__pollfds(d->ctl, fds + 1);
	if (ctl_ms >= 0 && ctl_ms < timeout)
		timeout = ctl_ms;
	if (poll(fds, nfds, timeout) < 0 && errno != EINTR) {
		int err = -errno; /* before gs_err can change it */

		gs_err("waiting for events: %s", strerror(-err));
		return err;
	}
	return 0;
}

/* What was lost since the previous line, once a minute at most. */
static void log_losses(struct gs_daemon *d, uint64_t now_ns)
{
	uint64_t stats[GS_STAT__MAX];

	gs_tracker__stats(d->tracker, stats);
	gs_daemon_losses__tick(&d->losses, stats, now_ns, NULL, 0);
}

/* After each wait and drain: a requested reload, the clients, recordings, schedules, metrics. */
static int tick(void *ctx, uint64_t now_ns)
{
	struct gs_daemon *d = ctx;

	if (reload_requested) {
		reload_requested = 0;
		reload(d);
		if (d->error) /* nothing is open any more */
			return d->error;
	}
	gs_ctl_server__serve(d->ctl, on_ctl_request, d);
	gs_daemon__reap_recordings(d);
	now_ns = gs_clock_ns(CLOCK_MONOTONIC); /* after the clients were served */
	gs_daemon__run_schedules(d, now_ns);
	gs_daemon__watch_profiles(d, now_ns);
	gs_daemon__serve_profile_requests(d);
	if (now_ns >= d->next_metrics_ns) {
		log_losses(d, now_ns);
		publish_metrics(d);
		d->next_metrics_ns = now_ns + METRICS_EVERY_NS;
		/*
		 * What exited processes held (flight-recorder rings, allocation tables) is freed,
		 * but glibc keeps the pages: give them back, so the daemon's footprint follows the
		 * processes alive now, not the most the host ever ran at once.
		 */
		malloc_trim(0);
	}
	return 0;
}

static int run(struct gs_daemon *d)
{
	struct gs_run_loop loop = {
		.tracker = d->tracker,
		.poll_ms = POLL_MS,
		.error = &d->error,
		.ctx = d,
		.wait = wait_for_work,
		.tick = tick,
	};

	return gs_run_loop(&loop, NULL);
}

enum {
	OPT_CONFIG = 0x2000,
	OPT_OUTPUT_DIR,
	OPT_METRICS_ADDR,
	OPT_SOCKET,
	OPT_METRICS_ALLOW,
	OPT_CHECK_CONFIG,
	OPT_PRINT_DOC,
	OPT_PRINT_DEFAULT,
};

static const struct argp_option daemon_options[] = {
	{ "config", OPT_CONFIG, "FILE", 0,
	  "Settings file, gpusnoop.conf(5) (default /etc/gpusnoop.conf if it exists); SIGHUP "
	  "re-reads it",
	  0 },
	{ "check-config", OPT_CHECK_CONFIG, "FILE", 0,
	  "Check a settings file (and the flags) and exit: 0, or 1 with FILE:LINE: why", 0 },
	{ "print-config-doc", OPT_PRINT_DOC, NULL, 0,
	  "Print gpusnoop.conf(5), every setting with its default, range and reload behaviour", 0 },
	{ "print-default-config", OPT_PRINT_DEFAULT, NULL, 0,
	  "Print the commented default settings file (what make install puts in /etc)", 0 },
	{ "output-dir", OPT_OUTPUT_DIR, "DIR", 0, "Reports go here (default /var/lib/gpusnoop)",
	  0 },
	{ "metrics-addr", OPT_METRICS_ADDR, "HOST:PORT", 0,
	  "Prometheus endpoint (default 127.0.0.1:9464; off: none). It lists every followed "
	  "process's pid and comm to whoever can connect, unlike ctl: keep it on loopback or "
	  "limit it with --metrics-allow",
	  0 },
	{ "metrics-allow", OPT_METRICS_ALLOW, "ADDRS", 0,
	  "Answer metrics only to these clients: ADDR or ADDR/BITS, comma-separated (default "
	  "any: whoever reaches metrics-addr)",
	  0 },
	{ "socket", OPT_SOCKET, "PATH", 0, "Control socket (default /run/gpusnoop.sock)", 0 },
	{ "verbose", 'v', NULL, 0, "More diagnostics (-vv: libbpf's too)", 0 },
	{ 0 },
};

static error_t daemon_parse(int key, char *arg, struct argp_state *state)
{
	struct gs_daemon_opts *o = state->input;
	const char *name = NULL;

	switch (key) {
	case OPT_CONFIG:
		o->config_path = arg;
		return 0;
	case OPT_CHECK_CONFIG:
		o->check_path = arg;
		return 0;
	case OPT_PRINT_DOC:
	case OPT_PRINT_DEFAULT:
		o->print = key;
		return 0;
	case OPT_OUTPUT_DIR:
		name = "output-dir";
		break;
	case OPT_METRICS_ADDR:
		name = "metrics-addr";
		break;
	case OPT_SOCKET:
		name = "socket";
		break;
	case OPT_METRICS_ALLOW:
		name = "metrics-allow";
		break;
	case 'v':
		o->verbosity++;
		return 0;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		return 0;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	if (o->nr_overrides == MAX_FLAG_OVERRIDES)
		argp_error(state, "too many options");
	o->overrides[o->nr_overrides++] = (struct gs_daemon_override){ .key = name, .value = arg };
	return 0;
}

static const char daemon_doc[] =
	"Follow every CUDA process on the host: on an out-of-memory, write a report of what the "
	"process held, by stack; serve Prometheus metrics (and CPU profiles at "
	"/debug/pprof/profile); answer `gpusnoop ctl`.\v"
	"EXAMPLES:\n"
	"  gpusnoop daemon --output-dir /tmp/gs --metrics-addr 127.0.0.1:9464\n"
	"  gpusnoop daemon --config /etc/gpusnoop.conf   # kill -HUP to reload\n"
	"  gpusnoop daemon --check-config /etc/gpusnoop.conf";

static const struct argp_child daemon_children[] = {
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const struct argp daemon_argp = { daemon_options,  daemon_parse, NULL, daemon_doc,
					 daemon_children, NULL,		NULL };

static int print_config(int what)
{
	if (what == OPT_PRINT_DOC)
		gs_daemon_config__print_doc(stdout, GS_VERSION);
	else
		gs_daemon_config__print_default(stdout);
	if (fflush(stdout) || ferror(stdout)) {
		gs_err("writing stdout: %s", strerror(errno));
		return 1;
	}
	return 0;
}

int gs_cmd_daemon(int argc, char **argv)
{
	struct gs_daemon d = { 0 };
	struct gs_common_opts common = { .all = true };
	struct sigaction hup = { .sa_handler = on_sighup };
	struct gs_tracker_opts topts;
	struct gs_tracker_ops ops = {
		.ctx = &d,
		.mem_alloc = on_alloc,
		.mem_free = on_free,
		.mem_free_ret = on_free_ret,
		.proc_gone = on_proc_gone,
		.oom_kill = on_oom_kill,
		.cuda_call = on_cuda_call,
		.torch_mem = on_torch_mem,
		.torch_oom = on_torch_oom,
	};
	int status = 1;

	if (argp_parse(&daemon_argp, argc, argv, 0, NULL, &d.opts))
		return 1;
	common.verbosity = d.opts.verbosity;
	if (d.opts.print)
		return print_config(d.opts.print);
	status = gs_common_opts__finish(&common);
	if (status)
		return gs_exit_status(status);
	status = 1;
	if (d.opts.check_path)
		return check_config(&d.opts);
	if (load_config(&d.opts, &d.cfg))
		return 1;
	sigaction(SIGHUP, &hup, NULL);
	/*
	 * A file size limit (the unit's, an admin's) fails a write (EFBIG, logged) instead of
	 * killing the daemon; its recordings inherit that, and fail with their own message.
	 */
	signal(SIGXFSZ, SIG_IGN);
	topts = gs_common_opts__tracker(
		&common,
		GS_FAM_BIT(GS_FAM_MEM) |
			(d.cfg.call_metrics ? GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_SYNC)
					    : 0));
	/* launches and synchronizations only feed the metrics' counters: no stacks for them */
	topts.counted_families = GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_SYNC);
	topts.oom_kills = true;
	topts.stack_sample = d.cfg.stack_sample;
	topts.torch = d.cfg.torch;
	topts.ringbuf_bytes = (size_t)d.cfg.ringbuf_mib << 20;
	if (gs_tracker__open(&d.tracker, &topts, &ops))
		return 1;
	d.stacks = gs_stack_table__new(gs_tracker__symcache(d.tracker));
	if (!d.stacks) {
		gs_err("out of memory");
		goto out_free;
	}
	gs_mem_model__init(&d.mem, d.stacks, gs_tracker__symcache(d.tracker), d.cfg.torch);
	if (d.cfg.torch && gs_mem_model__snapshots(&d.mem, SNAPSHOT_ENTRIES)) {
		gs_err("out of memory");
		goto out_free;
	}
	if (d.cfg.flight_recorder_s > 0) {
		d.flight = gs_flight_recorder__new((uint64_t)(d.cfg.flight_recorder_s * 1e9),
						   FLIGHT_MAX_EVENTS);
		if (!d.flight) {
			gs_err("out of memory");
			goto out_free;
		}
	}
	if (open_endpoints(&d) || gs_tracker__start(d.tracker))
		goto out_free;
	publish_metrics(&d); /* a scrape from now on gets every family, not an empty page */
	d.start_ns = gs_clock_ns(CLOCK_MONOTONIC);
	gs_info("daemon: following every CUDA process; reports in %s, control socket %s",
		d.cfg.output_dir, d.cfg.socket_path);
	status = run(&d) ? 1 : 0;
	gs_info("daemon: stopping");
	gs_daemon__stop_recordings(&d);
out_free:
	close_endpoints(&d);
	gs_mem_model__release(&d.mem);
	gs_flight_recorder__free(d.flight);
	gs_stack_table__free(d.stacks);
	gs_tracker__free(d.tracker);
	free(d.procs);
	gs_pid_index__release(&d.proc_index);
	return status;
}
