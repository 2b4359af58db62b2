// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* leak_report.c: text and JSON renderings of a leak report. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "profilers/cuda/api.h"
#include "profilers/leak_report.h"
#include "profilers/torch/syms.h"
#include "user/array.h"
#include "user/event_decode.h"
#include "user/hash_index.h"
#include "user/json.h"
#include "user/losses.h"
#include "user/stack_table.h"
#include "user/text_escape.h"

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
		char frame[1024];

		/* symbols and module paths are the process's text: no raw escapes to a terminal */
		gs_frame_format(&s->frames[i], frame, sizeof(frame));
		fprintf(f, "        #%-2u ", i);
		gs_text_write(f, frame);
		fputc('\n', f);
	}
}

static void text_torch(FILE *f, const struct gs_leak_report *r, const struct gs_leak_proc_report *p,
		       const struct gs_stack_table *stacks)
{
	const struct gs_torch_proc *tp = p->torch;
	char a[32], b[32], c[32], name[16];

	gs_format_bytes(p->tensor_bytes, a, sizeof(a));
	fprintf(f, "  PyTorch %s: %s in %" PRIu64 " tensor%s",
		*tp->version ? tp->version : "(version unknown)", a, p->tensor_allocations,
		p->tensor_allocations == 1 ? "" : "s");
	if (tp->source)
		fprintf(f, " (CUDA tensors from %s)", gs_torch_source_name(tp->source));
	fputc('\n', f);
	for (size_t i = 0; i < tp->nr_devs; i++) {
		const struct gs_torch_device *d = &tp->devs[i];

		gs_torch_device_name(d->key, name, sizeof(name));
		gs_format_bytes(d->allocated, a, sizeof(a));
		if (d->key >> 8 == GS_TORCH_DEV_CPU) {
			fprintf(f, "    %-7s allocated %s\n", name, a);
			continue;
		}
		gs_format_bytes(d->reserved, b, sizeof(b));
		gs_format_bytes(d->reserved > d->allocated ? d->reserved - d->allocated : 0, c,
				sizeof(c));
		fprintf(f, "    %-7s allocated %s, reserved %s (cached %s)\n", name, a, b, c);
	}
	if (!p->nr_tensor_groups)
		return;
	fprintf(f, "  %12s %8s %9s  %s\n", "BYTES", "TENSORS", "OLDEST", "DEVICE");
	for (size_t i = 0; i < shown(r, p->nr_tensor_groups); i++) {
		const struct gs_leak_group *g = &p->tensor_groups[i];

		gs_format_bytes(g->bytes, b, sizeof(b));
		gs_torch_device_name(g->api, name, sizeof(name));
		fprintf(f, "  %12s %8" PRIu64 " %8.1fs  %s\n", b, g->count,
			age_s(r, g->oldest_ts_ns), name);
		text_frames(f, gs_stack_table__get(stacks, g->stack_id));
	}
	if (shown(r, p->nr_tensor_groups) < p->nr_tensor_groups)
		fprintf(f, "  ... %zu more tensor stacks (--top)\n",
			p->nr_tensor_groups - shown(r, p->nr_tensor_groups));
}

static void text_proc(FILE *f, const struct gs_leak_report *r, const struct gs_leak_proc_report *p,
		      const struct gs_stack_table *stacks)
{
	char total[32], b[32], comm[GS_TEXT_SAFE_LEN(16)];

	gs_format_bytes(p->outstanding_bytes, total, sizeof(total));
	fprintf(f, "pid %d (%s", (int)p->pid, gs_text_safe(p->comm, comm, sizeof(comm)));
	if (p->ppid > 0)
		fprintf(f, ", parent %d", (int)p->ppid);
	if (p->rank >= 0)
		fprintf(f, ", rank %d", (int)p->rank);
	if (p->local_rank >= 0)
		fprintf(f, ", local rank %d", (int)p->local_rank);
	fprintf(f, ")%s: %s outstanding in %" PRIu64 " allocation%s",
		p->exec	    ? " replaced by exec, held"
		: p->exited ? " exited holding"
			    : "",
		total, p->outstanding_allocations, p->outstanding_allocations == 1 ? "" : "s");
	if (p->pinned_allocations) {
		gs_format_bytes(p->outstanding_bytes - p->pinned_bytes, total, sizeof(total));
		gs_format_bytes(p->pinned_bytes, b, sizeof(b));
		fprintf(f, " (device %s, pinned host %s)", total, b);
	}
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
		if (g->stack_id == GS_FAIL_OTHER_STACK) {
			fprintf(f, "  FAILED %" PRIu64 "x [other failures] (%s requested)\n",
				g->count, b);
			continue;
		}
		fprintf(f, "  FAILED %" PRIu64 "x %s (%s requested): error %d %s\n", g->count,
			gs_cuda_api_name(g->api), b, g->ret,
			gs_cuda_error_name(api ? api->lib : GS_LIB_RUNTIME, g->ret));
		text_frames(f, gs_stack_table__get(stacks, g->stack_id));
	}
	if (p->torch)
		text_torch(f, r, p, stacks);
}

