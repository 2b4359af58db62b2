// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mem_model.c: where each memory event goes (raw CUDA, PyTorch segment, tensor), decided once. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cuda/api.h"
#include "profilers/mem_model.h"
#include "user/stack_table.h"

void gs_mem_model__init(struct gs_mem_model *m, struct gs_stack_table *stacks,
			struct gs_symcache *symcache, bool torch_on)
{
	gs_mem_accounting__init(&m->raw, stacks);
	gs_torch_acct__init(&m->torch, stacks, symcache);
	m->torch_on = torch_on;
	m->snap = NULL;
}

void gs_mem_model__release(struct gs_mem_model *m)
{
	gs_mem_accounting__release(&m->raw);
	gs_torch_acct__release(&m->torch);
	if (m->snap)
		gs_torch_snap__release(m->snap);
	free(m->snap);
	m->snap = NULL;
}

int gs_mem_model__snapshots(struct gs_mem_model *m, size_t max_entries)
{
	if (!m->snap) {
		m->snap = calloc(1, sizeof(*m->snap));
		if (!m->snap)
			return -ENOMEM;
	}
	gs_torch_snap__init(m->snap, max_entries);
	return 0;
}

int gs_mem_model__write_snapshot(struct gs_mem_model *m, pid_t pid, uint64_t now_ns, FILE *f)
{
	struct gs_torch_proc *tp = gs_torch_acct__find(&m->torch, pid);
	struct gs_torch_snap empty;
	int err;

	if (tp)
		gs_torch_proc__update(tp);
	if (m->snap)
		return gs_torch_snap__write(m->snap, pid, tp, m->torch.stacks, now_ns, f);
	gs_torch_snap__init(&empty, 1); /* no history kept: segments and blocks only */
	err = gs_torch_snap__write(&empty, pid, tp, m->torch.stacks, now_ns, f);
	gs_torch_snap__release(&empty);
	return err;
}

/*
 * The snapshot's trace (m->snap): what the caching allocator did, as PyTorch's
 * _record_memory_history would have recorded it. A failure to record costs the entry only.
 */
static void snap_add(struct gs_mem_model *m, const struct gs_event_hdr *hdr, uint8_t action,
		     const struct gs_alloc *a, const __u64 *frames, uint16_t nr)
{
	struct gs_snap_entry e = {
		.ts_ns = hdr->ts_ns,
		.addr = a->ptr,
		.size = a->size,
		.stack_id = a->stack_id,
		.dev = a->api,
		.action = action,
		.flags = a->in_use ? GS_SNAP_F_STACK : 0,
	};
	int64_t id;

	if (frames && nr) {
		id = gs_stack_table__intern(m->torch.stacks, (pid_t)hdr->pid,
					    (const uint64_t *)frames, nr);
		if (id >= 0) {
			e.stack_id = (uint32_t)id;
			e.flags |= GS_SNAP_F_STACK;
		}
	}
	gs_torch_snap__record(m->snap, (pid_t)hdr->pid, &e);
}

/* a copy of pid's segment at ptr, when snapshots are kept and there is one */
static bool snap_segment(struct gs_mem_model *m, pid_t pid, uint64_t ptr, struct gs_alloc *out)
{
	struct gs_torch_proc *tp = m->snap ? gs_torch_acct__find(&m->torch, pid) : NULL;
	const struct gs_alloc *a = tp ? gs_alloc_table__find(tp->segments, ptr) : NULL;

	if (a) {
		*out = *a;
		out->in_use = 0; /* segments keep no stack */
	}
	return a;
}

