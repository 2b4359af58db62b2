// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* leaks.c: `gpusnoop leaks`, outstanding CUDA allocations per process grouped by stack. */
#include <argp.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "profilers/cuda_api.h"
#include "profilers/leak_report.h"
#include "profilers/mem_accounting.h"
#include "profilers/options.h"
#include "profilers/subcommands.h"
#include "profilers/tracker.h"
#include "user/alloc_table.h"
#include "user/clock.h"
#include "user/log.h"
#include "user/stack_table.h"

#define POLL_MS 100

struct leaks_opts {
	struct gs_common_opts common;
	double interval_s;
	double min_age_s;
	size_t top;
	bool json;
};

struct leaks {
	struct leaks_opts opts;
	struct gs_tracker *tracker;
	struct gs_stack_table *stacks;
	struct gs_mem_accounting mem;
	FILE *out;
	int error; /* first fatal error inside a callback */
};

static void fatal(struct leaks *l, int err)
{
	if (!l->error) {
		gs_err("tracking allocations: %s", strerror(-err));
		l->error = err;
	}
}

static void on_alloc(void *ctx, const struct gs_mem_alloc *e)
{
	struct leaks *l = ctx;
	int err = gs_mem_accounting__alloc(&l->mem, e, NULL);

	if (err)
		fatal(l, err);
}

static void on_free(void *ctx, const struct gs_mem_free *e)
{
	struct leaks *l = ctx;

	gs_mem_accounting__free(&l->mem, e);
}

static void on_free_ret(void *ctx, const struct gs_mem_free_ret *e)
{
	struct leaks *l = ctx;

	gs_mem_accounting__free_ret(&l->mem, e);
}

/*
 * The groups of one report, found by (stack, API) through a small hash of group indexes:
 * memory in proportion to the groups, not to the allocations (a million of them would
 * otherwise need a 32 MiB array for the length of a report).
 */
struct grouping {
	struct gs_leak_group *groups;
	size_t nr, cap;
	uint32_t *index; /* group + 1, by hash of (stack_id, api); 0: empty */
	size_t nr_index; /* power of two */
};

static size_t group_hash(uint32_t stack_id, uint16_t api)
{
	return (size_t)((((uint64_t)stack_id << 16 | api) * 0x9E3779B97F4A7C15ULL) >> 32);
}

static int grow_index(struct grouping *g)
{
	size_t nr = g->nr_index ? g->nr_index * 2 : 64;
	uint32_t *index = calloc(nr, sizeof(*index));

	if (!index)
		return -ENOMEM;
	for (size_t i = 0; i < g->nr; i++) {
		size_t j = group_hash(g->groups[i].stack_id, g->groups[i].api) & (nr - 1);

		while (index[j])
			j = (j + 1) & (nr - 1);
		index[j] = (uint32_t)i + 1;
	}
	free(g->index);
	g->index = index;
	g->nr_index = nr;
	return 0;
}

