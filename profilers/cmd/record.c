// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record.c: `gpusnoop record`, CUDA calls of live processes as one Chrome/Perfetto timeline. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "profilers/cpu_sampler.h"
#include "profilers/cuda/kernel_names.h"
#include "profilers/mem_model.h"
#include "profilers/snapshot_file.h"
#include "profilers/options.h"
#include "profilers/run_loop.h"
#include "profilers/cmd/record_inject.h"
#include "profilers/cmd/record_options.h"
#include "profilers/cmd/subcommands.h"
#include "profilers/timeline/engine.h"
#include "profilers/timeline/gpu_rows.h"
#include "profilers/timeline/names.h"
#include "profilers/timeline/nvtx_rows.h"
#include "profilers/timeline/rank_files.h"
#include "profilers/timeline/record_summary.h"
#include "profilers/timeline/trace_stats.h"
#include "profilers/tracker.h"
#include "stitch/trace_writer.h"
#include "user/addr_map.h"
#include "user/clock.h"
#include "user/kallsyms.h"
#include "user/log.h"
#include "user/losses.h"
#include "user/out_file.h"
#include "user/perfetto_json.h"
#include "user/stack_table.h"
#include "user/status_line.h"

#define POLL_MS		100
#define STATUS_EVERY_NS 1000000000ULL
/*
 * Records reach userspace from several CPUs through the ring buffer, and a call's slice only
 * when it returns: events are held this long and written in timestamp order. A slice that
 * starts more than this before its predecessor in the file is written anyway, and counted.
 */
#define REORDER_WINDOW_NS 500000000ULL

/* --max-bytes: what the trace's end needs at most (held events are not written then) */
#define CAP_MIN_MARGIN (256 * 1024ULL)

struct record {
	struct record_opts opts;
	int argc;
	char **argv;
	struct gs_timeline tl; /* the rows: profilers/timeline/engine.h */
	struct gs_cpu_sampler *sampler;
	unsigned int hz;
	struct gs_out *out;
	struct gs_perfetto_json *perfetto; /* --format perfetto: the rows' second encoder */
	uint64_t start_mono_ns, start_real_ns;
	bool capped; /* stopped at --max-bytes: what was held and came later is not written */
};

static pid_t snapshot_target(struct record *r);

static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	gs_timeline__proc_gone(ctx, pid, exec);
}

/* --memory-snapshot: an exited process's last memory state, before the model forgets it */
static void snapshot_at_exit(void *ctx, pid_t pid, bool exec)
{
	struct record *r = ctx;

	if (r->opts.snapshot && !exec && gs_mem_model__torch_proc(&r->tl.mem, pid))
		gs_snapshot_files_write(&r->tl.mem, r->opts.snapshot, snapshot_target(r), pid, 0,
					"exit", gs_clock_ns(CLOCK_MONOTONIC));
}

