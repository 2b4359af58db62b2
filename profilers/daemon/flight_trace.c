// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* flight_trace.c: the daemon's flight-recorder window replayed through the timeline engine. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "profilers/cuda/api.h"
#include "profilers/daemon/flight_recorder.h"
#include "profilers/daemon/flight_trace.h"
#include "profilers/leak_report.h"
#include "profilers/timeline/engine.h"
#include "profilers/timeline/names.h"
#include "stitch/trace_writer.h"
#include "user/addr_map.h"
#include "user/clock.h"
#include "user/losses.h"
#include "user/perfetto_json.h"
#include "user/stack_table.h"

/* the window is written whole at its end: the writer holds (and orders) all of it */
#define HOLD_ALL_NS (UINT64_MAX / 2)
/* what the process held before the window and never freed in it: one entry, never drawn */
#define BEFORE_WINDOW_PTR UINT64_MAX

/*
 * The window's events become the tracker's records again and go through the engine's own
 * handlers, so a flight trace has record's rows by construction. The engine's memory model
 * starts from what the process held when the window opened: the allocations the window
 * frees without having seen them (their sizes are the daemon's), and the rest as one entry.
 */
struct replay {
	struct gs_timeline tl;
	struct gs_tracker_ops ops;
	const struct gs_flight_trace *ft;
	struct gs_addr_map *seen; /* pointers the window allocated or seeded */
	int64_t net;		  /* device bytes the window added */
	int64_t seeded;		  /* device bytes seeded for the window's frees */
	uint64_t events;
	int err;
};

static bool is_host(uint16_t api_id)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(api_id);

	return api && api->mem_kind == GS_MEM_HOST;
}

/* An allocation the model holds before the window (its API decides device or pinned). */
static int seed(struct replay *r, uint64_t ptr, uint64_t size, uint16_t api, uint64_t ts_ns)
{
	struct gs_mem_alloc a = { .hdr = { .type = GS_EV_MEM_ALLOC,
					   .size = sizeof(a),
					   .ts_ns = ts_ns,
					   .pid = (__u32)r->ft->pid,
					   .tid = (__u32)r->ft->pid },
				  .ptr = ptr,
				  .size = size,
				  .entry_ts_ns = ts_ns,
				  .api = api };
	struct gs_mem_effect fx;

	return gs_mem_model__alloc(&r->tl.mem, &a, &fx);
}

/* first pass: the window's device delta, and the frees of what came before it */
static void seed_event(void *ctx, const struct gs_flight_event *e)
{
	struct replay *r = ctx;
	pid_t pid = r->ft->pid;
	int64_t size = is_host(e->api) ? 0 : (int64_t)e->size;
	uint64_t v;

	if (r->err || !e->ptr || e->kind == GS_FLIGHT_FAILED)
		return;
	r->net += e->kind == GS_FLIGHT_ALLOC ? size : -size;
	if (e->kind == GS_FLIGHT_FREE && e->size && !gs_addr_map__get(r->seen, pid, e->ptr, &v)) {
		r->err = seed(r, e->ptr, e->size, e->api, e->entry_ts_ns);
		r->seeded += size;
	}
	if (!r->err && gs_addr_map__set(r->seen, pid, e->ptr, 1))
		r->err = -ENOMEM;
}

/* An allocation's stack as its return addresses again (none for an "[other stacks]" id). */
static void stack_frames(const struct replay *r, uint32_t id, __u64 *frames, __u16 *nr)
{
	const struct gs_stack *s = gs_stack_table__get(r->ft->stacks, id);

	*nr = 0;
	if (!s || !s->addrs || s->other)
		return;
	*nr = (__u16)(s->nr_frames < GS_MAX_STACK ? s->nr_frames : GS_MAX_STACK);
	memcpy(frames, s->addrs, *nr * sizeof(*frames));
}

static void replay_free(struct replay *r, const struct gs_flight_event *e)
{
	struct gs_event_hdr hdr = { .size = sizeof(struct gs_mem_free),
				    .ts_ns = e->ts_ns,
				    .pid = (__u32)r->ft->pid,
				    .tid = e->tid };
	struct gs_mem_free f = { .hdr = hdr, .ptr = e->ptr, .api = e->api };
	/* the window keeps a free's entry only: its slice lasts 0 */
	struct gs_mem_free_ret ret = {
		.hdr = hdr, .ptr = e->ptr, .entry_ts_ns = e->ts_ns, .api = e->api
	};

	f.hdr.type = GS_EV_MEM_FREE;
	ret.hdr.type = GS_EV_MEM_FREE_RET;
	ret.hdr.size = sizeof(ret);
	r->ops.mem_free(r->ops.ctx, &f);
	r->ops.mem_free_ret(r->ops.ctx, &ret);
}

/* second pass: each event through the handler the tracker would have called */
static void replay_event(void *ctx, const struct gs_flight_event *e)
{
	struct replay *r = ctx;
	struct gs_mem_alloc a;

	r->events++;
	if (e->kind == GS_FLIGHT_FREE) {
		replay_free(r, e);
		return;
	}
	a = (struct gs_mem_alloc){ .hdr = { .type = GS_EV_MEM_ALLOC,
					    .size = sizeof(a),
					    .ts_ns = e->ts_ns,
					    .pid = (__u32)r->ft->pid,
					    .tid = e->tid },
				   .ptr = e->ptr,
				   .size = e->size,
				   .entry_ts_ns = e->entry_ts_ns,
				   .ret = e->ret,
				   .api = e->api };
	stack_frames(r, e->stack_id, a.frames, &a.nr_frames);
	r->ops.mem_alloc(r->ops.ctx, &a);
}