int gs_mem_model__alloc(struct gs_mem_model *m, const struct gs_mem_alloc *e,
			struct gs_mem_effect *fx)
{
	/*
	 * What the caching allocator (libc10_cuda) allocates is PyTorch's reserved memory, not
	 * a raw allocation; a failed one is no OOM either: the allocator frees its cache and
	 * retries, and PyTorch's own OOM follows if that fails too.
	 */
	if (m->torch_on && gs_torch_acct__segment_alloc(&m->torch, e)) {
		struct gs_alloc seg = { .ptr = e->ptr,
					.size = e->size,
					.api = GS_TORCH_DEV_UNKNOWN };

		*fx = (struct gs_mem_effect){ .route = GS_ROUTE_SEGMENT };
		if (m->snap && !e->ret && e->ptr)
			snap_add(m, &e->hdr, GS_SNAP_SEGMENT_ALLOC, &seg, e->frames, e->nr_frames);
		return 0;
	}
	*fx = (struct gs_mem_effect){
		.route = GS_ROUTE_RAW,
		.cuda_oom = e->ret == GS_CUDA_ERROR_OUT_OF_MEMORY,
	};
	return gs_mem_accounting__alloc(&m->raw, e, &fx->stack_id);
}

int gs_mem_model__free(struct gs_mem_model *m, const struct gs_mem_free *e,
		       struct gs_mem_effect *fx)
{
	struct gs_alloc freed, seg;
	bool snap = snap_segment(m, (pid_t)e->hdr.pid, e->ptr, &seg);

	/*
	 * The segment table first. An allocation is classified once, by its caller, when it is
	 * made; its free can only be classified by the pointer. The segment table knows its
	 * pointers exactly, while the raw accounting takes any pointer it does not hold for an
	 * unknown free: asked first, it would count every segment free as one (or, holding the
	 * segments as well, count PyTorch's reserved memory twice).
	 */
	if (m->torch_on && gs_torch_acct__segment_free(&m->torch, e)) {
		*fx = (struct gs_mem_effect){ .route = GS_ROUTE_SEGMENT };
		if (snap)
			snap_add(m, &e->hdr, GS_SNAP_SEGMENT_FREE, &seg, NULL, 0);
		return 0;
	}
	*fx = (struct gs_mem_effect){ .route = GS_ROUTE_RAW };
	if (gs_mem_accounting__free(&m->raw, e, &freed))
		fx->freed_size = freed.size;
	/* only the process entry can have failed to be made */
	return gs_mem_accounting__find(&m->raw, (pid_t)e->hdr.pid) ? 0 : -ENOMEM;
}

int gs_mem_model__free_ret(struct gs_mem_model *m, const struct gs_mem_free_ret *e,
			   struct gs_mem_effect *fx)
{
	/* a segment left its table at the free's entry: a failed free only concerns raw ones */
	*fx = (struct gs_mem_effect){ .route = GS_ROUTE_RAW };
	fx->restored = gs_mem_accounting__free_ret(&m->raw, e);
	return 0;
}

/* A mapping made outside PyTorch (JAX, NCCL, a custom VMM allocator): raw device memory */
static int raw_map(struct gs_mem_model *m, const struct gs_cuda_call *e, struct gs_mem_effect *fx)
{
	struct gs_mem_alloc a = {
		.hdr = e->hdr,
		.ptr = e->args[0],
		.size = e->args[1],
		.entry_ts_ns = e->entry_ts_ns,
		.api = e->api,
		.nr_frames = e->nr_frames < GS_MAX_STACK ? e->nr_frames : GS_MAX_STACK,
	};

	memcpy(a.frames, e->frames, a.nr_frames * sizeof(a.frames[0]));
	fx->route = GS_ROUTE_RAW;
	return gs_mem_accounting__alloc(&m->raw, &a, &fx->stack_id);
}

static int raw_unmap(struct gs_mem_model *m, const struct gs_cuda_call *e, struct gs_mem_effect *fx)
{
	struct gs_mem_free f = { .hdr = e->hdr, .ptr = e->args[0], .api = e->api };
	struct gs_alloc freed;

	fx->route = GS_ROUTE_RAW;
	if (gs_mem_accounting__free(&m->raw, &f, &freed))
		fx->freed_size = freed.size;
	return gs_mem_accounting__find(&m->raw, (pid_t)e->hdr.pid) ? 0 : -ENOMEM;
}

