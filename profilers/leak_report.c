// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* leak_report.c: text and JSON renderings of a leak report. */
#include <inttypes.h>
#include <time.h>
#include "profilers/cuda_api.h"
#include "profilers/leak_report.h"
#include "user/json.h"
#include "user/stack_table.h"

void gs_format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	size_t u = 0;

	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%" PRIu64 " B", bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

static double age_s(const struct gs_leak_report *r, uint64_t ts_ns)
{
	return r->now_ns > ts_ns ? (double)(r->now_ns - ts_ns) / 1e9 : 0.0;
}

static size_t shown(const struct gs_leak_report *r, size_t nr)
{
	return r->top && r->top < nr ? r->top : nr;
}

static void text_frames(FILE *f, const struct gs_stack *s)
{
	if (!s || !s->nr_frames) {
		fprintf(f, "        (no user stack)\n");
		return;
	}
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		const struct gs_frame *fr = &s->frames[i];

		if (fr->symbol)
			fprintf(f, "        #%-2u %s+0x%" PRIx64 " (%s)\n", i, fr->symbol,
				fr->offset, fr->module ? fr->module : "?");
		else if (fr->module)
			fprintf(f, "        #%-2u %s+0x%" PRIx64 "\n", i, fr->module, fr->offset);
		else
			fprintf(f, "        #%-2u 0x%" PRIx64 "\n", i, fr->address);
	}
}

static void text_proc(FILE *f, const struct gs_leak_report *r, const struct gs_leak_proc_report *p,
		      const struct gs_stack_table *stacks)
{
	char total[32], b[32];

	gs_format_bytes(p->outstanding_bytes, total, sizeof(total));
	fprintf(f, "pid %d (%s)%s: %s outstanding in %" PRIu64 " allocation%s", (int)p->pid,
		p->comm,
		p->exec	    ? " replaced by exec, held"
		: p->exited ? " exited holding"
			    : "",
		total, p->outstanding_allocations, p->outstanding_allocations == 1 ? "" : "s");
	if (p->failed_allocations)
		fprintf(f, ", %" PRIu64 " failed allocation%s", p->failed_allocations,
			p->failed_allocations == 1 ? "" : "s");
	if (p->failed_frees)
		fprintf(f, ", %" PRIu64 " failed free%s", p->failed_frees,
			p->failed_frees == 1 ? "" : "s");
	fputc('\n', f);
	if (p->nr_groups) {
		fprintf(f, "  %12s %8s %9s  %s\n", "BYTES", "ALLOCS", "OLDEST", "API");
		for (size_t i = 0; i < shown(r, p->nr_groups); i++) {
			const struct gs_leak_group *g = &p->groups[i];

			gs_format_bytes(g->bytes, b, sizeof(b));
			fprintf(f, "  %12s %8" PRIu64 " %8.1fs  %s\n", b, g->count,
				age_s(r, g->oldest_ts_ns), gs_cuda_api_name(g->api));
			text_frames(f, gs_stack_table__get(stacks, g->stack_id));
		}
		if (shown(r, p->nr_groups) < p->nr_groups)
			fprintf(f, "  ... %zu more stacks (--top)\n",
				p->nr_groups - shown(r, p->nr_groups));
	}
	for (size_t i = 0; i < p->nr_fails; i++) {
		const struct gs_fail_group *g = &p->fails[i];
		const struct gs_cuda_api *api = gs_cuda_api_get(g->api);

		gs_format_bytes(g->bytes_requested, b, sizeof(b));
		fprintf(f, "  FAILED %" PRIu64 "x %s (%s requested): error %d %s\n", g->count,
			gs_cuda_api_name(g->api), b, g->ret,
			gs_cuda_error_name(api ? api->lib : GS_LIB_RUNTIME, g->ret));
		text_frames(f, gs_stack_table__get(stacks, g->stack_id));
	}
}

void gs_leak_report__write_text(FILE *f, const struct gs_leak_report *r,
				const struct gs_stack_table *stacks)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	uint64_t dropped = r->stats[GS_STAT_RINGBUF_FULL] + r->stats[GS_STAT_INFLIGHT_FULL];

	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&now, &tm));
	fprintf(f, "[%s] gpusnoop leaks (%s report)", stamp, r->reason);
	if (r->min_age_s > 0)
		fprintf(f, ", allocations older than %.1fs", r->min_age_s);
	fputc('\n', f);
	if (!r->nr_procs)
		fprintf(f, "no CUDA allocations seen\n");
	for (size_t i = 0; i < r->nr_procs; i++)
		text_proc(f, r, &r->procs[i], stacks);
	if (dropped)
		fprintf(f,
			"WARNING: %" PRIu64 " events were lost (ring buffer full: %" PRIu64
			"); counts may be incomplete\n",
			dropped, r->stats[GS_STAT_RINGBUF_FULL]);
	fputc('\n', f);
}

