// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gpu_rows.c: GPU records as Kineto-style trace rows, linked to their launch slices. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/timeline/gpu_rows.h"
#include "profilers/timeline/proc_ids.h"
#include "profilers/timeline/rank_files.h"
#include "profilers/timeline/trace_stats.h"
#include "profilers/cuda/cupti_clock.h"
#include "profilers/cuda/gpu_activity.h"
#include "profilers/cuda/gpu_correlate.h"
#include "profilers/proc_tree.h"
#include "profilers/cupti/cupti_abi.h"
#include "profilers/timeline/vocab.h"
#include "user/addr_map.h"
#include "user/demangle.h"
#include "user/log.h"

#define MAX_DEVICES 64
/* device and stream tracks named over all outputs: the library's records choose them */
#define MAX_TRACKS 1024
#define FLOW_CAT   GS_TL_CAT_FLOW /* Kineto's flows from a CPU launch to its GPU work */
#define FLOW_KEY   0 /* flow_procs key: the process's number in flow ids (proc_ids.h) */

/* a record waiting for the slice of its launch */
struct pending {
	struct gs_gpu_op op;
	char *name; /* owned: the kernel's name, demangled when it is a C++ name */
	pid_t pid;
	uint64_t arrived_ns;
	bool written; /* ahead of its turn: its process is gone */
};

struct counts {
	uint64_t records, linked, not_linked, no_timestamps, malformed, other_kinds;
	uint64_t cupti_dropped, names_truncated, api_calls;
	uint64_t beyond_tracks; /* on a device past MAX_DEVICES or a track past MAX_TRACKS */
};

struct gs_gpu_rows {
	struct gs_gpu_rows_emit emit;
	struct gs_gpu_correlate *corr;
	/* (output, track_key()) of the tracks named in each output */
	struct gs_addr_map *named;
	struct gs_addr_map *flow_procs; /* (pid, FLOW_KEY) -> its number in flow ids */
	uint64_t flow_procs_seen;
	struct pending *pending;
	size_t nr_pending, cap_pending, first_pending;
	struct counts n;
	struct gs_cupti_clock clock;
	bool rank_read;	       /* from the first process that made a CUDA call */
	long rank, world_size; /* -1: unknown */
};

struct gs_gpu_rows *gs_gpu_rows__new(const struct gs_gpu_rows_emit *emit)
{
	struct gs_gpu_rows *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->emit = *emit;
	g->rank = g->world_size = -1;
	g->corr = gs_gpu_correlate__new();
	g->named = gs_addr_map__new();
	g->flow_procs = gs_addr_map__new();
	if (!g->corr || !g->named || !g->flow_procs) {
		gs_gpu_rows__free(g);
		errno = ENOMEM;
		return NULL;
	}
	return g;
}

void gs_gpu_rows__set_clock(struct gs_gpu_rows *g, int64_t monotonic_to_realtime_ns)
{
	gs_cupti_clock__init(&g->clock, monotonic_to_realtime_ns);
}

void gs_gpu_rows__free(struct gs_gpu_rows *g)
{
	if (!g)
		return;
	for (size_t i = g->first_pending; i < g->nr_pending; i++)
		free(g->pending[i].name);
	free(g->pending);
	gs_gpu_correlate__free(g->corr);
	gs_addr_map__free(g->named);
	gs_addr_map__free(g->flow_procs);
	free(g);
}

/* The id of the flow from pid's call with this CUPTI correlation id to its GPU work, or 0. */
static uint64_t flow_id(struct gs_gpu_rows *g, pid_t pid, uint32_t correlation)
{
	return gs_proc_id(g->flow_procs, FLOW_KEY, &g->flow_procs_seen, pid, correlation);
}

/* pid's ranks through proc_tree's bounded reader: RANK or its MPI/Slurm kin, else the local one */
static int read_rank(struct gs_gpu_rows *g, pid_t pid)
{
	int32_t rank, local_rank, world_size;
	int err = gs_read_rank_env(pid, &rank, &local_rank, &world_size);

	if (err)
		return err;
	g->rank = rank >= 0 ? rank : local_rank;
	g->world_size = world_size;
	return 0;
}

void gs_gpu_rows__default_rank(struct gs_gpu_rows *g)
{
	/* gpusnoop's own environment: a recording started inside a rank's job step */
	if (!g->rank_read)
		read_rank(g, getpid());
}

/* A device's track (stream NULL) or a stream's, as a key of g->named. */
static uint64_t track_key(uint32_t device, const uint32_t *stream)
{
	return (uint64_t)device << 33 | (stream ? (uint64_t)*stream + 1 : 0);
}

/*
 * The track names of a device (pid) and a stream (tid), once each in each output. False,
 * with nothing named, for a device past MAX_DEVICES or a new track past MAX_TRACKS.
 */
