// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* profile.c: `gpusnoop profile`, sampled CPU stacks counted in the kernel, folded or pprof. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "profilers/cpu_sampler.h"
#include "profilers/options.h"
#include "profilers/run_loop.h"
#include "profilers/cmd/subcommands.h"
#include "profilers/tracker.h"
#include "user/clock.h"
#include "user/kallsyms.h"
#include "user/log.h"
#include "user/out_file.h"
#include "user/profile.h"
#include "user/profile_mappings.h"
#include "user/python.h"
#include "user/stack_marks.h"
#include "user/stack_table.h"
#include "user/status_line.h"

#define POLL_MS		 100
#define DRAIN_EVERY_NS	 1000000000ULL
#define KERNEL_IMAGE	 "[kernel.kallsyms]"
#define MAX_MODULE_LABEL 80

enum profile_format { FORMAT_FOLDED, FORMAT_PPROF };
enum { OPT_CGROUP = 0x2000, OPT_FORMAT, OPT_TID, OPT_PER_THREAD, OPT_OUTPUT_FD };

struct profile_opts {
	struct gs_common_opts common;
	const char *freq; /* validated after parsing: a bad value is one line, not argp's two */
	const char *cgroup;
	enum profile_format format;
	bool user_only;	  /* -U */
	bool kernel_only; /* -K */
	pid_t tid;	  /* --tid; 0: every thread */
	bool per_thread;  /* --per-thread */
	int output_fd;	  /* --output-fd: the daemon's temporary, written in place; -1: none */
};

struct profile {
	struct profile_opts opts;
	unsigned int hz;
	struct gs_tracker *tracker;
	struct gs_cpu_sampler *sampler;
	struct gs_stack_table *stacks;
	struct gs_kallsyms *kallsyms;
	struct gs_profile *profile;
	struct gs_profile_mappings *mappings; /* pprof's Mappings of the user frames */
	uint64_t lost_stacks;		      /* user stacks the stack map had no room for */
	uint64_t last_drain_ns;		      /* when the counts last left the kernel */
	uint64_t start_ns, last_status_ns;    /* the status line's clock */
	struct gs_out *out; /* opened before the work, so a bad -o fails at once */
	int error;
};

/* Fills frames[] with the kernel stack's frames; module labels go to labels[]. */
static size_t kernel_frames(struct profile *p, const __u64 *addrs, uint32_t nr,
			    struct gs_profile_frame *frames, char (*labels)[MAX_MODULE_LABEL])
{
	for (uint32_t i = 0; i < nr; i++) {
		/* the first is the interrupted instruction, the others return addresses */
		uint64_t addr = addrs[i] - (i ? 1 : 0), off;
		const char *module = NULL;
		const char *name =
			p->kallsyms ? gs_kallsyms__lookup(p->kallsyms, addr, &off, &module) : NULL;

		if (module)
			snprintf(labels[i], MAX_MODULE_LABEL, "[%s]", module);
		frames[i] = (struct gs_profile_frame){
			.name = name,
			.module = module ? labels[i] : KERNEL_IMAGE,
			.address = addrs[i],
			.kernel = true,
		};
	}
	return nr;
}

/* pprof's Mapping of a user frame in *m: m, or NULL when no file is mapped there. */
static const struct gs_profile_mapping *user_mapping(struct profile *p, pid_t pid, uint64_t addr,
						     struct gs_profile_mapping *m)
{
	return gs_profile_mappings__lookup(p->mappings, pid, addr, m) ? m : NULL;
}

/* A Python frame is its function in its source file, at a line (user/python.h) */
static struct gs_profile_frame user_frame(struct profile *p, pid_t pid, const struct gs_frame *f,
					  struct gs_profile_mapping *m)
{
	if (f->kind == GS_FRAME_PYTHON)
		return (struct gs_profile_frame){ .name = f->symbol,
						  .module = f->file,
						  .address = f->address,
						  .line = f->line > 0 ? f->line : 0,
						  .python = true };
	return (struct gs_profile_frame){ .name = f->symbol,
					  .module = f->module,
					  .address = f->address,
					  .mapping = user_mapping(p, pid, f->address, m) };
}