/* One file's end (output: gs_timeline__writer()'s): Kineto's top-level keys and the metadata. */
static void write_file_metadata(struct record *r, size_t output)
{
	struct gs_json *j;
	uint64_t stats[GS_STAT__MAX];
	char stamp[64];
	struct utsname u;
	struct tm tm;
	time_t secs = (time_t)(r->start_real_ns / 1000000000ULL);
	struct gs_trace_writer *w = gs_timeline__writer(&r->tl, output);

	gs_trace_writer__flush(w);
	gs_timeline__write_names(&r->tl, output);
	gs_timeline__top_level(&r->tl, output);
	j = gs_trace_writer__metadata(w);
	gs_tracker__stats(r->tl.tracker, stats);
	uname(&u);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&secs, &tm));
	gs_json__string(j, "tool", "gpusnoop");
	gs_json__string(j, "version", GS_VERSION);
	gs_json__string(j, "host", u.nodename);
	gs_json__string(j, "kernel_release", u.release);
	gs_json__string(j, "start_time", stamp);
	gs_json__u64(j, "start_realtime_ns", r->start_real_ns);
	gs_json__u64(j, "start_monotonic_ns", r->start_mono_ns);
	/* trace timestamps are CLOCK_MONOTONIC; add this to get CLOCK_REALTIME */
	gs_json__i64(j, "monotonic_to_realtime_ns", (int64_t)(r->start_real_ns - r->start_mono_ns));
	gs_json__begin_array(j, "command_line");
	gs_json__string(j, NULL, "gpusnoop");
	/* argv as given: main named the subcommand's argv[0] "gpusnoop record" for argp */
	for (int i = 0; i < r->argc; i++)
		gs_json__string(j, NULL,
				i || strncmp(r->argv[0], "gpusnoop ", 9) ? r->argv[i]
									 : r->argv[0] + 9);
	gs_json__end_array(j);
	gs_json__u64(j, "events", r->tl.events);
	/* --stacks none: the events carry no stacks by request, not by loss */
	gs_json__string(j, "stacks", r->opts.common.stacks == GS_STACKS_NONE ? "none" : "user");
	/* --stack-sample N: one event in N per call site has its stack, the rest the site alone */
	if (r->opts.common.stacks != GS_STACKS_NONE && r->opts.common.stack_sample > 1)
		gs_json__u64(j, "stack_sample", r->opts.common.stack_sample);
	gs_losses_write_json(j, stats);
	/* events written out of timestamp order: later than the reorder window allowed */
	gs_json__begin_object(j, "reorder");
	gs_json__u64(j, "window_ns", REORDER_WINDOW_NS);
	gs_json__u64(j, "late_events", gs_trace_writer__late(w));
	/* the window's memory cap: events written before their window passed, and its peak */
	gs_json__u64(j, "early_events", gs_trace_writer__early(w));
	gs_json__u64(j, "max_held_bytes", GS_TRACE_WRITER_MAX_HELD_BYTES);
	gs_json__u64(j, "peak_held_bytes", gs_trace_writer__peak_bytes(w));
	gs_json__end_object(j);
	if (r->tl.gpu)
		gs_gpu_rows__metadata(r->tl.gpu, j);
	if (r->tl.nvtx)
		gs_nvtx_rows__metadata(r->tl.nvtx, j);
	/* names and handles past a process's cap: their launches read "unknown 0x..." */
	gs_json__u64(j, "kernel_names_not_kept", gs_kernel_names__refused(r->tl.names));
	if (r->capped) {
		gs_json__begin_object(j, "size_cap");
		gs_json__u64(j, "max_bytes", r->opts.max_bytes);
		gs_json__u64(j, "events_not_written", gs_trace_writer__not_written(w));
		gs_json__end_object(j);
	}
	if (r->sampler) {
		gs_json__begin_object(j, "cpu_sampling");
		gs_json__string(j, "event", gs_cpu_sampler__event(r->sampler));
		gs_json__u64(j, "frequency_hz", r->hz);
		gs_json__u64(j, "cpus", gs_cpu_sampler__nr_cpus(r->sampler));
		gs_json__u64(j, "samples", r->tl.cpu_samples);
		gs_json__end_object(j);
	}
	gs_trace_writer__finish(w);
}

static void write_metadata(struct record *r)
{
	gs_timeline__count_names(&r->tl);
	write_file_metadata(r, 0);
	for (size_t i = 0; r->tl.ranks && i < r->tl.ranks->nr; i++)
		write_file_metadata(r, i + 1);
}

/* --format perfetto: the encoder ends the trace into the output. Returns 0 or -errno (logged). */
static int end_perfetto(struct record *r)
{
	int err = gs_perfetto_json__close(r->perfetto);

	if (err && err != -EINVAL) /* -EINVAL: logged */
		gs_err("perfetto trace: %s", strerror(-err));
	r->perfetto = NULL;
	return err;
}

/* A live status line, only for a person watching a terminal. */
static void show_status(struct record *r, uint64_t now, uint64_t *last_ns, uint64_t *last_events)
{
	double secs = (double)(now - *last_ns) / 1e9;

	if (now - *last_ns < STATUS_EVERY_NS)
		return;
	gs_status_line__show("recording: %.0f events/s, %" PRIu64 " dropped",
			     (double)(r->tl.events - *last_events) / secs,
			     gs_tracker__dropped(r->tl.tracker));
	*last_ns = now;
	*last_events = r->tl.events;
}

/* What the loop carries between ticks: the status line's last figures. */
struct loop_state {
	struct record *r;
	uint64_t last_status, last_events;
};

/*
 * --max-bytes: once the file comes within a margin of its cap (an eighth, at least what the
 * end needs), the held events are dropped and the recording stops as on SIGTERM: the file
 * ends valid, within the cap. The daemon's RLIMIT_FSIZE stops any write past it.
 */
