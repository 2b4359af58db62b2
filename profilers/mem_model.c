// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mem_model.c: where each memory event goes (raw CUDA, PyTorch segment, tensor), decided once. */
#include <errno.h>
#include <string.h>
#include "profilers/cuda/api.h"
#include "profilers/mem_model.h"

void gs_mem_model__init(struct gs_mem_model *m, struct gs_stack_table *stacks,
			struct gs_symcache *symcache, bool torch_on)
{
	gs_mem_accounting__init(&m->raw, stacks);
	gs_torch_acct__init(&m->torch, stacks, symcache);
	m->torch_on = torch_on;
}

void gs_mem_model__release(struct gs_mem_model *m)
{
	gs_mem_accounting__release(&m->raw);
	gs_torch_acct__release(&m->torch);
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
		*fx = (struct gs_mem_effect){ .route = GS_ROUTE_SEGMENT };
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
	struct gs_alloc freed;

	/*
	 * The segment table first. An allocation is classified once, by its caller, when it is
	 * made; its free can only be classified by the pointer. The segment table knows its
	 * pointers exactly, while the raw accounting takes any pointer it does not hold for an
	 * unknown free: asked first, it would count every segment free as one (or, holding the
	 * segments as well, count PyTorch's reserved memory twice).
	 */
	if (m->torch_on && gs_torch_acct__segment_free(&m->torch, e)) {
		*fx = (struct gs_mem_effect){ .route = GS_ROUTE_SEGMENT };
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
			fx->route = GS_ROUTE_SEGMENT;
			return 0;
		}
		return e->args[0] ? raw_map(m, e, fx) : 0;
	}
	if (m->torch_on && gs_torch_acct__segment_unmap(&m->torch, &e->hdr, e->args[0])) {
		fx->route = GS_ROUTE_SEGMENT;
		return 0;
	}
	return raw_unmap(m, e, fx);
}

int gs_mem_model__tensor(struct gs_mem_model *m, const struct gs_torch_mem *e,
			 struct gs_mem_effect *fx)
{
	int err;

	*fx = (struct gs_mem_effect){ .route = GS_ROUTE_NONE };
	if (!m->torch_on)
		return 0;
	fx->route = GS_ROUTE_TENSOR;
	err = gs_torch_acct__tensor(&m->torch, e);
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
	return 0;
}

void gs_mem_model__proc_gone(struct gs_mem_model *m, pid_t pid, bool exec)
{
	struct gs_mem_proc *p = gs_mem_accounting__find(&m->raw, pid);
	struct gs_torch_proc *tp = gs_torch_acct__find(&m->torch, pid);

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