static bool name_tracks(struct gs_gpu_rows *g, const struct gs_gpu_op *op, pid_t pid)
{
	pid_t out = g->emit.output ? (pid_t)g->emit.output(g->emit.ctx, pid) : 0;
	char name[32];
	uint64_t seen;

	if (op->device >= MAX_DEVICES ||
	    (!gs_addr_map__get(g->named, out, track_key(op->device, &op->stream), &seen) &&
	     gs_addr_map__count(g->named) + 2 > MAX_TRACKS))
		return false;
	if (!gs_addr_map__get(g->named, out, track_key(op->device, NULL), &seen)) {
		snprintf(name, sizeof(name), "GPU %u", op->device);
		gs_chrome_trace__process_name(g->emit.begin(g->emit.ctx, pid, op->start_ns),
					      op->device, name);
		g->emit.end(g->emit.ctx);
		gs_addr_map__set(g->named, out, track_key(op->device, NULL), 1);
	}
	if (!gs_addr_map__get(g->named, out, track_key(op->device, &op->stream), &seen)) {
		snprintf(name, sizeof(name), "stream %u", op->stream);
		gs_chrome_trace__thread_name(g->emit.begin(g->emit.ctx, pid, op->start_ns),
					     op->device, op->stream, name);
		g->emit.end(g->emit.ctx);
		gs_addr_map__set(g->named, out, track_key(op->device, &op->stream), 1);
	}
	return true;
}

static void dims_arg(struct gs_json *j, const char *key, const int32_t dims[3])
{
	gs_json__begin_array(j, key);
	for (int i = 0; i < 3; i++)
		gs_json__i64(j, NULL, dims[i]);
	gs_json__end_array(j);
}

/* Kineto's args of GPU work, so Holistic Trace Analysis reads them as it reads Kineto's. */
static void op_args(struct gs_json *j, const struct gs_gpu_op *op)
{
	uint64_t ns = op->end_ns - op->start_ns;

	gs_json__u64(j, "device", op->device);
	gs_json__u64(j, "context", op->context);
	gs_json__u64(j, "stream", op->stream);
	gs_json__u64(j, "correlation", op->correlation);
	if (op->kind == GS_GPU_KERNEL) {
		gs_json__u64(j, "registers per thread", op->registers);
		gs_json__u64(j, "shared memory", op->shared_mem);
		dims_arg(j, "grid", op->grid);
		dims_arg(j, "block", op->block);
		return;
	}
	gs_json__u64(j, "bytes", op->bytes);
	gs_json__double(j, "memory bandwidth (GB/s)", ns ? (double)op->bytes / (double)ns : 0.0);
}

/* An X event on the device's row of the stream; a flow's end when its launch was seen. */
static void render_op(struct gs_gpu_rows *g, const struct pending *p, bool linked)
{
	const struct gs_gpu_op *op = &p->op;
	const char *name = p->name ? p->name : "[unnamed kernel]";
	uint64_t flow = linked ? flow_id(g, p->pid, op->correlation) : 0;
	struct gs_chrome_trace *t;
	char dur[32], title[64];
	struct gs_json *j;

	if (!name_tracks(g, op, p->pid)) {
		g->n.beyond_tracks++; /* counted, not written */
		return;
	}
	if (op->kind == GS_GPU_MEMCPY) {
		snprintf(title, sizeof(title), "Memcpy %s", gs_gpu_copy_kind_name(op->copy_kind));
		name = title;
	} else if (op->kind == GS_GPU_MEMSET) {
		name = "Memset";
	}
	t = g->emit.begin(g->emit.ctx, p->pid, op->start_ns);
	j = gs_chrome_trace__event(t, "X", name, gs_gpu_op_category(op->kind), op->device,
				   op->stream, op->start_ns);
	gs_chrome_trace_format_us(op->end_ns - op->start_ns, dur, sizeof(dur));
	gs_json__raw(j, "dur", dur);
	gs_json__begin_object(j, "args");
	op_args(j, op);
	gs_json__end_object(j);
	gs_chrome_trace__end_event(t);
	g->emit.end(g->emit.ctx);
	if (g->emit.row) /* the summary counts the row as written */
		g->emit.row(g->emit.ctx, &(struct gs_stats_row){
						 .ph = 'X',
						 .name = name,
						 .cat = gs_gpu_op_category(op->kind),
						 .pid = op->device,
						 .ts_ns = (int64_t)op->start_ns,
						 .dur_ns = op->end_ns - op->start_ns,
						 .has_bytes = op->kind != GS_GPU_KERNEL,
						 .bytes = op->kind != GS_GPU_KERNEL ? op->bytes : 0,
					 });
	if (!flow)
		return;
	t = g->emit.begin(g->emit.ctx, p->pid, op->start_ns);
	j = gs_chrome_trace__event(t, "f", FLOW_CAT, FLOW_CAT, op->device, op->stream,
				   op->start_ns);
	gs_json__u64(j, "id", flow);
	gs_json__string(j, "bp", "e");
	gs_chrome_trace__end_event(t);
	g->emit.end(g->emit.ctx);
}