/* The stack map had no room for a stack of this count (bpf/cpu.bpf.c's stack_id()). */
static bool stack_lost(__s32 id)
{
	return id == -EEXIST || id == -ENOMEM;
}

/*
 * The thread's label: its name, or in folded stacks with --per-thread "name-pid/tid" (as
 * stackcollapse-perf.pl --tid writes it); pprof has the thread id as a label of its own.
 */
static void thread_label(const struct profile *p, const struct gs_cpu_key *key, char *buf,
			 size_t len)
{
	char comm[sizeof(key->comm) + 1];

	memcpy(comm, key->comm, sizeof(key->comm));
	comm[sizeof(key->comm)] = '\0';
	if (p->opts.per_thread && p->opts.format == FORMAT_FOLDED)
		snprintf(buf, len, "%s-%u/%u", comm, key->pid, key->tid);
	else
		snprintf(buf, len, "%s", comm);
}

/*
 * Counts one stack. native: user is a stack map's (in-kernel counts), so one of
 * GS_MAX_STACK frames was cut there, most likely: a [truncated] frame says so (records
 * come marked by the tracker).
 */
static void add_count(struct profile *p, const struct gs_cpu_key *key, const __u64 *user,
		      uint32_t nr_user, const __u64 *kernel, uint32_t nr_kernel, uint64_t count,
		      bool native)
{
	/* a user stack with Python frames merged in is longer than a native one; the mark */
	struct gs_profile_frame frames[GS_MAX_STACK + GS_PY_MERGED_MAX + 1];
	struct gs_profile_mapping maps[GS_PY_MERGED_MAX];
	char labels[GS_MAX_STACK][MAX_MODULE_LABEL];
	char comm[sizeof(key->comm) + 32];
	size_t n;
	int err;

	thread_label(p, key, comm, sizeof(comm));
	n = kernel_frames(p, kernel, nr_kernel, frames, labels);
	if (stack_lost(key->user_stack_id) || stack_lost(key->kernel_stack_id)) {
		/* its own stack, counted apart: merged into the others it would skew them */
		frames[0] = (struct gs_profile_frame){ .name = GS_STACK_MARK_LOST };
		n = 1;
	} else if (nr_user) {
		int64_t id = gs_stack_table__intern(p->stacks, (pid_t)key->pid,
						    (const uint64_t *)user, nr_user);
		const struct gs_stack *s;

		if (id < 0) {
			p->error = (int)id;
			return;
		}
		s = gs_stack_table__get(p->stacks, (uint32_t)id);
		for (uint32_t i = 0; i < s->nr_frames && i < GS_PY_MERGED_MAX; i++)
			frames[n++] = user_frame(p, (pid_t)key->pid, &s->frames[i], &maps[i]);
		if (native && nr_user >= GS_MAX_STACK)
			frames[n++] = (struct gs_profile_frame){
				.name = gs_stack_mark_name(gs_stack_mark_truncated(0))
			};
	}
	err = gs_profile__add_thread(p->profile, (pid_t)key->pid, (pid_t)key->tid, comm, frames, n,
				     count);
	if (err && !p->error) {
		gs_err("profile: %s", strerror(-err));
		p->error = err;
	}
}

static void on_count(void *ctx, const struct gs_cpu_key *key, const __u64 *user, uint32_t nr_user,
		     const __u64 *kernel, uint32_t nr_kernel, uint64_t count)
{
	struct profile *p = ctx;

	/* --comm: counted in the kernel for every process, kept here for the matching ones */
	if (p->opts.common.filter && !gs_proc_filter__match(p->opts.common.filter, key->pid))
		return;
	add_count(ctx, key, user, nr_user, kernel, nr_kernel, count, true);
}

static void drain(struct profile *p)
{
	int err = gs_cpu_sampler__drain(p->sampler, on_count, p);

	if (err && !p->error) {
		gs_err("reading samples: %s", strerror(-err));
		p->error = err;
	}
}

/*
 * A sample of a thread running Python comes as a record (bpf/cpu.bpf.c), its Python frames
 * merged into its stack by the tracker; it counts like an aggregated one.
 */