static void text_trigger(FILE *f, const struct gs_leak_trigger *t,
			 const struct gs_stack_table *stacks)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(t->api);
	char b[32];

	if (t->torch) {
		const struct gs_torch_oom_info *o = t->torch;
		char name[16];

		gs_torch_device_name(o->device, name, sizeof(name));
		if (o->requested)
			gs_format_bytes(o->requested, b, sizeof(b));
		else
			snprintf(b, sizeof(b), "unknown size");
		fprintf(f, "TRIGGER %s: pid %d: %s%s on %s ran out of memory (%s)\n", t->kind,
			(int)t->pid, b, o->requested_is_segment ? " (segment)" : "", name,
			o->source == GS_TORCH_OOM_REPORT ? "c10::reportOutOfMemoryToProfiler"
							 : "c10::OutOfMemoryError thrown");
		text_frames(f, gs_stack_table__get(stacks, t->stack_id));
		return;
	}
	if (!t->api) {
		fprintf(f, "TRIGGER %s: pid %d: chosen by the kernel OOM killer\n", t->kind,
			(int)t->pid);
		return;
	}
	gs_format_bytes(t->bytes_requested, b, sizeof(b));
	fprintf(f, "TRIGGER %s: pid %d: %s of %s failed with error %d %s\n", t->kind, (int)t->pid,
		gs_cuda_api_name(t->api), b, t->error,
		gs_cuda_error_name(api ? api->lib : GS_LIB_RUNTIME, t->error));
	text_frames(f, gs_stack_table__get(stacks, t->stack_id));
}

void gs_leak_report__write_text(FILE *f, const struct gs_leak_report *r,
				const struct gs_stack_table *stacks)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	uint64_t dropped = gs_losses_dropped(r->stats);

	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime_r(&now, &tm));
	fprintf(f, "[%s] gpusnoop leaks (%s report)", stamp, r->reason);
	if (r->min_age_s > 0)
		fprintf(f, ", allocations older than %.1fs", r->min_age_s);
	if (r->no_stacks)
		fprintf(f, ", stacks off (--stacks none)");
	else if (r->stack_sample > 1)
		fprintf(f,
			", stacks sampled 1/%u per call site (the others: their call site alone)",
			r->stack_sample);
	fputc('\n', f);
	if (r->trigger)
		text_trigger(f, r->trigger, stacks);
	if (!r->nr_procs && r->seen_allocations) {
		char b[32];

		gs_format_bytes(r->seen_bytes, b, sizeof(b));
		fprintf(f,
			"no outstanding CUDA allocations: everything allocated was freed "
			"(%" PRIu64 " allocation%s, %s)\n",
			r->seen_allocations, r->seen_allocations == 1 ? "" : "s", b);
	} else if (!r->nr_procs) {
		fprintf(f, "no CUDA allocations seen\n");
	}
	for (size_t i = 0; i < r->nr_procs; i++)
		text_proc(f, r, &r->procs[i], stacks);
	if (dropped)
		fprintf(f,
			"WARNING: %" PRIu64 " events were lost (ring buffer full: %" PRIu64
			"); counts may be incomplete\n",
			dropped, r->stats[GS_STAT_RINGBUF_FULL]);
	if (r->trigger) /* a trigger's report says it either way: was its window complete? */
		fprintf(f,
			"%s%" PRIu64
			" events lost in this report's window (since the previous report)\n",
			r->window_lost ? "WARNING: " : "", r->window_lost);
	else if (r->window_lost)
		fprintf(f, "WARNING: %" PRIu64 " of them lost since the previous report\n",
			r->window_lost);
	fputc('\n', f);
}

