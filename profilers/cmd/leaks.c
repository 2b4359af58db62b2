// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* leaks.c: `gpusnoop leaks`, outstanding CUDA allocations per process grouped by stack. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "profilers/cuda/api.h"
#include "profilers/leak_report.h"
#include "profilers/mem_model.h"
#include "profilers/options.h"
#include "profilers/proc_tree.h"
#include "profilers/run_loop.h"
#include "profilers/snapshot_file.h"
#include "profilers/cmd/subcommands.h"
#include "profilers/tracker.h"
#include "user/clock.h"
#include "user/log.h"
#include "user/out_file.h"
#include "user/losses.h"
#include "user/stack_table.h"
#include "user/status_line.h"

#define POLL_MS		100
#define STATUS_EVERY_NS 1000000000ULL

enum { OPT_ON_OOM = 0x2000, OPT_NO_TORCH, OPT_MAX_STACKS, OPT_MAX_ENTRIES };

struct leaks_opts {
	struct gs_common_opts common;
	double interval_s;
	double min_age_s;
	size_t top;
	size_t max_stacks;  /* distinct stacks kept per process; 0: the table's default */
	size_t max_entries; /* --format memory-snapshot: trace entries kept per process */
	bool json;
	bool snapshot; /* --format memory-snapshot */
	bool no_torch;
	bool on_oom;
};

struct leaks {
	struct leaks_opts opts;
	struct gs_tracker *tracker;
	struct gs_stack_table *stacks;
	struct gs_mem_model mem; /* what every memory event did; the reports render it */
	/*
	 * -o FILE replaces FILE at the first report (temporary + rename); each later report is
	 * appended and synced whole, and a failed one cut off, so FILE only holds whole reports.
	 */
	struct gs_out *out;
	/* --interval's reports; interval_ns 0: none */
	uint64_t interval_ns, next_report_ns;
	int error; /* first fatal error inside a callback */
	/* memory-snapshot: the target whose file is -o's name itself (0: none), files numbered */
	pid_t primary;
	unsigned int snap_seq;
	struct gs_loss_window loss_window;     /* since the previous report */
	uint64_t seen_allocations, seen_bytes; /* successful CUDA allocations, all processes */
	uint64_t events;		       /* memory records handled, for the status line */
	uint64_t start_ns, last_status_ns;
};

static void fatal(struct leaks *l, int err)
{
	if (!l->error) {
		gs_err("tracking allocations: %s", strerror(-err));
		l->error = err;
	}
}

static int write_report(struct leaks *l, const char *reason, struct gs_mem_proc *only,
			const struct gs_leak_trigger *trigger);

static void on_alloc(void *ctx, const struct gs_mem_alloc *e)
{
	struct leaks *l = ctx;
	struct gs_leak_trigger t;
	struct gs_mem_effect fx;
	int err = gs_mem_model__alloc(&l->mem, e, &fx);

	l->events++;
	if (!e->ret) {
		l->seen_allocations++;
		l->seen_bytes += e->size;
	}
	if (err) {
		fatal(l, err);
	} else if (l->opts.on_oom && fx.cuda_oom) {
		t = gs_leak_trigger_cuda_oom(e, fx.stack_id);
		write_report(l, "trigger", gs_mem_model__proc(&l->mem, (pid_t)e->hdr.pid, false),
			     &t);
	}
}

static void on_free(void *ctx, const struct gs_mem_free *e)
{
	struct leaks *l = ctx;
	struct gs_mem_effect fx;
	int err = gs_mem_model__free(&l->mem, e, &fx);

	l->events++;
	if (err)
		fatal(l, err);
}

static void on_free_ret(void *ctx, const struct gs_mem_free_ret *e)
{
	struct leaks *l = ctx;
	struct gs_mem_effect fx;

	gs_mem_model__free_ret(&l->mem, e, &fx);
}

static void on_cuda_call(void *ctx, const struct gs_cuda_call *e)
{
	struct leaks *l = ctx;
	struct gs_mem_effect fx;

	gs_mem_model__cuda_call(&l->mem, e, &fx);
}