static void on_sample(void *ctx, const struct gs_cpu_sample *e)
{
	struct profile *p = ctx;
	struct gs_cpu_key key = { .pid = e->hdr.pid,
				  .user_stack_id = -1,
				  .kernel_stack_id = -1,
				  .tid = p->opts.per_thread ? e->hdr.tid : 0 };

	memcpy(key.comm, e->comm, sizeof(key.comm));
	/* the tracker marked a cut stack already */
	add_count(p, &key, e->frames, e->nr_frames, e->kernel, e->nr_kernel, 1, false);
}

/* Stacks are symbolized while the process can still be read: before it is forgotten. */
static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	drain(ctx);
}

/* Counts are moved out of the kernel's map once a second: it stays small. */
/* A live status line, only for a person watching a terminal (never into a pipe). */
static void show_status(struct profile *p, uint64_t now_ns)
{
	uint64_t stats[GS_STAT__MAX];

	if (now_ns - p->last_status_ns < DRAIN_EVERY_NS)
		return;
	p->last_status_ns = now_ns;
	gs_tracker__stats(p->tracker, stats);
	gs_status_line__show("profiling: %.0f s, %" PRIu64 " samples in %zu stacks, %" PRIu64
			     " lost",
			     (double)(now_ns - p->start_ns) / 1e9, gs_profile__total(p->profile),
			     gs_profile__nr_stacks(p->profile),
			     stats[GS_STAT_CPU_STACK_LOST] + stats[GS_STAT_CPU_COUNTS_FULL]);
}

static int tick(void *ctx, uint64_t now_ns)
{
	struct profile *p = ctx;

	if (now_ns - p->last_drain_ns >= DRAIN_EVERY_NS) {
		drain(p);
		p->last_drain_ns = now_ns;
	}
	show_status(p, now_ns);
	return 0;
}

static int run_loop(struct profile *p)
{
	struct gs_run_loop loop = {
		.tracker = p->tracker,
		.duration_s = p->opts.common.duration_s,
		.poll_ms = POLL_MS,
		.error = &p->error,
		.ctx = p,
		.tick = tick,
	};
	int err;

	p->last_drain_ns = gs_clock_ns(CLOCK_MONOTONIC);
	p->start_ns = p->last_status_ns = p->last_drain_ns;
	err = gs_run_loop(&loop, NULL);
	gs_status_line__clear();
	drain(p);
	return err ?: p->error;
}

static const struct argp_option profile_options[] = {
	{ "freq", 'F', "HZ", 0, "Samples per second on each CPU (default 99)", 0 },
	{ "cgroup", OPT_CGROUP, "PATH", 0,
	  "Only tasks in this cgroup v2 directory or below it (alone: implies -a)", 0 },
	{ "format", OPT_FORMAT, "FMT", 0, "folded (default) or pprof (gzip-compressed protobuf)",
	  0 },
	{ "user-stacks-only", 'U', NULL, 0, "User stacks only (no kernel frames)", 0 },
	{ "kernel-stacks-only", 'K', NULL, 0, "Kernel stacks only (no user frames)", 0 },
	{ "tid", OPT_TID, "TID", 0, "Only this thread (its process is the target)", 0 },
	{ "per-thread", OPT_PER_THREAD, NULL, 0,
	  "A stack per thread: folded stacks start with name-pid/tid, pprof labels thread_id", 0 },
	{ "output-fd", OPT_OUTPUT_FD, "FD", OPTION_HIDDEN, "Write to this open descriptor", 0 },
	{ 0 },
};

static pid_t parse_tid(struct argp_state *state, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || v > INT32_MAX)
		argp_error(state, "bad thread id '%s'", arg);
	return (pid_t)v;
}

static int parse_output_fd(struct argp_state *state, const char *arg)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > INT32_MAX)
		argp_error(state, "invalid --output-fd '%s'", arg);
	return (int)v;
}

