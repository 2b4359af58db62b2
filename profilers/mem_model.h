/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* mem_model.h: the one router of memory events, and the memory state every command renders. */
#ifndef GS_MEM_MODEL_H
#define GS_MEM_MODEL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/mem_accounting.h"
#include "profilers/torch/accounting.h"
#include "profilers/torch/snapshot.h"

struct gs_stack_table;
struct gs_symcache;

/*
 * `leaks`, `record` and the daemon feed every memory record here and render what it holds:
 * which accounting an event belongs to (raw CUDA, a PyTorch segment, a tensor), failures,
 * unknown frees, exit and exec are decided once, so the three agree by construction. The
 * commands keep only their output: report lines, timeline slices and counters, flight
 * recorder entries, triggers.
 */
struct gs_mem_model {
	struct gs_mem_accounting raw; /* CUDA memory that is not the caching allocator's */
	struct gs_torch_acct torch;   /* tensors, and the segments libc10_cuda allocates */
	/*
	 * Whether PyTorch is followed, fixed for the model's life: switching it later would
	 * file earlier segments under one accounting and their frees under the other.
	 */
	bool torch_on;
	/* PyTorch's memory history for snapshots (gs_mem_model__snapshots), NULL: not kept */
	struct gs_torch_snap *snap;
};

/* where an event went */
enum gs_mem_route {
	GS_ROUTE_NONE,	  /* nothing the model follows (a cuMemMap outside PyTorch, a launch) */
	GS_ROUTE_RAW,	  /* raw CUDA accounting */
	GS_ROUTE_SEGMENT, /* a segment of PyTorch's caching allocator (its reserved memory) */
	GS_ROUTE_TENSOR,  /* a PyTorch tensor, or a PyTorch OOM */
};

/* What one event did, for a command to render. */
struct gs_mem_effect {
	enum gs_mem_route route;
	uint32_t stack_id;   /* raw allocations (failed ones too): the call's interned stack */
	bool cuda_oom;	     /* a raw allocation failed with GS_CUDA_ERROR_OUT_OF_MEMORY */
	uint64_t freed_size; /* raw frees: the size given back; 0 for NULL or an unknown pointer */
	bool restored;	     /* a failed raw free put its allocation back */
	bool torch_oom;	     /* a new PyTorch out-of-memory, described by oom */
	struct gs_torch_oom_info oom;
};

/* Empty state; stacks and symcache are borrowed and must outlive the model. */
void gs_mem_model__init(struct gs_mem_model *m, struct gs_stack_table *stacks,
			struct gs_symcache *symcache, bool torch_on);
void gs_mem_model__release(struct gs_mem_model *m);
/*
 * Keeps the last max_entries allocator actions of each PyTorch process (0: PyTorch's
 * default), what gs_mem_model__write_snapshot() writes as device_traces. Returns 0 or -ENOMEM.
 */
int gs_mem_model__snapshots(struct gs_mem_model *m, size_t max_entries);
/* pid's PyTorch memory snapshot, as a pickle, to f (gs_torch_snap__write). 0 or -errno. */
int gs_mem_model__write_snapshot(struct gs_mem_model *m, pid_t pid, uint64_t now_ns, FILE *f);

/*
 * The events, as the tracker hands them over. Each fills *fx (never NULL) and returns 0,
 * or -ENOMEM when the state could not record it (the caller reports that once).
 */
int gs_mem_model__alloc(struct gs_mem_model *m, const struct gs_mem_alloc *e,
			struct gs_mem_effect *fx);
int gs_mem_model__free(struct gs_mem_model *m, const struct gs_mem_free *e,
		       struct gs_mem_effect *fx);
int gs_mem_model__free_ret(struct gs_mem_model *m, const struct gs_mem_free_ret *e,
			   struct gs_mem_effect *fx);
/* Any CUDA call record: cuMemMap/cuMemUnmap of the caching allocator are segments. */
int gs_mem_model__cuda_call(struct gs_mem_model *m, const struct gs_cuda_call *e,
			    struct gs_mem_effect *fx);
int gs_mem_model__tensor(struct gs_mem_model *m, const struct gs_torch_mem *e,
			 struct gs_mem_effect *fx);
int gs_mem_model__torch_oom(struct gs_mem_model *m, const struct gs_torch_oom *e,
			    struct gs_mem_effect *fx);
/*
 * pid exited (its state goes) or replaced its image by exec (what the old image held goes;
 * the process and its failure counts stay). Commands render what they need first.
 */
void gs_mem_model__proc_gone(struct gs_mem_model *m, pid_t pid, bool exec);

/* The process's raw CUDA state (created with create), NULL if none (or out of memory). */
struct gs_mem_proc *gs_mem_model__proc(struct gs_mem_model *m, pid_t pid, bool create);
/* The process's PyTorch state, NULL when it showed none. */
struct gs_torch_proc *gs_mem_model__torch_proc(const struct gs_mem_model *m, pid_t pid);
/* Raw CUDA bytes outstanding in pid, pinned host memory included: the daemon's gauge. */
uint64_t gs_mem_model__cuda_bytes(const struct gs_mem_model *m, pid_t pid);
/* Of those, pinned host memory (cudaHostAlloc, cudaMallocHost, cudaHostRegister, ...). */
uint64_t gs_mem_model__pinned_bytes(const struct gs_mem_model *m, pid_t pid);
/* Whether a report of p would say anything: allocations, failures, or PyTorch state. */
bool gs_mem_model__has_anything(const struct gs_mem_model *m, const struct gs_mem_proc *p);

#endif /* GS_MEM_MODEL_H */