/* The engine's parts on out: rows of CUDA memory calls; the stacks are the daemon's. */
static int open_engine(struct replay *r, FILE *out)
{
	const struct gs_flight_trace *ft = r->ft;

	r->tl.tracker = ft->tracker;
	r->tl.families = GS_FAM_BIT(GS_FAM_MEM);
	r->tl.stacks = ft->stacks;
	r->tl.named = gs_timeline_names__new();
	r->tl.outputs = gs_addr_map__new();
	r->tl.stats = gs_trace_stats__new();
	r->tl.writer = gs_trace_writer__new(out, HOLD_ALL_NS);
	r->seen = gs_addr_map__new();
	gs_mem_model__init(&r->tl.mem, ft->stacks, ft->symcache, false);
	gs_timeline__tracker_ops(&r->tl, &r->ops);
	if (!r->tl.named || !r->tl.outputs || !r->tl.stats || !r->tl.writer || !r->seen)
		return -ENOMEM;
	return 0;
}

static void close_engine(struct replay *r)
{
	gs_timeline__release(&r->tl);
	gs_mem_model__release(&r->tl.mem);
	gs_trace_writer__free(r->tl.writer);
	gs_trace_stats__free(r->tl.stats);
	gs_addr_map__free(r->tl.outputs);
	gs_timeline_names__free(r->tl.named);
	gs_addr_map__free(r->seen);
}

/* The window's rows, from the state the process had when it opened. */
static int replay(struct replay *r)
{
	const struct gs_flight_trace *ft = r->ft;
	int64_t before;

	gs_flight_recorder__each(ft->fr, ft->pid, ft->now_ns, seed_event, r);
	/* frees of memory allocated before the daemon saw the process: never below 0 */
	before = (int64_t)ft->outstanding_now - r->net - r->seeded;
	if (!r->err && before > 0)
		r->err = seed(r, BEFORE_WINDOW_PTR, (uint64_t)before, 0, ft->now_ns);
	if (r->err)
		return r->err;
	gs_flight_recorder__each(ft->fr, ft->pid, ft->now_ns, replay_event, r);
	gs_timeline__trigger(&r->tl, ft->pid, ft->now_ns, ft->trigger->kind);
	gs_timeline__flush(&r->tl);
	gs_timeline__write_names(&r->tl, 0);
	return r->tl.error;
}

static void write_metadata(struct replay *r)
{
	const struct gs_flight_trace *ft = r->ft;
	uint64_t real_ns = gs_clock_ns(CLOCK_REALTIME), mono_ns = gs_clock_ns(CLOCK_MONOTONIC);
	struct gs_json *j;
	char host[256];

	/* a rank's process: its rank, where HTA finds it, as record's files have it */
	gs_timeline__top_level(&r->tl, 0);
	j = gs_trace_writer__metadata(r->tl.writer);

	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	gs_json__string(j, "tool", "gpusnoop daemon flight recorder");
	gs_json__string(j, "gpusnoop_version", GS_VERSION);
	gs_json__string(j, "host", host);
	gs_json__string(j, "trigger", ft->trigger->kind);
	gs_json__i64(j, "pid", ft->pid);
	gs_json__u64(j, "events", r->events); /* the window's calls; rows: the engine's count */
	gs_json__u64(j, "rows", r->tl.events);
	gs_json__u64(j, "outstanding_bytes", ft->outstanding_now);
	gs_json__i64(j, "monotonic_to_realtime_ns", (int64_t)(real_ns - mono_ns));
	/* what the window may miss: the session's losses, those since the previous report,
	 * and the calls the recorder had no memory for (the JSON report says the same) */
	if (ft->stats)
		gs_losses_write_json(j, ft->stats);
	gs_json__u64(j, "window_lost_events", ft->window_lost);
	gs_json__u64(j, "window_start_ns", ft->window_start_ns);
	gs_json__u64(j, "flight_recorder_nomem", ft->flight_nomem);
	gs_trace_writer__finish(r->tl.writer);
}

int gs_flight_trace__write(FILE *f, const struct gs_flight_trace *ft)
{
	struct replay r = { .ft = ft };
	struct gs_perfetto_json *pj = NULL;
	int err;

	if (ft->perfetto) { /* the same rows, encoded as record --format perfetto does */
		pj = gs_perfetto_json__new(f);
		if (!pj)
			return -ENOMEM;
	}
	err = open_engine(&r, pj ? gs_perfetto_json__file(pj) : f);
	if (!err && pj)
		gs_trace_writer__row_sink(r.tl.writer, gs_perfetto_json__row, pj);
	err = err ?: replay(&r);
	if (!err)
		write_metadata(&r);
	close_engine(&r);
	if (pj) {
		int perr = gs_perfetto_json__close(pj);

		err = err ?: perr;
	}
	if (!err && (fflush(f) || ferror(f)))
		err = -(errno ? errno : EIO);
	return err;
}