static void json_frames(struct gs_json *j, const struct gs_stack *s)
{
	gs_json__begin_array(j, "frames");
	for (uint32_t i = 0; s && i < s->nr_frames; i++) {
		const struct gs_frame *fr = &s->frames[i];

		gs_json__begin_object(j, NULL);
		gs_json__string(j, "symbol", fr->symbol);
		gs_json__string(j, "module", fr->module);
		gs_json__u64(j, "offset", fr->offset);
		gs_json__u64(j, "address", fr->address);
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
}

static void json_proc(struct gs_json *j, const struct gs_leak_report *r,
		      const struct gs_leak_proc_report *p, const struct gs_stack_table *stacks)
{
	gs_json__begin_object(j, NULL);
	gs_json__i64(j, "pid", p->pid);
	gs_json__string(j, "comm", p->comm);
	gs_json__bool(j, "exited", p->exited);
	gs_json__bool(j, "exec", p->exec);
	gs_json__u64(j, "outstanding_bytes", p->outstanding_bytes);
	gs_json__u64(j, "outstanding_allocations", p->outstanding_allocations);
	gs_json__u64(j, "failed_allocations", p->failed_allocations);
	gs_json__u64(j, "failed_frees", p->failed_frees);
	gs_json__u64(j, "unknown_frees", p->unknown_frees);
	gs_json__u64(j, "stacks_total", p->nr_groups);
	gs_json__begin_array(j, "stacks");
	for (size_t i = 0; i < shown(r, p->nr_groups); i++) {
		const struct gs_leak_group *g = &p->groups[i];
		const struct gs_cuda_api *api = gs_cuda_api_get(g->api);

		gs_json__begin_object(j, NULL);
		gs_json__u64(j, "bytes", g->bytes);
		gs_json__u64(j, "allocations", g->count);
		gs_json__double(j, "oldest_age_s", age_s(r, g->oldest_ts_ns));
		gs_json__string(j, "api", gs_cuda_api_name(g->api));
		gs_json__string(j, "memory", api ? gs_mem_kind_name(api->mem_kind) : "unknown");
		json_frames(j, gs_stack_table__get(stacks, g->stack_id));
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
	gs_json__begin_array(j, "failures");
	for (size_t i = 0; i < p->nr_fails; i++) {
		const struct gs_fail_group *g = &p->fails[i];
		const struct gs_cuda_api *api = gs_cuda_api_get(g->api);

		gs_json__begin_object(j, NULL);
		gs_json__string(j, "api", gs_cuda_api_name(g->api));
		gs_json__i64(j, "error", g->ret);
		gs_json__string(j, "error_name",
				gs_cuda_error_name(api ? api->lib : GS_LIB_RUNTIME, g->ret));
		gs_json__u64(j, "count", g->count);
		gs_json__u64(j, "bytes_requested", g->bytes_requested);
		json_frames(j, gs_stack_table__get(stacks, g->stack_id));
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
	gs_json__end_object(j);
}

void gs_leak_report__write_json(FILE *f, const struct gs_leak_report *r,
				const struct gs_stack_table *stacks)
{
	struct gs_json j;

	gs_json__init(&j, f);
	gs_json__begin_object(&j, NULL);
	gs_json__string(&j, "report", r->reason);
	gs_json__i64(&j, "time", (int64_t)time(NULL));
	gs_json__u64(&j, "monotonic_ns", r->now_ns);
	gs_json__double(&j, "min_age_s", r->min_age_s);
	gs_json__begin_array(&j, "processes");
	for (size_t i = 0; i < r->nr_procs; i++)
		json_proc(&j, r, &r->procs[i], stacks);
	gs_json__end_array(&j);
	gs_json__u64(&j, "dropped_events",
		     r->stats[GS_STAT_RINGBUF_FULL] + r->stats[GS_STAT_INFLIGHT_FULL]);
	gs_json__begin_object(&j, "lost");
	gs_json__u64(&j, "ringbuf_full", r->stats[GS_STAT_RINGBUF_FULL]);
	gs_json__u64(&j, "inflight_full", r->stats[GS_STAT_INFLIGHT_FULL]);
	gs_json__u64(&j, "stack_failed", r->stats[GS_STAT_STACK_FAILED]);
	gs_json__u64(&j, "user_read_failed", r->stats[GS_STAT_USER_READ_FAILED]);
	gs_json__u64(&j, "ustack_failed", r->stats[GS_STAT_USTACK_FAILED]);
	gs_json__end_object(&j);
	gs_json__end_object(&j);
	fputc('\n', f);
}
