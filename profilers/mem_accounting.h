/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* mem_accounting.h: CUDA memory each process holds, built from allocation/free records. */
#ifndef GS_MEM_ACCOUNTING_H
#define GS_MEM_ACCOUNTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "user/pid_index.h"
#include "user/alloc_table.h"
#include "profilers/fail_groups.h"

struct gs_stack_table;

#define GS_PENDING_FREES 64 /* frees whose return we still wait for, per process */

struct gs_pending_free {
	uint32_t tid;
	struct gs_alloc alloc;
};

struct gs_mem_proc {
	pid_t pid;
	struct gs_alloc_table *allocs;
	uint64_t allocations, frees; /* successful allocation calls; free calls (NULL too) */
	uint64_t failed_allocations, failed_frees, unknown_frees;
	/* of allocs, what is pinned host memory (cudaHostAlloc, cudaHostRegister, ...) */
	uint64_t pinned_bytes, pinned_allocations;
	bool pinned_seen; /* the process has held pinned memory: record draws its track */
	struct gs_fail_groups fails; /* hashed and capped: a flood of call sites stays bounded */
	struct gs_pending_free pending[GS_PENDING_FREES];
	size_t next_pending;
};

struct gs_mem_accounting {
	struct gs_stack_table *stacks; /* borrowed: stack ids index it */
	struct gs_mem_proc **procs;    /* each allocated alone: its address never moves */
	size_t nr_procs, cap_procs;
	struct gs_pid_index index; /* pid -> position in procs */
};

void gs_mem_accounting__init(struct gs_mem_accounting *a, struct gs_stack_table *stacks);
void gs_mem_accounting__release(struct gs_mem_accounting *a);

/*
 * A process's entry, borrowed: it stays at its address until that process is removed (or
 * the accounting released), whatever other processes come and go.
 */
struct gs_mem_proc *gs_mem_accounting__find(const struct gs_mem_accounting *a, pid_t pid);
/* Finds or creates; NULL on allocation failure. Same lifetime as __find's. */
struct gs_mem_proc *gs_mem_accounting__get(struct gs_mem_accounting *a, pid_t pid);
void gs_mem_accounting__remove(struct gs_mem_accounting *a, struct gs_mem_proc *p);

/*
 * Applies a record. alloc interns the stack (its id in *stack_id when given) and returns
 * 0 or -ENOMEM; a failed call is counted by stack and error, not held.
 */
int gs_mem_accounting__alloc(struct gs_mem_accounting *a, const struct gs_mem_alloc *e,
			     uint32_t *stack_id);
/*
 * A free at its entry: the allocation is taken out (a copy goes to *freed when given, and
 * true is returned); false for NULL and for a pointer not held (counted as unknown).
 */
bool gs_mem_accounting__free(struct gs_mem_accounting *a, const struct gs_mem_free *e,
			     struct gs_alloc *freed);
/* Forgets every allocation p holds (an exec replaced its image); its counts stay. */
void gs_mem_accounting__clear(struct gs_mem_proc *p);
/* A failed free leaves the allocation in place: it is restored (true when it was). */
bool gs_mem_accounting__free_ret(struct gs_mem_accounting *a, const struct gs_mem_free_ret *e);

#endif /* GS_MEM_ACCOUNTING_H */
