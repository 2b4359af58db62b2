// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mem_accounting.c: per-process outstanding allocations, failures and unmatched frees. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/mem_accounting.h"
#include "user/log.h"
#include "user/stack_table.h"

void gs_mem_accounting__init(struct gs_mem_accounting *a, struct gs_stack_table *stacks)
{
	memset(a, 0, sizeof(*a));
	a->stacks = stacks;
}

static void release_proc(struct gs_mem_proc *p)
{
	gs_alloc_table__free(p->allocs);
	free(p->fails);
}

void gs_mem_accounting__release(struct gs_mem_accounting *a)
{
	for (size_t i = 0; i < a->nr_procs; i++)
		release_proc(&a->procs[i]);
	free(a->procs);
	a->procs = NULL;
	a->nr_procs = a->cap_procs = 0;
}

struct gs_mem_proc *gs_mem_accounting__find(struct gs_mem_accounting *a, pid_t pid)
{
	for (size_t i = 0; i < a->nr_procs; i++)
		if (a->procs[i].pid == pid)
			return &a->procs[i];
	return NULL;
}

struct gs_mem_proc *gs_mem_accounting__get(struct gs_mem_accounting *a, pid_t pid)
{
	struct gs_mem_proc *p = gs_mem_accounting__find(a, pid);

	if (p)
		return p;
	if (a->nr_procs == a->cap_procs) {
		size_t cap = a->cap_procs ? a->cap_procs * 2 : 8;
		struct gs_mem_proc *grown = realloc(a->procs, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		a->procs = grown;
		a->cap_procs = cap;
	}
	p = &a->procs[a->nr_procs];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	p->allocs = gs_alloc_table__new();
	if (!p->allocs)
		return NULL;
	a->nr_procs++;
	return p;
}

void gs_mem_accounting__remove(struct gs_mem_accounting *a, struct gs_mem_proc *p)
{
	release_proc(p);
	*p = a->procs[--a->nr_procs];
}

static int note_failure(struct gs_mem_proc *p, const struct gs_mem_alloc *e, uint32_t stack_id)
{
	struct gs_fail_group *grown;

	p->failed_allocations++;
	for (size_t i = 0; i < p->nr_fails; i++) {
		struct gs_fail_group *g = &p->fails[i];

		if (g->stack_id == stack_id && g->api == e->api && g->ret == e->ret) {
			g->count++;
			g->bytes_requested += e->size;
			return 0;
		}
	}
	grown = realloc(p->fails, (p->nr_fails + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->fails = grown;
	p->fails[p->nr_fails++] = (struct gs_fail_group){
		.count = 1,
		.bytes_requested = e->size,
		.stack_id = stack_id,
		.api = e->api,
		.ret = e->ret,
	};
	return 0;
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
	if (!e->ptr) /* a zero-byte request succeeds with NULL and holds nothing */
		return 0;
	entry = (struct gs_alloc){
		.ptr = e->ptr,
		.size = e->size,
		.ts_ns = e->hdr.ts_ns,
		.stack_id = (uint32_t)id,
		.api = e->api,
	};
	if (gs_alloc_table__insert(p->allocs, &entry, &replaced))
		return -ENOMEM;
	if (replaced)
		gs_dbg("pid %u: 0x%llx allocated again without a free we saw", e->hdr.pid,
		       (unsigned long long)e->ptr);
	return 0;
}

void gs_mem_accounting__free(struct gs_mem_accounting *a, const struct gs_mem_free *e)
{
	struct gs_mem_proc *p = gs_mem_accounting__get(a, (pid_t)e->hdr.pid);
	struct gs_pending_free *slot;
	struct gs_alloc removed;

	if (!p || !e->ptr) /* cudaFree(NULL) is a documented no-op */
		return;
	if (!gs_alloc_table__remove(p->allocs, e->ptr, &removed)) {
		p->unknown_frees++;
		return;
	}
	/* kept until the call returns: a failed free leaves the allocation in place */
	slot = &p->pending[p->next_pending++ % GS_PENDING_FREES];
	slot->tid = e->hdr.tid;
	slot->alloc = removed;
}

void gs_mem_accounting__free_ret(struct gs_mem_accounting *a, const struct gs_mem_free_ret *e)
{
	struct gs_mem_proc *p = gs_mem_accounting__find(a, (pid_t)e->hdr.pid);
	bool replaced;

	if (!p || e->ret == 0)
		return;
	p->failed_frees++;
	for (size_t i = 0; i < GS_PENDING_FREES; i++) {
		struct gs_pending_free *pf = &p->pending[i];

		if (pf->tid != e->hdr.tid || pf->alloc.ptr != e->ptr || !pf->alloc.in_use)
			continue;
		if (!gs_alloc_table__contains(p->allocs, e->ptr))
			gs_alloc_table__insert(p->allocs, &pf->alloc, &replaced);
		pf->alloc.in_use = 0;
		return;
	}
}