static void on_torch_mem(void *ctx, const struct gs_torch_mem *e)
{
	struct leaks *l = ctx;
	struct gs_mem_effect fx;
	int err = gs_mem_model__tensor(&l->mem, e, &fx);

	l->events++;
	if (err)
		fatal(l, err);
}

static void on_torch_oom(void *ctx, const struct gs_torch_oom *e)
{
	struct leaks *l = ctx;
	struct gs_mem_effect fx;
	struct gs_leak_trigger t;
	int err = gs_mem_model__torch_oom(&l->mem, e, &fx);

	if (err) {
		fatal(l, err);
	} else if (fx.torch_oom && l->opts.on_oom) {
		t = gs_leak_trigger_torch_oom((pid_t)e->hdr.pid, &fx.oom);
		write_report(l, "trigger", gs_mem_model__proc(&l->mem, (pid_t)e->hdr.pid, false),
			     &t);
	}
}

/* Where out's process sits in the followed tree: its parent, ranks, and whether it exited. */
static void tree_facts(struct leaks *l, struct gs_leak_proc_report *out)
{
	const struct gs_proc_tree_entry *e = gs_tracker__proc(l->tracker, out->pid);

	if (e) {
		out->ppid = e->ppid;
		out->rank = e->rank;
		out->local_rank = e->local_rank;
		out->exited |= e->exited;
	}
}

/*
 * --format memory-snapshot: a PyTorch memory snapshot file per process. -o's name holds the
 * target's last state (at its exit or the end); interval and OOM reports are numbered
 * (snap.1.pickle, ...); processes other than the one -p or -- named get ".PID" in the name.
 */
static int write_snapshots(struct leaks *l, const char *reason, struct gs_mem_proc *only)
{
	bool moment = !strcmp(reason, "interval") || !strcmp(reason, "trigger");
	int err;

	gs_stack_table__resymbolize(l->stacks);
	err = gs_snapshot_files_write(&l->mem, l->opts.common.output, l->primary,
				      only ? only->pid : 0, moment ? ++l->snap_seq : 0, reason,
				      gs_clock_ns(CLOCK_MONOTONIC));
	if (err && !l->error)
		l->error = err;
	return err;
}

/* Writes one report over the given processes (all of them when only is NULL). */
static int write_report(struct leaks *l, const char *reason, struct gs_mem_proc *only,
			const struct gs_leak_trigger *trigger)
{
	struct gs_leak_report r = {
		.reason = reason,
		.now_ns = gs_clock_ns(CLOCK_MONOTONIC),
		.min_age_s = l->opts.min_age_s,
		.top = l->opts.top,
		.trigger = trigger,
		.seen_allocations = l->seen_allocations,
		.seen_bytes = l->seen_bytes,
		.no_stacks = l->opts.common.stacks == GS_STACKS_NONE,
		.stack_sample = l->opts.common.stack_sample,
	};
	int err = 0;

	if (l->opts.snapshot)
		return write_snapshots(l, reason, only);
	/* names from debug files fetched since the stacks were taken (debuginfod, bounded) */
	gs_stack_table__resymbolize(l->stacks);
	r.procs = calloc(l->mem.raw.nr_procs + 1, sizeof(*r.procs));
	if (!r.procs)
		return -ENOMEM;
	for (size_t i = 0; i < l->mem.raw.nr_procs && !err; i++) {
		struct gs_mem_proc *p = l->mem.raw.procs[i];

		if ((only && p != only) || (!only && !gs_mem_model__has_anything(&l->mem, p)))
			continue;
		err = gs_leak_proc_report__build(&r.procs[r.nr_procs], &l->mem, p,
						 gs_tracker__comm(l->tracker, p->pid), r.now_ns,
						 (uint64_t)(l->opts.min_age_s * 1e9));
		if (!err) {
			r.procs[r.nr_procs].exited =
				!strcmp(reason, "exit") || !strcmp(reason, "exec");
			r.procs[r.nr_procs].exec = !strcmp(reason, "exec");
			tree_facts(l, &r.procs[r.nr_procs]);
			r.nr_procs++;
		}
	}
	gs_tracker__stats(l->tracker, r.stats);
	r.window_lost =
		gs_loss_window__take(&l->loss_window, r.stats, r.now_ns, &r.window_start_ns);
	if (!err) {
		if (l->opts.json)
			gs_leak_report__write_json(gs_out__file(l->out), &r, l->stacks);
		else
			gs_leak_report__write_text(gs_out__file(l->out), &r, l->stacks);
		err = gs_out__sync(l->out); /* logged */
		if (err && !l->error)
			l->error = err;
	}
	for (size_t i = 0; i < r.nr_procs; i++)
		gs_leak_proc_report__release(&r.procs[i]);
	free(r.procs);
	return err;
}