static int group_add(struct grouping *g, const struct gs_alloc *a)
{
	struct gs_leak_group *x;
	size_t j, mask;

	if ((g->nr + 1) * 2 > g->nr_index && grow_index(g))
		return -ENOMEM;
	mask = g->nr_index - 1;
	for (j = group_hash(a->stack_id, a->api) & mask; g->index[j]; j = (j + 1) & mask) {
		x = &g->groups[g->index[j] - 1];
		if (x->stack_id == a->stack_id && x->api == a->api) {
			x->bytes += a->size;
			x->count++;
			if (a->ts_ns < x->oldest_ts_ns)
				x->oldest_ts_ns = a->ts_ns;
			return 0;
		}
	}
	if (g->nr == g->cap) {
		size_t cap = g->cap ? g->cap * 2 : 16;
		struct gs_leak_group *grown = realloc(g->groups, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		g->groups = grown;
		g->cap = cap;
	}
	g->groups[g->nr] = (struct gs_leak_group){ .bytes = a->size,
						   .count = 1,
						   .oldest_ts_ns = a->ts_ns,
						   .stack_id = a->stack_id,
						   .api = a->api };
	g->index[j] = (uint32_t)++g->nr;
	return 0;
}

static int cmp_group_bytes(const void *a, const void *b)
{
	const struct gs_leak_group *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->count > y->count ? -1 : x->count < y->count;
}

static int cmp_fail_count(const void *a, const void *b)
{
	const struct gs_fail_group *x = a, *y = b;

	return x->count > y->count ? -1 : x->count < y->count;
}

/* Groups the outstanding allocations of p older than min_age by (stack, API). */
static int build_proc_report(struct leaks *l, struct gs_mem_proc *p, uint64_t now,
			     struct gs_leak_proc_report *out)
{
	uint64_t min_age_ns = (uint64_t)(l->opts.min_age_s * 1e9);
	struct grouping g = { 0 };
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->pid = p->pid;
	out->comm = gs_tracker__comm(l->tracker, p->pid);
	out->failed_allocations = p->failed_allocations;
	out->failed_frees = p->failed_frees;
	out->unknown_frees = p->unknown_frees;
	for (size_t i = 0, n = gs_alloc_table__slots(p->allocs); i < n && !err; i++) {
		const struct gs_alloc *a = gs_alloc_table__at(p->allocs, i);

		if (!a || now - a->ts_ns < min_age_ns)
			continue;
		err = group_add(&g, a);
		out->outstanding_bytes += a->size;
		out->outstanding_allocations++;
	}
	free(g.index);
	if (err) {
		free(g.groups);
		return err;
	}
	qsort(g.groups, g.nr, sizeof(*g.groups), cmp_group_bytes);
	qsort(p->fails, p->nr_fails, sizeof(*p->fails), cmp_fail_count);
	out->groups = g.groups;
	out->nr_groups = g.nr;
	out->fails = p->fails;
	out->nr_fails = p->nr_fails;
	return 0;
}

static bool has_anything(const struct gs_mem_proc *p)
{
	return gs_alloc_table__count(p->allocs) || p->failed_allocations || p->failed_frees;
}

/* Writes one report over the given processes (all of them when only is NULL). */
static int write_report(struct leaks *l, const char *reason, struct gs_mem_proc *only)
{
	struct gs_leak_report r = {
		.reason = reason,
		.now_ns = gs_clock_ns(CLOCK_MONOTONIC),
		.min_age_s = l->opts.min_age_s,
		.top = l->opts.top,
	};
	int err = 0;

	r.procs = calloc(l->mem.nr_procs + 1, sizeof(*r.procs));
	if (!r.procs)
		return -ENOMEM;
	for (size_t i = 0; i < l->mem.nr_procs && !err; i++) {
		struct gs_mem_proc *p = &l->mem.procs[i];

		if ((only && p != only) || (!only && !has_anything(p)))
			continue;
		err = build_proc_report(l, p, r.now_ns, &r.procs[r.nr_procs]);
		if (!err) {
			r.procs[r.nr_procs].exited = only && strcmp(reason, "interval");
			r.procs[r.nr_procs].exec = only && !strcmp(reason, "exec");
			r.nr_procs++;
		}
	}
	gs_tracker__stats(l->tracker, r.stats);
	if (!err) {
		if (l->opts.json)
			gs_leak_report__write_json(l->out, &r, l->stacks);
		else
			gs_leak_report__write_text(l->out, &r, l->stacks);
		fflush(l->out);
	}
	for (size_t i = 0; i < r.nr_procs; i++)
		free(r.procs[i].groups);
	free(r.procs);
	return err;
}

static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	struct leaks *l = ctx;
	struct gs_mem_proc *p = gs_mem_accounting__find(&l->mem, pid);

	/* a target that never allocated still gets its (empty) exit report */
	if (!p && (exec || !(p = gs_mem_accounting__get(&l->mem, pid))))
		return;
	write_report(l, exec ? "exec" : "exit", p);
	if (exec)
		gs_alloc_table__clear(p->allocs);
	else
		gs_mem_accounting__remove(&l->mem, p);
}

static const struct argp_option leaks_options[] = {
	{ "interval", 'i', "SECS", 0, "Also report every SECS seconds", 0 },
	{ "min-age", 'm', "SECS", 0, "Only allocations at least SECS old", 0 },
	{ "top", 't', "N", 0, "Stacks shown per process (default 10, 0: all)", 0 },
	{ "format", 'f', "FMT", 0, "text (default) or json: one JSON document per report", 0 },
	{ 0 },
};