static void check_size(struct record *r)
{
	uint64_t max = r->opts.max_bytes, margin = max / 8;
	struct stat st;

	if (!max || r->capped || fstat(r->opts.output_fd, &st))
		return;
	if (margin < CAP_MIN_MARGIN)
		margin = CAP_MIN_MARGIN;
	if ((uint64_t)st.st_size + margin < max)
		return;
	r->capped = true;
	gs_trace_writer__close_window(r->tl.writer);
	gs_info("recording stopped: its trace reached %" PRIu64 " bytes of its cap of %" PRIu64,
		(uint64_t)st.st_size, max);
	gs_stop_requested = SIGTERM;
}

/* the writer's question, between events: whether check_size() stopped the recording */
static bool size_capped(void *ctx)
{
	struct record *r = ctx;

	check_size(r);
	return r->capped;
}

static int tick(void *ctx, uint64_t now_ns)
{
	struct loop_state *st = ctx;

	if (st->r->tl.gpu)
		gs_gpu_rows__advance(st->r->tl.gpu, now_ns);
	gs_timeline__advance(&st->r->tl, now_ns);
	check_size(st->r);
	show_status(st->r, now_ns, &st->last_status, &st->last_events);
	return 0;
}

static int run_loop(struct record *r)
{
	struct loop_state st = { .r = r, .last_status = r->start_mono_ns };
	struct gs_run_loop loop = {
		.tracker = r->tl.tracker,
		.start_ns = r->start_mono_ns,
		.duration_s = r->opts.common.duration_s,
		.poll_ms = POLL_MS,
		.error = &r->tl.error,
		.ctx = &st,
		.tick = tick,
	};
	int err = gs_run_loop(&loop, NULL);

	gs_status_line__clear();
	gs_nvtx_rows__finish(r->tl.nvtx, gs_clock_ns(CLOCK_MONOTONIC));
	if (r->tl.gpu)
		gs_gpu_rows__advance(r->tl.gpu, UINT64_MAX);
	gs_timeline__flush(&r->tl);
	return err ?: r->tl.error;
}

/* The output file and its parts, and the CPU sampler with -e cpu. 0 or -errno (logged). */
static int open_parts(struct record *r)
{
	struct gs_cpu_sampler_opts sopts;
	int err;

	if (r->opts.output_fd >= 0)
		err = gs_out__open_fd(&r->out, r->opts.output_fd, "the output descriptor",
				      r->opts.output_fd_gz ? GS_OUT_GZIP : GS_OUT_PLAIN);
	else if (gs_rank_files_wanted(r->opts.common.output))
		err = gs_rank_files__open(&r->tl.ranks, r->opts.common.output, REORDER_WINDOW_NS)
			      ?: gs_out__open(&r->out, "/dev/null", GS_OUT_PLAIN); /* the sink */
	else
		err = gs_out__open(&r->out, r->opts.common.output, 0);
	if (err)
		return err;
	r->tl.stacks = gs_stack_table__new(gs_tracker__symcache(r->tl.tracker));
	r->tl.names = gs_kernel_names__new(gs_tracker__symcache(r->tl.tracker));
	r->tl.named = gs_timeline_names__new();
	r->tl.outputs = gs_addr_map__new();
	r->tl.stats = gs_trace_stats__new();
	/* the document begins here; a failure before the end removes its temporary file */
	if (r->opts.perfetto) { /* the same rows, encoded as Perfetto's trace packets */
		r->perfetto = gs_perfetto_json__new(gs_out__file(r->out));
		if (!r->perfetto)
			return -ENOMEM;
	}
	r->tl.writer = gs_trace_writer__new(r->perfetto ? gs_perfetto_json__file(r->perfetto)
							: gs_out__file(r->out),
					    REORDER_WINDOW_NS);
	if (r->tl.writer && r->perfetto)
		gs_trace_writer__row_sink(r->tl.writer, gs_perfetto_json__row, r->perfetto);
	if (r->tl.writer && r->opts.max_bytes)
		gs_trace_writer__watch_size(r->tl.writer, size_capped, r);
	if (r->opts.gpu) {
		struct gs_gpu_rows_emit emit = gs_timeline__gpu_emit(&r->tl);

		r->tl.gpu = gs_gpu_rows__new(&emit);
		if (r->tl.gpu && r->opts.common.argv)
			gs_gpu_rows__default_rank(r->tl.gpu);
	}
	if (r->opts.nvtx) {
		struct gs_nvtx_rows_emit emit = gs_timeline__nvtx_emit(&r->tl);

		r->tl.nvtx = gs_nvtx_rows__new(&emit);
	}
	if (!r->tl.stacks || !r->tl.names || !r->tl.named || !r->tl.outputs || !r->tl.stats ||
	    !r->tl.writer || (r->opts.gpu && !r->tl.gpu) || (r->opts.nvtx && !r->tl.nvtx)) {
		gs_err("out of memory");
		return -ENOMEM;
	}
	if (r->opts.cpu) {
		sopts = (struct gs_cpu_sampler_opts){
			.freq_hz = r->hz,
			.records = true,
			.all = r->opts.common.all,
		};
		err = gs_cpu_sampler__open(&r->sampler, r->tl.tracker, &sopts);
		if (err)
			return err;
		r->tl.kallsyms = gs_kallsyms__read("/proc/kallsyms");
		if (!r->tl.kallsyms)
			gs_warn("/proc/kallsyms: %s: kernel frames stay unnamed", strerror(errno));
	}
	return 0;
}