static void json_frames(struct gs_json *j, const struct gs_stack *s)
{
	gs_json__begin_array(j, "frames");
	for (uint32_t i = 0; s && i < s->nr_frames; i++)
		gs_frame_json(j, &s->frames[i]);
	gs_json__end_array(j);
}

static void json_device(struct gs_json *j, const struct gs_torch_device *d)
{
	char name[16];

	gs_torch_device_name(d->key, name, sizeof(name));
	gs_json__begin_object(j, NULL);
	gs_json__string(j, "device", name);
	gs_json__u64(j, "allocated_bytes", d->allocated);
	gs_json__u64(j, "tensors", d->tensors);
	if (d->key >> 8 != GS_TORCH_DEV_CPU) {
		gs_json__u64(j, "reserved_bytes", d->reserved);
		gs_json__u64(j, "cached_bytes",
			     d->reserved > d->allocated ? d->reserved - d->allocated : 0);
		gs_json__u64(j, "largest_free_segment", d->largest_free_segment);
		gs_json__u64(j, "segments", d->segments);
		gs_json__bool(j, "pytorch_counters", d->totals);
	}
	gs_json__end_object(j);
}

static void json_torch(struct gs_json *j, const struct gs_leak_report *r,
		       const struct gs_leak_proc_report *p, const struct gs_stack_table *stacks)
{
	const struct gs_torch_proc *tp = p->torch;
	char name[16];

	gs_json__begin_object(j, "torch");
	gs_json__string(j, "version", *tp->version ? tp->version : NULL);
	gs_json__string(j, "source", tp->source ? gs_torch_source_name(tp->source) : NULL);
	gs_json__u64(j, "tensor_bytes", p->tensor_bytes);
	gs_json__u64(j, "tensor_allocations", p->tensor_allocations);
	gs_json__u64(j, "unknown_frees", tp->unknown_frees);
	gs_json__u64(j, "failed_segments", tp->failed_segments);
	gs_json__u64(j, "ooms", tp->ooms);
	gs_json__begin_array(j, "devices");
	for (size_t i = 0; i < tp->nr_devs; i++)
		json_device(j, &tp->devs[i]);
	gs_json__end_array(j);
	gs_json__u64(j, "stacks_total", p->nr_tensor_groups);
	gs_json__begin_array(j, "stacks");
	for (size_t i = 0; i < shown(r, p->nr_tensor_groups); i++) {
		const struct gs_leak_group *g = &p->tensor_groups[i];

		gs_torch_device_name(g->api, name, sizeof(name));
		gs_json__begin_object(j, NULL);
		gs_json__u64(j, "bytes", g->bytes);
		gs_json__u64(j, "allocations", g->count);
		gs_json__double(j, "oldest_age_s", age_s(r, g->oldest_ts_ns));
		gs_json__string(j, "device", name);
		json_frames(j, gs_stack_table__get(stacks, g->stack_id));
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
	gs_json__end_object(j);
}

static void json_proc(struct gs_json *j, const struct gs_leak_report *r,
		      const struct gs_leak_proc_report *p, const struct gs_stack_table *stacks)
{
	gs_json__begin_object(j, NULL);
	gs_json__i64(j, "pid", p->pid);
	gs_json__string(j, "comm", p->comm);
	gs_json__i64(j, "ppid", p->ppid);
	gs_json__i64(j, "rank", p->rank);
	gs_json__i64(j, "local_rank", p->local_rank);
	gs_json__bool(j, "exited", p->exited);
	gs_json__bool(j, "exec", p->exec);
	gs_json__u64(j, "outstanding_bytes", p->outstanding_bytes);
	gs_json__u64(j, "outstanding_allocations", p->outstanding_allocations);
	/* pinned host memory is CUDA's but not the GPU's: apart, for an OOM's reader */
	gs_json__u64(j, "device_bytes", p->outstanding_bytes - p->pinned_bytes);
	gs_json__u64(j, "pinned_host_bytes", p->pinned_bytes);
	gs_json__u64(j, "pinned_host_allocations", p->pinned_allocations);
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
		if (g->stack_id == GS_FAIL_OTHER_STACK) {
			/* the groups past the per-process cap, folded into one */
			gs_json__string(j, "api", "[other failures]");
			gs_json__u64(j, "count", g->count);
			gs_json__u64(j, "bytes_requested", g->bytes_requested);
			gs_json__end_object(j);
			continue;
		}
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
	if (p->torch)
		json_torch(j, r, p, stacks);
	gs_json__end_object(j);
}

static void json_trigger(struct gs_json *j, const struct gs_leak_trigger *t,
			 const struct gs_stack_table *stacks)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(t->api);

	gs_json__begin_object(j, "trigger");
	gs_json__string(j, "kind", t->kind);
	gs_json__i64(j, "pid", t->pid);
	if (t->torch) {
		const struct gs_torch_oom_info *o = t->torch;
		char name[16];

		gs_torch_device_name(o->device, name, sizeof(name));
		gs_json__string(j, "source",
				o->source == GS_TORCH_OOM_REPORT ? "reportOutOfMemoryToProfiler"
								 : "OutOfMemoryError");
		gs_json__u64(j, "bytes_requested", o->requested);
		gs_json__bool(j, "requested_is_segment", o->requested_is_segment);
		gs_json__string(j, "device", name);
		if (o->source == GS_TORCH_OOM_REPORT) {
			gs_json__u64(j, "pytorch_allocated_bytes", o->allocated);
			gs_json__u64(j, "pytorch_reserved_bytes", o->reserved);
		}
		json_frames(j, gs_stack_table__get(stacks, t->stack_id));
		gs_json__end_object(j);
		return;
	}
	if (!t->api) {
		gs_json__end_object(j);
		return;
	}
	gs_json__string(j, "api", gs_cuda_api_name(t->api));
	gs_json__i64(j, "error", t->error);
	gs_json__string(j, "error_name",
			gs_cuda_error_name(api ? api->lib : GS_LIB_RUNTIME, t->error));
	gs_json__u64(j, "bytes_requested", t->bytes_requested);
	json_frames(j, gs_stack_table__get(stacks, t->stack_id));
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
	gs_json__string(&j, "stacks", r->no_stacks ? "none" : "user");
	if (!r->no_stacks && r->stack_sample > 1) /* 1/N per call site; the rest: the site alone */
		gs_json__u64(&j, "stack_sample", r->stack_sample);
	if (r->trigger)
		json_trigger(&j, r->trigger, stacks);
	gs_json__begin_array(&j, "processes");
	for (size_t i = 0; i < r->nr_procs; i++)
		json_proc(&j, r, &r->procs[i], stacks);
	gs_json__end_array(&j);
	gs_json__u64(&j, "allocations_seen", r->seen_allocations);
	gs_json__u64(&j, "bytes_allocated_seen", r->seen_bytes);
	gs_losses_write_json(&j, r->stats);
	/* whether this report's own window lost events, not only the session */
	gs_json__u64(&j, "window_lost_events", r->window_lost);
	gs_json__u64(&j, "window_start_ns", r->window_start_ns);
	gs_json__end_object(&j);
	fputc('\n', f);
}

