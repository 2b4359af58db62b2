// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mem_accounting.c: per-process outstanding allocations, failures and unmatched frees. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cuda/api.h"
#include "profilers/mem_accounting.h"
#include "user/array.h"
#include "user/log.h"
#include "user/stack_table.h"

void gs_mem_accounting__init(struct gs_mem_accounting *a, struct gs_stack_table *stacks)
{
	memset(a, 0, sizeof(*a));
	a->stacks = stacks;
}

static void free_proc(struct gs_mem_proc *p)
{
	gs_alloc_table__free(p->allocs);
	gs_fail_groups__release(&p->fails);
	free(p);
}

void gs_mem_accounting__release(struct gs_mem_accounting *a)
{
	for (size_t i = 0; i < a->nr_procs; i++)
		free_proc(a->procs[i]);
	free(a->procs);
	gs_pid_index__release(&a->index);
	a->procs = NULL;
	a->nr_procs = a->cap_procs = 0;
}

struct gs_mem_proc *gs_mem_accounting__find(const struct gs_mem_accounting *a, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&a->index, pid, &pos) ? a->procs[pos] : NULL;
}

struct gs_mem_proc *gs_mem_accounting__get(struct gs_mem_accounting *a, pid_t pid)
{
	struct gs_mem_proc *p = gs_mem_accounting__find(a, pid);

	if (p)
		return p;
	if (GS_ARRAY_RESERVE(a->procs, a->nr_procs, a->cap_procs, 8))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->allocs = gs_alloc_table__new();
	if (!p->allocs || gs_pid_index__set(&a->index, pid, a->nr_procs)) {
		free_proc(p);
		return NULL;
	}
	a->procs[a->nr_procs++] = p;
	return p;
}

void gs_mem_accounting__remove(struct gs_mem_accounting *a, struct gs_mem_proc *p)
{
	size_t pos;

	if (!gs_pid_index__get(&a->index, p->pid, &pos) || a->procs[pos] != p)
		return;
	gs_pid_index__remove(&a->index, p->pid);
	free_proc(p);
	/* the last entry fills the hole; its index entry follows (it exists: no allocation) */
	a->procs[pos] = a->procs[--a->nr_procs];
	if (pos < a->nr_procs)
		gs_pid_index__set(&a->index, a->procs[pos]->pid, pos);
}

static bool is_pinned(uint16_t api_id)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(api_id);

	return api && api->mem_kind == GS_MEM_HOST;
}

/* The table and the pinned totals change together: every insert and removal goes here. */
static int hold(struct gs_mem_proc *p, const struct gs_alloc *a, bool *replaced)
{
	const struct gs_alloc *old = gs_alloc_table__find(p->allocs, a->ptr);
	bool was_pinned = old && is_pinned(old->api);
	uint64_t old_pinned = was_pinned ? old->size : 0;

	if (gs_alloc_table__insert(p->allocs, a, replaced))
		return -ENOMEM;
	if (was_pinned) {
		p->pinned_bytes -= old_pinned;
		p->pinned_allocations--;
	}
	if (is_pinned(a->api)) {
		p->pinned_bytes += a->size;
		p->pinned_allocations++;
		p->pinned_seen = true;
	}
	return 0;
}

static bool drop(struct gs_mem_proc *p, uint64_t ptr, struct gs_alloc *removed)
{
	if (!gs_alloc_table__remove(p->allocs, ptr, removed))
		return false;
	if (is_pinned(removed->api)) {
		p->pinned_bytes -= removed->size;
		p->pinned_allocations--;
	}
	return true;
}

void gs_mem_accounting__clear(struct gs_mem_proc *p)
{
	gs_alloc_table__clear(p->allocs);
	p->pinned_bytes = p->pinned_allocations = 0;
}

static int note_failure(struct gs_mem_proc *p, const struct gs_mem_alloc *e, uint32_t stack_id)
{
	p->failed_allocations++;
	return gs_fail_groups__add(&p->fails, stack_id, e->api, e->ret, e->size);
}

int gs_mem_accounting__alloc(struct gs_mem_accounting *a, const struct gs_mem_alloc *e,
			     uint32_t *stack_id)
{
	struct gs_mem_proc *p = gs_mem_accounting__get(a, (pid_t)e->hdr.pid);
	struct gs_alloc entry;
	int64_t id;
	bool replaced;

	if (!p)
		return -ENOMEM;
	id = gs_stack_table__intern(a->stacks, (pid_t)e->hdr.pid, (const uint64_t *)e->frames,
				    e->nr_frames);
	if (id < 0)
		return (int)id;
	if (stack_id)
		*stack_id = (uint32_t)id;
	if (e->ret != 0)
		return note_failure(p, e, (uint32_t)id);
	p->allocations++;
	if (!e->ptr) /* a zero-byte request succeeds with NULL and holds nothing */
		return 0;
	entry = (struct gs_alloc){
		.ptr = e->ptr,
		.size = e->size,
		.ts_ns = e->hdr.ts_ns,
		.stack_id = (uint32_t)id,
		.api = e->api,
	};
	if (hold(p, &entry, &replaced))
		return -ENOMEM;
	if (replaced)
		gs_dbg("pid %u: 0x%llx allocated again without a free we saw", e->hdr.pid,
		       (unsigned long long)e->ptr);
	return 0;
}

bool gs_mem_accounting__free(struct gs_mem_accounting *a, const struct gs_mem_free *e,
			     struct gs_alloc *freed)
{
	struct gs_mem_proc *p = gs_mem_accounting__get(a, (pid_t)e->hdr.pid);
	struct gs_pending_free *slot;
	struct gs_alloc removed;

	if (!p)
		return false;
	p->frees++;
	if (!e->ptr) /* cudaFree(NULL) is a documented no-op */
		return false;
	if (!drop(p, e->ptr, &removed)) {
		p->unknown_frees++;
		/*
		 * A successful free leaves its pending entry (only failures are reported at
		 * return): this free of the same pointer again, which fails, must not bring the
		 * allocation back from it.
		 */
		for (size_t i = 0; i < GS_PENDING_FREES; i++)
			if (p->pending[i].tid == e->hdr.tid && p->pending[i].alloc.ptr == e->ptr)
				p->pending[i].alloc.in_use = 0;
		return false;
	}
	/* kept until the call returns: a failed free leaves the allocation in place */
	slot = &p->pending[p->next_pending++ % GS_PENDING_FREES];
	slot->tid = e->hdr.tid;
	slot->alloc = removed;
	if (freed)
		*freed = removed;
	return true;
}

bool gs_mem_accounting__free_ret(struct gs_mem_accounting *a, const struct gs_mem_free_ret *e)
{
	struct gs_mem_proc *p = gs_mem_accounting__find(a, (pid_t)e->hdr.pid);
	bool replaced;

	if (!p || e->ret == 0)
		return false;
	p->failed_frees++;
	for (size_t i = 0; i < GS_PENDING_FREES; i++) {
		struct gs_pending_free *pf = &p->pending[i];

		if (pf->tid != e->hdr.tid || pf->alloc.ptr != e->ptr || !pf->alloc.in_use)
			continue;
		pf->alloc.in_use = 0;
		if (gs_alloc_table__contains(p->allocs, e->ptr))
			return false; /* allocated again meanwhile: that one stands */
		return !hold(p, &pf->alloc, &replaced);
	}
	return false;
}