int gs_mem_model__cuda_call(struct gs_mem_model *m, const struct gs_cuda_call *e,
			    struct gs_mem_effect *fx)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);
	struct gs_alloc seg = { .ptr = e->args[0],
				.size = e->args[1],
				.api = GS_TORCH_DEV_UNKNOWN };
	bool had;

	*fx = (struct gs_mem_effect){ .route = GS_ROUTE_NONE };
	if (!api || e->ret || (api->shape != GS_SHAPE_MAP && api->shape != GS_SHAPE_UNMAP))
		return 0;
	/*
	 * cuMemMap/cuMemUnmap: the pages of PyTorch's expandable segments, or device memory
	 * of any other VMM user. The calls are probed on the driver's code, so a caller that
	 * got them through cuGetProcAddress (PyTorch 2.15) is seen like one that linked them.
	 */
	if (api->shape == GS_SHAPE_MAP) {
		if (m->torch_on &&
		    gs_torch_acct__segment_map(&m->torch, &e->hdr, e->args[0], e->args[1],
					       e->frames, e->nr_frames)) {
			if (m->snap)
				snap_add(m, &e->hdr, GS_SNAP_SEGMENT_MAP, &seg, e->frames,
					 e->nr_frames);
			fx->route = GS_ROUTE_SEGMENT;
			return 0;
		}
		return e->args[0] ? raw_map(m, e, fx) : 0;
	}
	had = snap_segment(m, (pid_t)e->hdr.pid, e->args[0], &seg);
	if (m->torch_on && gs_torch_acct__segment_unmap(&m->torch, &e->hdr, e->args[0])) {
		if (had)
			snap_add(m, &e->hdr, GS_SNAP_SEGMENT_UNMAP, &seg, NULL, 0);
		fx->route = GS_ROUTE_SEGMENT;
		return 0;
	}
	return raw_unmap(m, e, fx);
}

/* a copy of pid's tensor block at ptr, when snapshots are kept and there is one */
static bool snap_block(struct gs_mem_model *m, pid_t pid, uint64_t ptr, struct gs_alloc *out)
{
	struct gs_torch_proc *tp = m->snap ? gs_torch_acct__find(&m->torch, pid) : NULL;
	const struct gs_alloc *a = tp ? gs_alloc_table__find(tp->blocks, ptr) : NULL;

	if (a)
		*out = *a;
	return a;
}

/* a tensor event the accounting took; old: the block a free removed, NULL if unknown */
static void snap_tensor(struct gs_mem_model *m, const struct gs_torch_mem *e,
			const struct gs_alloc *old)
{
	struct gs_torch_proc *tp = gs_torch_acct__find(&m->torch, (pid_t)e->hdr.pid);
	bool cpu = e->device_type == GS_TORCH_DEV_CPU;
	struct gs_snap_entry s = {
		.ts_ns = e->hdr.ts_ns,
		.addr = e->ptr,
		.size = cpu ? e->size : gs_torch_block_size(e->size),
		.requested = e->size,
		.stream = e->stream,
		.dev = cpu ? GS_TORCH_DEV_KEY(GS_TORCH_DEV_CPU, 0)
			   : GS_TORCH_DEV_KEY(e->device_type, e->device),
		.action = e->op == GS_TORCH_OP_FREE ? GS_SNAP_FREE : GS_SNAP_ALLOC,
	};
	const struct gs_alloc *a = old;

	/* what the accounting ignored (a second source of CUDA blocks), the trace ignores too */
	if (!tp || (!cpu && tp->source != e->source))
		return;
	if (e->op != GS_TORCH_OP_FREE)
		a = gs_alloc_table__find(tp->blocks, e->ptr);
	if (a) {
		s.size = a->size;
		s.dev = a->api;
		s.stack_id = a->stack_id;
		s.flags = GS_SNAP_F_STACK;
	} else if (e->op == GS_TORCH_OP_FREE) {
		s.flags = GS_SNAP_F_UNKNOWN; /* allocated before we attached */
		if (!e->size)
			s.size = 0;
	} else {
		return;
	}
	gs_torch_snap__record(m->snap, (pid_t)e->hdr.pid, &s);
}