static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	struct leaks *l = ctx;
	/*
	 * A target that never allocated still gets its (empty) exit report; in a followed tree
	 * only those that did: the shells and launchers between them are no news.
	 */
	struct gs_mem_proc *p =
		gs_mem_model__proc(&l->mem, pid, !exec && !gs_tracker__children(l->tracker));

	if (p)
		write_report(l, exec ? "exec" : "exit", p, NULL);
	/* a followed tree's final report still lists what each exited process held */
	if (exec || !gs_tracker__children(l->tracker))
		gs_mem_model__proc_gone(&l->mem, pid, exec);
}

static const struct argp_option leaks_options[] = {
	{ "interval", 'i', "SECS", 0, "Also report every SECS seconds", 0 },
	{ "min-age", 'm', "SECS", 0, "Only allocations at least SECS old", 0 },
	{ "top", 't', "N", 0, "Stacks shown per process (default 10, 0: all)", 0 },
	{ "format", 'f', "FMT", 0,
	  "text (default), json (one JSON document per report) or memory-snapshot (PyTorch's "
	  "memory snapshot pickle per process, for torch.cuda._memory_viz; needs -o)",
	  0 },
	{ "max-entries", OPT_MAX_ENTRIES, "N", 0,
	  "memory-snapshot: allocator actions kept per process for the trace (default 100000)", 0 },
	{ "on-oom", OPT_ON_OOM, NULL, 0,
	  "Also report at each out-of-memory: PyTorch's, or a CUDA allocation failing with error 2",
	  0 },
	{ "max-stacks", OPT_MAX_STACKS, "N", 0,
	  "Distinct stacks kept per process (default 10000); later ones count as \"[other "
	  "stacks]\"",
	  0 },
	{ "no-torch", OPT_NO_TORCH, NULL, 0,
	  "Ignore PyTorch: no tensors, its segments shown as plain CUDA allocations", 0 },
	{ 0 },
};