static int cmp_group_bytes(const void *a, const void *b)
{
	const struct gs_leak_group *x = a, *y = b;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	return x->count > y->count ? -1 : x->count < y->count;
}

/*
 * The groups of one table, found by (stack, API) through a hash index of group positions:
 * memory in proportion to the groups, not to the allocations (a million of them would
 * otherwise need a 32 MiB array for the length of a report).
 */
struct grouping {
	struct gs_leak_group *groups;
	size_t nr, cap;
	struct gs_hash_index index;
};

/* a bijection of (stack_id, api): equal hashes are equal keys */
static uint64_t group_hash(uint32_t stack_id, uint16_t api)
{
	return gs_hash_u64((uint64_t)stack_id << 16 | api);
}

static int group_add(struct grouping *g, const struct gs_alloc *a)
{
	uint64_t hash = group_hash(a->stack_id, a->api);
	struct gs_leak_group *x;
	size_t pos;

	if (gs_hash_index__find(&g->index, hash, NULL, NULL, &pos)) {
		x = &g->groups[pos];
		x->bytes += a->size;
		x->count++;
		if (a->ts_ns < x->oldest_ts_ns)
			x->oldest_ts_ns = a->ts_ns;
		return 0;
	}
	if (GS_ARRAY_RESERVE(g->groups, g->nr, g->cap, 16) ||
	    gs_hash_index__add(&g->index, hash, g->nr))
		return -ENOMEM;
	g->groups[g->nr++] = (struct gs_leak_group){ .bytes = a->size,
						     .count = 1,
						     .oldest_ts_ns = a->ts_ns,
						     .stack_id = a->stack_id,
						     .api = a->api };
	return 0;
}