static error_t profile_parse(int key, char *arg, struct argp_state *state)
{
	struct profile_opts *o = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		state->child_inputs[1] = &o->common;
		state->child_inputs[2] = &o->common;
		o->common.other_target = "--cgroup PATH";
		break;
	case 'U':
		o->user_only = true;
		break;
	case 'K':
		o->kernel_only = true;
		break;
	case OPT_TID:
		o->tid = parse_tid(state, arg);
		break;
	case OPT_PER_THREAD:
		o->per_thread = true;
		break;
	case OPT_OUTPUT_FD: /* the daemon's scheduled profiles (profilers/daemon/) */
		o->output_fd = parse_output_fd(state, arg);
		break;
	case ARGP_KEY_END:
		if (o->user_only && o->kernel_only)
			argp_error(state, "-U and -K exclude each other");
		break;
	case 'F':
		o->freq = arg;
		break;
	case OPT_CGROUP:
		o->cgroup = arg;
		break;
	case OPT_FORMAT:
		if (!strcmp(arg, "pprof"))
			o->format = FORMAT_PPROF;
		else if (!strcmp(arg, "folded"))
			o->format = FORMAT_FOLDED;
		else
			argp_error(state, "unknown format '%s' (folded or pprof)", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child profile_children[] = {
	{ &gs_common_argp, 0, "Targets and output:", 0 },
	{ &gs_stacks_argp, 0, NULL, 0 },
	{ &gs_comm_argp, 0, NULL, 0 },
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const char profile_doc[] =
	"Sample the CPU stacks (user and kernel) of processes, counted in the kernel, and write "
	"them as folded stacks (flamegraph.pl, speedscope) or gzip pprof (go tool pprof, "
	"Pyroscope, Parca). The targets need not use CUDA.\v"
	"Output goes to -o FILE, else stdout (folded output is gzip-compressed when FILE ends "
	"in .gz; pprof always is). It is complete when -d expires, on Ctrl-C or SIGTERM, or "
	"when the last target exits.\n\n"
	"EXAMPLES:\n"
	"  gpusnoop profile -p 1234 -d 10 > out.folded   # flamegraph.pl out.folded\n"
	"  gpusnoop profile -F 499 --format pprof -o cpu.pb.gz -- ./train\n"
	"  gpusnoop profile --cgroup /sys/fs/cgroup/system.slice/job.service -d 30";

static const struct argp profile_argp = {
	profile_options,
	profile_parse,
	"[-p PID ... | -a | -- CMD ARGS]",
	profile_doc,
	profile_children,
	NULL,
	NULL,
};

/* --tid: the thread's process is a target, unless -a or a command says otherwise */
static int add_tid_process(struct profile_opts *o)
{
	char path[64], line[128];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)o->tid);
	f = fopen(path, "re");
	if (!f) {
		gs_err("--tid %d: %s", (int)o->tid, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) && !tgid)
		if (!strncmp(line, "Tgid:", 5))
			tgid = (pid_t)atoi(line + 5);
	fclose(f);
	if (tgid <= 0) {
		gs_err("--tid %d: no process", (int)o->tid);
		return -1;
	}
	if (o->common.all || o->common.argv)
		return 0;
	for (size_t i = 0; i < o->common.nr_pids; i++)
		if (o->common.pids[i] == tgid)
			return 0;
	if (o->common.nr_pids == GS_MAX_PIDS) {
		gs_err("--tid %d: too many processes", (int)o->tid);
		return -1;
	}
	o->common.pids[o->common.nr_pids++] = tgid;
	return 0;
}

static int write_output(struct profile *p, uint64_t start_real_ns, uint64_t duration_ns)
{
	struct gs_pprof_info info = {
		.period_ns = 1000000000ULL / p->hz,
		.time_ns = start_real_ns,
		.duration_ns = duration_ns,
	};
	struct gs_out *out = p->out;
	int err;

	p->out = NULL;
	if (p->opts.format == FORMAT_PPROF)
		err = gs_profile__write_pprof(p->profile, &info, gs_out__file(out));
	else
		err = gs_profile__write_folded(p->profile, gs_out__file(out));
	if (err)
		return gs_out__fail(out, err);
	return gs_out__close(out); /* complete and in place, or the old file left as it was */
}

/*
 * After the targets were checked (a bad -p leaves an existing file as it was), before the
 * work: a bad -o fails now, not after the run. pprof is gzip whatever the name (its writer
 * compresses); folded only for a .gz name. Returns 0 or -errno (logged).
 */
static int open_output(struct profile *p)
{
	int flags = p->opts.format == FORMAT_PPROF ? GS_OUT_PLAIN : 0;

	if (p->opts.output_fd >= 0) /* the daemon's scheduled profiles */
		return gs_out__open_fd(&p->out, p->opts.output_fd, "the output descriptor", flags);
	return gs_out__open(&p->out, p->opts.common.output, flags);
}

int gs_cmd_profile(int argc, char **argv)
{
	struct profile p = { .opts = { .output_fd = -1 }, .hz = GS_CPU_DEFAULT_HZ };
	struct gs_tracker_ops ops = { .ctx = &p,
				      .proc_gone = on_proc_gone,
				      .cpu_sample = on_sample };
	struct gs_tracker_opts topts;
	struct gs_cpu_sampler_opts sopts;
	uint64_t stats[GS_STAT__MAX], start_mono, start_real;
	int err, status = 1;

	if (argp_parse(&profile_argp, argc, argv, ARGP_IN_ORDER, NULL, &p.opts))
		return 1;
	if (p.opts.cgroup && !p.opts.common.nr_pids && !p.opts.common.argv)
		p.opts.common.all = true;
	if (p.opts.tid && add_tid_process(&p.opts))
		return 1;
	err = gs_common_opts__finish(&p.opts.common);
	if (!err && p.opts.freq)
		err = gs_cpu_parse_hz(p.opts.freq, &p.hz);
	if (!err && p.opts.format == FORMAT_PPROF && p.opts.output_fd < 0)
		err = gs_refuse_binary_tty(p.opts.common.output, "pprof");
	if (err)
		return gs_exit_status(err);
	topts = gs_common_opts__tracker(&p.opts.common, 0); /* no CUDA probes */
	topts.command_stdout_to_stderr = gs_writes_stdout(p.opts.common.output);
	if (gs_tracker__open(&p.tracker, &topts, &ops))
		return 1;
	if (open_output(&p))
		goto out_free;
	sopts = (struct gs_cpu_sampler_opts){
		.freq_hz = p.hz,
		.all = p.opts.common.all,
		.cgroup = p.opts.cgroup,
		.no_kernel_stack = p.opts.user_only,
		.no_user_stack = p.opts.kernel_only,
		.tid = p.opts.tid,
		.per_thread = p.opts.per_thread,
		.ustack = p.opts.common.stacks == GS_STACKS_DWARF,
	};
	if (gs_cpu_sampler__open(&p.sampler, p.tracker, &sopts))
		goto out_free;
	p.stacks = gs_stack_table__new(gs_tracker__symcache(p.tracker));
	p.profile = gs_profile__new();
	p.mappings = gs_profile_mappings__new(gs_tracker__symcache(p.tracker));
	if (!p.stacks || !p.profile || !p.mappings) {
		gs_err("out of memory");
		goto out_free;
	}
	p.kallsyms = gs_kallsyms__read("/proc/kallsyms");
	if (!p.kallsyms)
		gs_warn("/proc/kallsyms: %s: kernel frames stay unnamed", strerror(errno));
	start_mono = gs_clock_ns(CLOCK_MONOTONIC);
	start_real = gs_clock_ns(CLOCK_REALTIME);
	if (gs_tracker__start(p.tracker))
		goto out_free;
	gs_info("profiling%s at %u Hz; Ctrl-C to stop", p.opts.common.all ? " every process" : "",
		p.hz);
	err = run_loop(&p);
	/* whatever stopped it, what was collected is written */
	err = write_output(&p, start_real, gs_clock_ns(CLOCK_MONOTONIC) - start_mono) ?: err;
	gs_tracker__stats(p.tracker, stats);
	gs_info("profile: %" PRIu64 " samples in %zu stacks (%s); lost: %" PRIu64
		" stacks, %" PRIu64 " samples",
		gs_profile__total(p.profile), gs_profile__nr_stacks(p.profile),
		gs_cpu_sampler__event(p.sampler), stats[GS_STAT_CPU_STACK_LOST],
		stats[GS_STAT_CPU_COUNTS_FULL]);
	status = err ? 1 : 0;

out_free:
	gs_out__abort(p.out); /* a failure before the run: no file is made */
	gs_cpu_sampler__free(p.sampler);
	gs_profile__free(p.profile);
	gs_profile_mappings__free(p.mappings);
	gs_stack_table__free(p.stacks);
	gs_kallsyms__free(p.kallsyms);
	gs_tracker__free(p.tracker);
	return status;
}