static error_t leaks_parse(int key, char *arg, struct argp_state *state)
{
	struct leaks_opts *o = state->input;
	char *end;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		state->child_inputs[1] = &o->common;
		state->child_inputs[2] = &o->common;
		break;
	case 'i':
		if (gs_parse_seconds(arg, &o->interval_s) || o->interval_s <= 0)
			argp_error(state, "invalid interval '%s'", arg);
		break;
	case 'm':
		if (gs_parse_seconds(arg, &o->min_age_s))
			argp_error(state, "invalid minimum age '%s'", arg);
		break;
	case 't':
		o->top = strtoul(arg, &end, 10);
		if (*end || *arg == '-')
			argp_error(state, "invalid --top '%s'", arg);
		break;
	case OPT_MAX_STACKS:
		o->max_stacks = strtoul(arg, &end, 10);
		if (*end || *arg == '-' || !o->max_stacks || o->max_stacks > UINT32_MAX)
			argp_error(state, "invalid --max-stacks '%s'", arg);
		break;
	case OPT_ON_OOM:
		o->on_oom = true;
		break;
	case OPT_NO_TORCH:
		o->no_torch = true;
		break;
	case OPT_MAX_ENTRIES:
		o->max_entries = strtoul(arg, &end, 10);
		if (*end || *arg == '-' || !o->max_entries || o->max_entries > GS_SNAP_MAX_ENTRIES)
			argp_error(state, "invalid --max-entries '%s' (1 to %u)", arg,
				   GS_SNAP_MAX_ENTRIES);
		break;
	case 'f':
		if (!strcmp(arg, "memory-snapshot"))
			o->snapshot = true;
		else
			gs_parse_report_format(state, arg, &o->json);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child leaks_children[] = {
	{ &gs_common_argp, 0, "Targets and output:", 0 },
	{ &gs_stacks_none_argp, 0, NULL, 0 },
	{ &gs_filter_argp, 0, NULL, 0 },
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const char leaks_doc[] =
	"Report outstanding CUDA allocations and PyTorch tensors per process, grouped by the "
	"stack that made them.\v"
	"Reports are written at the end (-d, Ctrl-C, SIGTERM), every --interval, and when a "
	"target exits.\n\n"
	"EXAMPLES:\n"
	"  gpusnoop leaks -p 1234 -d 30          # what pid 1234 keeps, for 30 s\n"
	"  gpusnoop leaks -p 1234 -i 10 -m 5     # every 10 s, what is over 5 s old\n"
	"  gpusnoop leaks -f json -- ./train     # run ./train, JSON report at its exit\n"
	"  gpusnoop leaks -a -d 60 -o leaks.txt  # every CUDA process on the host\n"
	"  gpusnoop leaks --on-oom -p 1234       # who held what when PyTorch ran out\n"
	"  gpusnoop leaks -f memory-snapshot -o snap.pickle --on-oom -p 1234\n"
	"\nWith -f memory-snapshot, each process's PyTorch memory snapshot (at an OOM: "
	"snap.1.pickle, ...; at the end: snap.pickle) opens in PyTorch's viewer: python -m "
	"torch.cuda._memory_viz trace_plot snap.pickle -o snap.html";

static const struct argp leaks_argp = {
	leaks_options, leaks_parse, "[-p PID ... | -a | -- CMD ARGS]", leaks_doc, leaks_children,
	NULL,	       NULL,
};

/* The interval reports; a failed one stops the loop through l->error (gs_out__sync). */
/* A live status line, only for a person watching a terminal (never into a pipe). */
static void show_status(struct leaks *l, uint64_t now_ns)
{
	uint64_t held = 0;
	char b[32];

	if (now_ns - l->last_status_ns < STATUS_EVERY_NS)
		return;
	l->last_status_ns = now_ns;
	for (size_t i = 0; i < l->mem.raw.nr_procs; i++)
		held += gs_mem_model__cuda_bytes(&l->mem, l->mem.raw.procs[i]->pid);
	gs_format_bytes(held, b, sizeof(b));
	gs_status_line__show("tracing: %.0f s, %" PRIu64 " events, %s outstanding in %zu "
			     "processes, %" PRIu64 " dropped",
			     (double)(now_ns - l->start_ns) / 1e9, l->events, b,
			     l->mem.raw.nr_procs, gs_tracker__dropped(l->tracker));
}

static int tick(void *ctx, uint64_t now_ns)
{
	struct leaks *l = ctx;

	show_status(l, now_ns);
	if (l->interval_ns && now_ns >= l->next_report_ns) {
		write_report(l, "interval", NULL, NULL);
		l->next_report_ns += l->interval_ns;
	}
	return 0;
}

/* whether there was anything to report on: -a waits for CUDA users, -p/-- CMD needs one */
static bool saw_cuda(const struct leaks *l)
{
	return l->opts.common.all || gs_tracker__saw_cuda(l->tracker);
}

static int run(struct leaks *l)
{
	struct gs_run_loop loop = {
		.tracker = l->tracker,
		.start_ns = gs_clock_ns(CLOCK_MONOTONIC),
		.duration_s = l->opts.common.duration_s,
		.poll_ms = POLL_MS,
		.error = &l->error,
		.ctx = l,
		.tick = tick,
	};
	enum gs_run_end end;
	int err;

	l->interval_ns = (uint64_t)(l->opts.interval_s * 1e9);
	l->next_report_ns = loop.start_ns + l->interval_ns;
	l->start_ns = l->last_status_ns = loop.start_ns;
	err = gs_run_loop(&loop, &end);
	gs_status_line__clear();
	if (err)
		return err;
	/* each target's exit report was its last word; a followed tree ends with the whole tree */
	if (end == GS_RUN_TARGETS_GONE && !gs_tracker__children(l->tracker))
		return 0;
	/* gs_cmd_leaks says so: stdout still gets the (empty) report, a file is not made */
	if (!saw_cuda(l) && l->opts.common.output && strcmp(l->opts.common.output, "-"))
		return 0;
	return write_report(l, "final", NULL, NULL);
}

int gs_cmd_leaks(int argc, char **argv)
{
	struct leaks l = { .opts = { .top = 10 } };
	struct gs_tracker_opts topts;
	struct gs_tracker_ops ops = {
		.ctx = &l,
		.mem_alloc = on_alloc,
		.mem_free = on_free,
		.mem_free_ret = on_free_ret,
		.cuda_call = on_cuda_call,
		.torch_mem = on_torch_mem,
		.torch_oom = on_torch_oom,
		.proc_gone = on_proc_gone,
	};
	int err, status = 1;

	if (argp_parse(&leaks_argp, argc, argv, ARGP_IN_ORDER, NULL, &l.opts))
		return 1;
	err = gs_common_opts__finish(&l.opts.common);
	if (err)
		return gs_exit_status(err);
	if (l.opts.snapshot && (!l.opts.common.output || !strcmp(l.opts.common.output, "-"))) {
		gs_err("--format memory-snapshot writes files: give one with -o FILE");
		return GS_EXIT_USAGE;
	}
	if (l.opts.max_entries && !l.opts.snapshot) {
		gs_err("--max-entries: it needs --format memory-snapshot");
		return GS_EXIT_USAGE;
	}
	topts = gs_common_opts__tracker(&l.opts.common, GS_FAM_BIT(GS_FAM_MEM));
	topts.torch = !l.opts.no_torch;
	if (gs_tracker__open(&l.tracker, &topts, &ops))
		goto out_free;
	/* after the targets were checked: a bad -p leaves an existing file as it was */
	if (!l.opts.snapshot && gs_out__open(&l.out, l.opts.common.output, GS_OUT_PLAIN))
		goto out_free;
	l.stacks = gs_stack_table__new(gs_tracker__symcache(l.tracker));
	if (!l.stacks) {
		gs_err("out of memory");
		goto out_free;
	}
	gs_stack_table__set_max_per_process(l.stacks, l.opts.max_stacks);
	gs_mem_model__init(&l.mem, l.stacks, gs_tracker__symcache(l.tracker), !l.opts.no_torch);
	if (l.opts.snapshot && gs_mem_model__snapshots(&l.mem, l.opts.max_entries)) {
		gs_err("out of memory");
		goto out_free;
	}
	if (gs_tracker__start(l.tracker))
		goto out_free;
	if (l.opts.snapshot && l.opts.common.nr_pids == 1)
		l.primary = l.opts.common.pids[0];
	else if (l.opts.snapshot && l.opts.common.argv)
		l.primary = gs_tracker__child(l.tracker);
	gs_info("tracing CUDA allocations%s; Ctrl-C to stop",
		l.opts.common.all ? " of every process" : "");
	err = run(&l);
	if (!err && !saw_cuda(&l)) {
		/* a failure: out_free removes a file, which no report was written to */
		gs_err("no target loaded a CUDA library (libcudart, libcuda or a static cudart) "
		       "or PyTorch (libc10)");
		goto out_free;
	}
	/* the reports are whole and in place before the probes go */
	if (!err && l.out) {
		err = gs_out__close(l.out);
		l.out = NULL;
	}
	status = err ? 1 : 0;

out_free:
	gs_mem_model__release(&l.mem);
	gs_stack_table__free(l.stacks);
	gs_tracker__free(l.tracker);
	gs_out__abort(l.out); /* a failure: whole reports stay, a file never reported is not made */
	return status;
}