/* Links, counts and writes the oldest pending record. */
static void write_pending(struct gs_gpu_rows *g, struct pending *p)
{
	bool linked = gs_gpu_correlate__launched(g->corr, p->pid, p->op.correlation);

	if (p->written)
		return;
	p->written = true;
	if (linked)
		g->n.linked++;
	else
		g->n.not_linked++;
	render_op(g, p, linked);
	free(p->name);
	p->name = NULL;
}

void gs_gpu_rows__advance(struct gs_gpu_rows *g, uint64_t now_ns)
{
	while (g->first_pending < g->nr_pending) {
		struct pending *p = &g->pending[g->first_pending];

		if (!p->written && now_ns != UINT64_MAX &&
		    p->arrived_ns + GS_GPU_ROWS_LINK_DELAY_NS > now_ns)
			break;
		write_pending(g, p);
		g->first_pending++;
	}
	/* what is left moves to the front: the queue holds one delay's worth, not a run's */
	if (!g->first_pending)
		return;
	memmove(g->pending, g->pending + g->first_pending,
		(g->nr_pending - g->first_pending) * sizeof(*g->pending));
	g->nr_pending -= g->first_pending;
	g->first_pending = 0;
}

/* Takes name (owned, may be NULL) with the record into the queue. */
static int queue(struct gs_gpu_rows *g, const struct gs_gpu_record *e, const struct gs_gpu_op *op,
		 char *name)
{
	struct pending *p, *grown;

	if (g->nr_pending == g->cap_pending) {
		size_t cap = g->cap_pending ? g->cap_pending * 2 : 1024;

		grown = realloc(g->pending, cap * sizeof(*grown));
		if (!grown) {
			free(name);
			return -ENOMEM;
		}
		g->pending = grown;
		g->cap_pending = cap;
	}
	p = &g->pending[g->nr_pending];
	*p = (struct pending){
		.op = *op, .name = name, .pid = (pid_t)e->hdr.pid, .arrived_ns = e->hdr.ts_ns
	};
	p->op.name = NULL; /* borrowed from the ring buffer: gone after this call */
	g->nr_pending++;
	return 0;
}

/* Kineto shows kernels demangled. Sets -ENOMEM in *err when a name could not be kept. */
static char *kernel_name(const struct gs_gpu_op *op, int *err)
{
	char *name;

	if (!op->name)
		return NULL;
	name = gs_demangle(op->name);
	if (!name)
		name = strdup(op->name);
	if (!name)
		*err = -ENOMEM;
	return name;
}

static int on_record(struct gs_gpu_rows *g, const struct gs_gpu_record *e, size_t size)
{
	struct gs_gpu_op op;
	int err = gs_gpu_op_decode(e, size, &op);
	char *name;

	g->n.records++;
	if (err == -ENOENT) {
		g->n.other_kinds++;
		return 0;
	}
	if (err == -ERANGE) {
		g->n.no_timestamps++;
		return 0;
	}
	if (err) {
		g->n.malformed++;
		return 0;
	}
	gs_cupti_clock__map(&g->clock, &op.start_ns, &op.end_ns);
	if (e->flags & GS_GPU_F_NAME_TRUNCATED)
		g->n.names_truncated++;
	name = kernel_name(&op, &err);
	op.name = name;
	if (err) {
		free(name);
		return err;
	}
	return queue(g, e, &op, name);
}

int gs_gpu_rows__event(struct gs_gpu_rows *g, const struct gs_event_hdr *hdr, size_t size)
{
	const struct gs_gpu_api *api = (const void *)hdr;

	switch (hdr->type) {
	case GS_EV_GPU_RECORD:
		return on_record(g, (const void *)hdr, size);
	case GS_EV_GPU_API:
		g->n.api_calls++;
		/* while the process is surely alive: it is inside a CUDA call */
		if (!g->rank_read && !read_rank(g, (pid_t)hdr->pid))
			g->rank_read = true;
		return gs_gpu_correlate__api(g->corr, (pid_t)hdr->pid, (pid_t)hdr->tid, hdr->ts_ns,
					     api->correlation, api->domain);
	case GS_EV_GPU_DROPPED:
		g->n.cupti_dropped += ((const struct gs_gpu_dropped *)hdr)->records;
		return 0;
	case GS_EV_GPU_CLOCK: {
		const struct gs_gpu_clock *c = (const void *)hdr;

		gs_cupti_clock__check(&g->clock, c->mono_before, c->cupti_ns, c->mono_after);
		return 0;
	}
	default:
		return 0;
	}
}