int gs_mem_model__tensor(struct gs_mem_model *m, const struct gs_torch_mem *e,
			 struct gs_mem_effect *fx)
{
	struct gs_alloc old;
	bool had = false;
	int err;

	*fx = (struct gs_mem_effect){ .route = GS_ROUTE_NONE };
	if (!m->torch_on)
		return 0;
	fx->route = GS_ROUTE_TENSOR;
	if (m->snap && e->op == GS_TORCH_OP_FREE)
		had = snap_block(m, (pid_t)e->hdr.pid, e->ptr, &old);
	err = gs_torch_acct__tensor(&m->torch, e);
	if (!err && m->snap)
		snap_tensor(m, e, had ? &old : NULL);
	/* every PyTorch process gets reports and metrics, CPU-only ones too */
	if (!err && !gs_mem_accounting__get(&m->raw, (pid_t)e->hdr.pid))
		err = -ENOMEM;
	return err;
}

int gs_mem_model__torch_oom(struct gs_mem_model *m, const struct gs_torch_oom *e,
			    struct gs_mem_effect *fx)
{
	int ret;

	*fx = (struct gs_mem_effect){ .route = GS_ROUTE_NONE };
	if (!m->torch_on)
		return 0;
	fx->route = GS_ROUTE_TENSOR;
	if (!gs_mem_accounting__get(&m->raw, (pid_t)e->hdr.pid))
		return -ENOMEM;
	/* 0: the throw that follows the profiler hook's report, the same OOM */
	ret = gs_torch_acct__oom(&m->torch, e, &fx->oom);
	if (ret < 0)
		return ret;
	fx->torch_oom = ret == 1;
	if (fx->torch_oom && m->snap) {
		struct gs_snap_entry s = {
			.ts_ns = e->hdr.ts_ns,
			.size = fx->oom.requested,
			.stack_id = fx->oom.stack_id,
			.dev = fx->oom.device,
			.action = GS_SNAP_OOM,
			.flags = GS_SNAP_F_STACK,
		};

		gs_torch_snap__record(m->snap, (pid_t)e->hdr.pid, &s);
	}
	return 0;
}

void gs_mem_model__proc_gone(struct gs_mem_model *m, pid_t pid, bool exec)
{
	struct gs_mem_proc *p = gs_mem_accounting__find(&m->raw, pid);
	struct gs_torch_proc *tp = gs_torch_acct__find(&m->torch, pid);

	if (m->snap)
		gs_torch_snap__proc_gone(m->snap, pid, exec);
	if (tp && exec)
		gs_torch_acct__clear(tp);
	else if (tp)
		gs_torch_acct__remove(&m->torch, tp);
	if (p && exec)
		gs_mem_accounting__clear(p);
	else if (p)
		gs_mem_accounting__remove(&m->raw, p);
}

struct gs_mem_proc *gs_mem_model__proc(struct gs_mem_model *m, pid_t pid, bool create)
{
	return create ? gs_mem_accounting__get(&m->raw, pid)
		      : gs_mem_accounting__find(&m->raw, pid);
}

struct gs_torch_proc *gs_mem_model__torch_proc(const struct gs_mem_model *m, pid_t pid)
{
	return gs_torch_acct__find(&m->torch, pid);
}

uint64_t gs_mem_model__cuda_bytes(const struct gs_mem_model *m, pid_t pid)
{
	const struct gs_mem_proc *p = gs_mem_accounting__find(&m->raw, pid);

	return p ? gs_alloc_table__bytes(p->allocs) : 0;
}

uint64_t gs_mem_model__pinned_bytes(const struct gs_mem_model *m, pid_t pid)
{
	const struct gs_mem_proc *p = gs_mem_accounting__find(&m->raw, pid);

	return p ? p->pinned_bytes : 0;
}

bool gs_mem_model__has_anything(const struct gs_mem_model *m, const struct gs_mem_proc *p)
{
	return gs_alloc_table__count(p->allocs) || p->failed_allocations || p->failed_frees ||
	       gs_torch_acct__find(&m->torch, p->pid);
}
