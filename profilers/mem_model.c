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

int gs_mem_model__cuda_call(struct gs_mem_model *m, const struct gs_cuda_call *e,
			    struct gs_mem_effect *fx)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);
	bool segment = false;

	*fx = (struct gs_mem_effect){ .route = GS_ROUTE_NONE };
	if (!m->torch_on || !api || e->ret)
		return 0;
	/* cuMemMap/cuMemUnmap: the pages of PyTorch's expandable segments */
	if (api->shape == GS_SHAPE_MAP)
		segment = gs_torch_acct__segment_map(&m->torch, &e->hdr, e->args[0], e->args[1],
						     e->frames, e->nr_frames);
	else if (api->shape == GS_SHAPE_UNMAP)
		segment = gs_torch_acct__segment_unmap(&m->torch, &e->hdr, e->args[0]);
	if (segment)
		fx->route = GS_ROUTE_SEGMENT;
	return 0;
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
		gs_alloc_table__clear(p->allocs);
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

bool gs_mem_model__has_anything(const struct gs_mem_model *m, const struct gs_mem_proc *p)
{
	return gs_alloc_table__count(p->allocs) || p->failed_allocations || p->failed_frees ||
	       gs_torch_acct__find(&m->torch, p->pid);
}