static error_t leaks_parse(int key, char *arg, struct argp_state *state)
{
	struct leaks_opts *o = state->input;
	char *end;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
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
	case 'f':
		if (!strcmp(arg, "json"))
			o->json = true;
		else if (strcmp(arg, "text"))
			argp_error(state, "unknown format '%s' (text or json)", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child leaks_children[] = {
	{ &gs_common_argp, 0, "Targets and output:", 0 },
	{ 0 },
};

static const char leaks_doc[] =
	"Report outstanding CUDA allocations per process, grouped by the stack that made them.\v"
	"Reports are written at the end (-d, Ctrl-C, SIGTERM), every --interval, and when a "
	"target exits.\n\n"
	"EXAMPLES:\n"
	"  gpusnoop leaks -p 1234 -d 30           # what pid 1234 allocates and keeps for 30s\n"
	"  gpusnoop leaks -p 1234 -i 10 -m 5      # every 10s, allocations older than 5s\n"
	"  gpusnoop leaks --format json -- ./train  # run ./train, JSON report at its exit\n"
	"  gpusnoop leaks -a -d 60 -o leaks.txt   # every CUDA process on the host";

static const struct argp leaks_argp = {
	leaks_options, leaks_parse, "[-p PID ... | -a | -- CMD ARGS]", leaks_doc, leaks_children,
	NULL,	       NULL,
};

static int run_loop(struct leaks *l)
{
	uint64_t start = gs_clock_ns(CLOCK_MONOTONIC), next_report = 0;
	uint64_t duration_ns = (uint64_t)(l->opts.common.duration_s * 1e9);
	uint64_t interval_ns = (uint64_t)(l->opts.interval_s * 1e9);

	if (interval_ns)
		next_report = start + interval_ns;
	while (!gs_stop_requested && !l->error) {
		uint64_t now;
		int n = gs_tracker__poll(l->tracker, POLL_MS);

		if (n < 0) {
			gs_err("reading events: %s", strerror(-n));
			return n;
		}
		if (gs_tracker__done(l->tracker))
			return 0;
		now = gs_clock_ns(CLOCK_MONOTONIC);
		if (duration_ns && now - start >= duration_ns)
			break;
		if (interval_ns && now >= next_report) {
			write_report(l, "interval", NULL);
			next_report += interval_ns;
		}
	}
	gs_tracker__poll(l->tracker, 0); /* what arrived before the stop */
	if (l->error)
		return l->error;
	return write_report(l, "final", NULL);
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
		.proc_gone = on_proc_gone,
	};
	int err, status = 1;

	if (argp_parse(&leaks_argp, argc, argv, ARGP_IN_ORDER, NULL, &l.opts))
		return 1;
	if (gs_common_opts__finish(&l.opts.common))
		return 1;
	l.out = stdout;
	if (l.opts.common.output) {
		l.out = fopen(l.opts.common.output, "we");
		if (!l.out) {
			gs_err("%s: %s", l.opts.common.output, strerror(errno));
			return 1;
		}
	}
	topts = gs_common_opts__tracker(&l.opts.common, GS_FAM_BIT(GS_FAM_MEM));
	if (gs_tracker__open(&l.tracker, &topts, &ops))
		goto out_close;
	l.stacks = gs_stack_table__new(gs_tracker__symcache(l.tracker));
	if (!l.stacks) {
		gs_err("out of memory");
		goto out_free;
	}
	gs_mem_accounting__init(&l.mem, l.stacks);
	if (gs_tracker__start(l.tracker))
		goto out_free;
	gs_info("tracing CUDA allocations%s; Ctrl-C to stop",
		l.opts.common.all ? " of every process" : "");
	err = run_loop(&l);
	status = err ? 1 : 0;
	if (!err && !gs_tracker__saw_cuda(l.tracker) && !l.opts.common.all) {
		gs_err("no target loaded a CUDA library (libcudart, libcuda or a static cudart)");
		status = 1;
	}

out_free:
	gs_mem_accounting__release(&l.mem);
	gs_stack_table__free(l.stacks);
	gs_tracker__free(l.tracker);
out_close:
	if (fflush(l.out) || ferror(l.out)) {
		gs_err("writing %s: %s", l.opts.common.output ? l.opts.common.output : "stdout",
		       strerror(errno));
		status = 1;
	}
	if (l.out != stdout && fclose(l.out)) {
		gs_err("closing %s: %s", l.opts.common.output, strerror(errno));
		status = 1;
	}
	return status;
}