int gs_leak_group_table(const struct gs_alloc_table *t, uint64_t now, uint64_t min_age_ns,
			struct gs_leak_group **groups, size_t *nr, uint64_t *bytes, uint64_t *count)
{
	struct grouping g = { 0 };
	int err = 0;

	for (size_t i = 0, n = gs_alloc_table__slots(t); i < n && !err; i++) {
		const struct gs_alloc *a = gs_alloc_table__at(t, i);

		if (!a || now - a->ts_ns < min_age_ns)
			continue;
		err = group_add(&g, a);
		*bytes += a->size;
		*count += 1;
	}
	gs_hash_index__release(&g.index);
	if (err) {
		free(g.groups);
		return err;
	}
	qsort(g.groups, g.nr, sizeof(*g.groups), cmp_group_bytes);
	*groups = g.groups;
	*nr = g.nr;
	return 0;
}

int gs_leak_proc_report__build(struct gs_leak_proc_report *out, const struct gs_mem_model *m,
			       struct gs_mem_proc *p, const char *comm, uint64_t now,
			       uint64_t min_age_ns)
{
	struct gs_torch_proc *tp = gs_mem_model__torch_proc(m, p->pid);
	int err;

	memset(out, 0, sizeof(*out));
	out->pid = p->pid;
	out->comm = comm;
	out->rank = out->local_rank = -1; /* the caller knows the process tree */
	out->failed_allocations = p->failed_allocations;
	out->failed_frees = p->failed_frees;
	out->unknown_frees = p->unknown_frees;
	err = gs_leak_group_table(p->allocs, now, min_age_ns, &out->groups, &out->nr_groups,
				  &out->outstanding_bytes, &out->outstanding_allocations);
	for (size_t i = 0; !err && i < out->nr_groups; i++) {
		const struct gs_cuda_api *api = gs_cuda_api_get(out->groups[i].api);

		if (api && api->mem_kind == GS_MEM_HOST) {
			out->pinned_bytes += out->groups[i].bytes;
			out->pinned_allocations += out->groups[i].count;
		}
	}
	if (!err && tp) {
		gs_torch_proc__update(tp);
		out->torch = tp;
		err = gs_leak_group_table(tp->blocks, now, min_age_ns, &out->tensor_groups,
					  &out->nr_tensor_groups, &out->tensor_bytes,
					  &out->tensor_allocations);
	}
	if (err) {
		/* nothing to free for a caller that counts only the reports it got */
		gs_leak_proc_report__release(out);
		return err;
	}
	gs_fail_groups__sort(&p->fails);
	out->fails = p->fails.items;
	out->nr_fails = p->fails.nr;
	return 0;
}

void gs_leak_proc_report__release(struct gs_leak_proc_report *out)
{
	free(out->groups);
	free(out->tensor_groups);
	out->groups = out->tensor_groups = NULL;
	out->nr_groups = out->nr_tensor_groups = 0;
}

struct gs_leak_trigger gs_leak_trigger_cuda_oom(const struct gs_mem_alloc *e, uint32_t stack_id)
{
	return (struct gs_leak_trigger){
		.kind = "cuda-oom",
		.pid = (pid_t)e->hdr.pid,
		.api = e->api,
		.error = e->ret,
		.bytes_requested = e->size,
		.stack_id = stack_id,
	};
}

struct gs_leak_trigger gs_leak_trigger_torch_oom(pid_t pid, const struct gs_torch_oom_info *o)
{
	return (struct gs_leak_trigger){
		.kind = "torch-oom",
		.pid = pid,
		.bytes_requested = o->requested,
		.stack_id = o->stack_id,
		.torch = o,
	};
}