uint32_t gs_gpu_rows__slice_args(struct gs_gpu_rows *g, struct gs_json *j,
				 const struct gs_event_hdr *hdr, uint64_t entry_ns, bool driver)
{
	uint32_t id = gs_gpu_correlate__slice(
		g->corr, (pid_t)hdr->pid, (pid_t)hdr->tid, entry_ns, hdr->ts_ns,
		driver ? GS_CUPTI_DOMAIN_DRIVER_API : GS_CUPTI_DOMAIN_RUNTIME_API);

	if (id)
		gs_json__u64(j, "correlation", id);
	return id;
}

void gs_gpu_rows__slice_flow(struct gs_gpu_rows *g, const struct gs_event_hdr *hdr,
			     uint64_t entry_ns, uint32_t correlation)
{
	uint64_t flow = correlation ? flow_id(g, (pid_t)hdr->pid, correlation) : 0;
	struct gs_chrome_trace *t;
	struct gs_json *j;

	if (!flow)
		return;
	t = g->emit.begin(g->emit.ctx, (pid_t)hdr->pid, entry_ns);
	j = gs_chrome_trace__event(t, "s", FLOW_CAT, FLOW_CAT, hdr->pid, hdr->tid, entry_ns);
	gs_json__u64(j, "id", flow);
	gs_chrome_trace__end_event(t);
	g->emit.end(g->emit.ctx);
}

void gs_gpu_rows__proc_gone(struct gs_gpu_rows *g, pid_t pid)
{
	/* its launches were all seen: the process made no call after its last record */
	for (size_t i = g->first_pending; i < g->nr_pending; i++)
		if (g->pending[i].pid == pid)
			write_pending(g, &g->pending[i]);
	gs_gpu_rows__advance(g, 0); /* only drops what was written from the front */
	gs_gpu_correlate__forget_pid(g->corr, pid);
	/* a new image, or a new process with this pid, counts its correlation ids anew */
	gs_addr_map__forget_pid(g->flow_procs, pid, NULL);
}

void gs_gpu_rows__top_level(struct gs_gpu_rows *g, struct gs_json *j, size_t output,
			    const long *rank)
{
	uint64_t seen;

	gs_json__begin_array(j, "deviceProperties");
	for (uint32_t i = 0; i < MAX_DEVICES; i++) {
		if (!gs_addr_map__get(g->named, (pid_t)output, track_key(i, NULL), &seen))
			continue;
		gs_json__begin_object(j, NULL);
		gs_json__u64(j, "id", i);
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
	gs_rank_files__distributed_info(j, rank ? *rank : g->rank, g->world_size);
}

void gs_gpu_rows__metadata(struct gs_gpu_rows *g, struct gs_json *j)
{
	gs_json__begin_object(j, "gpu");
	gs_json__u64(j, "records", g->n.records);
	gs_json__u64(j, "linked", g->n.linked);
	gs_json__u64(j, "not_linked", g->n.not_linked);
	gs_json__u64(j, "api_calls", g->n.api_calls);
	gs_json__u64(j, "cupti_dropped", g->n.cupti_dropped);
	gs_json__u64(j, "no_timestamps", g->n.no_timestamps);
	gs_json__u64(j, "malformed", g->n.malformed);
	gs_json__u64(j, "other_kinds", g->n.other_kinds);
	gs_json__u64(j, "names_truncated", g->n.names_truncated);
	gs_json__u64(j, "beyond_track_cap", g->n.beyond_tracks);
	gs_json__begin_object(j, "clock");
	gs_json__string(j, "method", gs_cupti_clock__method(&g->clock));
	gs_json__u64(j, "checks", g->clock.checks);
	gs_json__u64(j, "max_error_ns", g->clock.max_error_ns);
	gs_json__end_object(j);
	gs_json__end_object(j);
}

void gs_gpu_rows__summary(struct gs_gpu_rows *g, FILE *f)
{
	if (!g)
		return;
	if (g->n.records || g->n.api_calls)
		fprintf(f,
			"  GPU records: %" PRIu64 ", %" PRIu64 " linked to their launch, %" PRIu64
			" not; CUPTI dropped %" PRIu64 "\n",
			g->n.records, g->n.linked, g->n.not_linked, g->n.cupti_dropped);
	else /* say why the trace has no GPU rows, where the user looks */
		fprintf(f,
			"  GPU records: none: no traced process started CUDA with the injection "
			"library working (where it loaded, it says why on the process's stderr)\n");
}