/* Resolves the targets and attaches; --inject then loads the injection library into them. */
static int start_targets(struct record *r)
{
	int err = gs_tracker__start(r->tl.tracker);

	if (!err && r->opts.gpu && !r->opts.inject)
		gs_record_gpu_check_env(r->opts.common.pids, r->opts.common.nr_pids);
	if (err || !r->opts.inject)
		return err;
	err = gs_record_gpu_inject(r->opts.common.pids, r->opts.common.nr_pids);
	gs_tracker__poll(r->tl.tracker, 0); /* the loader's event: the library's probes go in */
	return err;
}

/* Whether a CUDA family had a target to trace; logs the failure when not. */
static bool saw_cuda(const struct record *r)
{
	if (r->opts.families && !gs_tracker__saw_cuda(r->tl.tracker) && !r->opts.common.all) {
		gs_err("no target loaded a CUDA library (libcudart, libcuda or a static cudart)");
		return false;
	}
	return true;
}

/* Once the file is final: the summary (what `gpusnoop stats` prints of the file, too). */
static int print_summary(const struct record *r)
{
	uint64_t dropped = gs_tracker__dropped(r->tl.tracker);

	fprintf(stderr, "gpusnoop record: %" PRIu64 " events in %.1f s, %" PRIu64 " dropped\n",
		r->tl.events, (double)(gs_clock_ns(CLOCK_MONOTONIC) - r->start_mono_ns) / 1e9,
		dropped);
	gs_trace_stats__print_summary(r->tl.stats, stderr);
	if (dropped)
		fprintf(stderr,
			"  WARNING: %" PRIu64 " events were lost: the trace is incomplete\n",
			dropped);
	/* record's own lines: what the trace holds no rows of */
	gs_record_summary__print_torch(gs_trace_stats__record_summary(r->tl.stats), stderr);
	gs_gpu_rows__summary(r->tl.gpu, stderr);
	gs_nvtx_rows__summary(r->tl.nvtx, stderr, r->opts.nvtx_named);
	return 0;
}

/* --memory-snapshot: whose file is FILE itself (-p PID, -- CMD) */
static pid_t snapshot_target(struct record *r)
{
	return r->opts.common.nr_pids == 1 ? r->opts.common.pids[0]
					   : gs_tracker__child(r->tl.tracker);
}

/*
 * --memory-snapshot: the processes still running, their state at the end (the exited ones
 * wrote theirs). -1: FILE was the target's, written at its exit (or it showed no PyTorch).
 */
static int end_snapshots(struct record *r)
{
	pid_t target = snapshot_target(r);
	pid_t primary = gs_mem_model__torch_proc(&r->tl.mem, target) ? target : -1;

	if (!r->opts.snapshot)
		return 0;
	gs_stack_table__resymbolize(r->tl.stacks);
	return gs_snapshot_files_write(&r->tl.mem, r->opts.snapshot, primary, 0, 0, "end",
				       gs_clock_ns(CLOCK_MONOTONIC));
}

int gs_cmd_record(int argc, char **argv)
{
	struct record r = { .opts = { .output_fd = -1 }, .argc = argc, .argv = argv };
	struct gs_tracker_ops ops = { .proc_gone = on_proc_gone };
	struct gs_tracker_opts topts;
	int err, status = 1;

	if (gs_record_opts__parse(&r.opts, argc, argv))
		return 1;
	err = gs_common_opts__finish(&r.opts.common) ?: gs_record_opts__check(&r.opts, &r.hz);
	if (err)
		return gs_exit_status(err);
	/* past the daemon's RLIMIT_FSIZE a write fails (EFBIG, the recording too), not the
	 * process: its log lines may go to a file already longer than the cap */
	if (r.opts.max_bytes)
		signal(SIGXFSZ, SIG_IGN);
	gs_timeline__tracker_ops(&r.tl, &ops);
	r.tl.families = r.opts.families;
	r.tl.before_forget = snapshot_at_exit;
	r.tl.hook_ctx = &r;
	/* PyTorch's reserved memory is the caching allocator's cudaMalloc/cudaFree */
	topts = gs_common_opts__tracker(
		&r.opts.common,
		r.opts.families |
			(r.opts.families & GS_FAM_BIT(GS_FAM_TORCH) ? GS_FAM_BIT(GS_FAM_MEM) : 0));
	topts.torch = r.opts.families & GS_FAM_BIT(GS_FAM_TORCH);
	topts.free_returns = true;	       /* every free is a slice with its duration */
	topts.gpu = r.opts.gpu || r.opts.nvtx; /* both come through the injection library */
	/* a rank's file is chosen by its environment, read at its exec: held there, always */
	topts.stop_every_exec = gs_rank_files_wanted(r.opts.common.output);
	topts.command_stdout_to_stderr = r.opts.output_fd < 0 && /* --output-fd: not stdout */
					 gs_writes_stdout(r.opts.common.output);
	if (gs_tracker__open(&r.tl.tracker, &topts, &ops))
		goto out_free;
	/* after the targets were checked: a bad -p leaves an existing file as it was */
	if (open_parts(&r))
		goto out_free;
	gs_mem_model__init(&r.tl.mem, r.tl.stacks, gs_tracker__symcache(r.tl.tracker),
			   r.opts.families & GS_FAM_BIT(GS_FAM_TORCH));
	if (r.opts.snapshot && gs_mem_model__snapshots(&r.tl.mem, 0))
		goto out_free; /* ENOMEM */
	r.start_mono_ns = gs_clock_ns(CLOCK_MONOTONIC);
	r.start_real_ns = gs_clock_ns(CLOCK_REALTIME);
	if (r.tl.gpu)
		gs_gpu_rows__set_clock(r.tl.gpu, (int64_t)(r.start_real_ns - r.start_mono_ns));
	/* from here on the file is always finished, whatever stops the recording */
	err = start_targets(&r);
	if (!err) {
		gs_info("recording%s; Ctrl-C to stop", r.opts.common.all ? " every process" : "");
		err = run_loop(&r);
	}
	write_metadata(&r);
	err = end_perfetto(&r) ?: err;
	/* a failed start or recording, or no CUDA user, leaves no file: out_free removes it */
	if (err || !saw_cuda(&r))
		goto out_free;
	/* finished means finished: the file is complete and in place before probes go */
	err = r.tl.ranks ? gs_rank_files__close(r.tl.ranks) : 0;
	err = gs_out__close(r.out) ?: err ?: end_snapshots(&r);
	r.out = NULL;
	if (err)
		goto out_free;
	status = print_summary(&r);
out_free:
	end_perfetto(&r);
	gs_cpu_sampler__free(r.sampler);
	gs_kallsyms__free(r.tl.kallsyms);
	gs_trace_writer__free(r.tl.writer);
	gs_rank_files__free(r.tl.ranks);
	gs_timeline__release(&r.tl);
	gs_mem_model__release(&r.tl.mem);
	gs_trace_stats__free(r.tl.stats);
	gs_gpu_rows__free(r.tl.gpu);
	gs_nvtx_rows__free(r.tl.nvtx);
	gs_timeline_names__free(r.tl.named);
	gs_addr_map__free(r.tl.outputs);
	gs_kernel_names__free(r.tl.names);
	gs_stack_table__free(r.tl.stacks);
	gs_tracker__free(r.tl.tracker);
	gs_out__abort(r.out); /* only on a failure before the trace began */
	return status;
}
