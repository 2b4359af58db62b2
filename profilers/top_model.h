/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* top_model.h: `gpusnoop top`'s rows: per-process call counters, their rates, sort orders. */
#ifndef GS_TOP_MODEL_H
#define GS_TOP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "user/pid_index.h"

struct gs_cuda_api;
struct gs_cuda_call;

/* distinct kernel names counted per process; later ones add to GS_TOP_OTHER_KERNELS */
#define GS_TOP_MAX_KERNELS   64
#define GS_TOP_KERNEL_NAME   96
#define GS_TOP_OTHER_KERNELS "[other kernels]"
#define GS_TOP_GRAPH_KERNEL  "[graph]"
/* processes with a row at once; the events of later ones count in gs_top_model.refused */
#define GS_TOP_MAX_PROCS 4096

/* What a process's CUDA calls did since it was first seen: the rates' numerators. */
struct gs_top_counts {
	uint64_t launches, syncs, sync_ns, copies, copy_bytes, ooms;
};

/*
 * Counts one generic CUDA call record (a launch, a synchronization or a successful copy);
 * other APIs count nothing. The daemon's cuda-call-metrics count the same way.
 */
void gs_top_counts__add_call(struct gs_top_counts *c, const struct gs_cuda_api *api,
			     const struct gs_cuda_call *e);

struct gs_top_kernel {
	char name[GS_TOP_KERNEL_NAME];
	uint64_t launches;
};

struct gs_top_proc {
	pid_t pid;
	int32_t rank, local_rank; /* from its environment; -1: none */
	char comm[16];
	struct gs_top_counts total; /* since first seen */
	struct gs_top_counts prev;  /* total at the previous sample */
	/* the memory figures, set by the command before each sample */
	uint64_t mem_bytes; /* CUDA memory held: raw allocations and segments */
	uint64_t torch_allocated, torch_reserved; /* PyTorch's, summed over devices */
	uint64_t tensors;
	bool torch; /* PyTorch state seen */
	/* per second over the last sample's interval */
	double launch_rate, sync_rate, copy_rate; /* sync_rate: seconds in syncs per second */
	struct gs_top_kernel kernels[GS_TOP_MAX_KERNELS];
	size_t nr_kernels;
	uint64_t other_kernel_launches; /* launches of names past the cap */
	bool sampled;			/* its rates cover a whole interval */
	bool gone; /* exited: shown once more with its last figures, then removed */
};

/* sort keys: the column a view sorts by (largest first unless reversed) */
enum gs_top_sort {
	GS_TOP_SORT_PID,
	GS_TOP_SORT_RANK,
	GS_TOP_SORT_MEM,
	GS_TOP_SORT_TORCH,
	GS_TOP_SORT_TENSORS,
	GS_TOP_SORT_LAUNCHES,
	GS_TOP_SORT_SYNC,
	GS_TOP_SORT_COPIES,
	GS_TOP_SORT_OOMS,
	GS_TOP_SORT__MAX,
};

struct gs_top_model {
	struct gs_top_proc **procs; /* each allocated alone: its address never moves */
	size_t nr_procs, cap_procs;
	struct gs_pid_index index;
	uint64_t last_sample_ns; /* CLOCK_MONOTONIC of the previous sample (or the start) */
	uint64_t refused;	 /* rows asked for past GS_TOP_MAX_PROCS (once per event) */
};

/* Empty, its first interval starting at start_ns. */
void gs_top_model__init(struct gs_top_model *m, uint64_t start_ns);
void gs_top_model__release(struct gs_top_model *m);
/*
 * pid's row (borrowed until it is removed), made with create (ranks -1, comm empty: the
 * caller fills them); NULL when there is none, on allocation failure or past the cap.
 */
struct gs_top_proc *gs_top_model__proc(struct gs_top_model *m, pid_t pid, bool create);
void gs_top_model__remove(struct gs_top_model *m, pid_t pid);
/* Removes the rows marked gone (after the refresh that showed them one last time). */
void gs_top_model__remove_gone(struct gs_top_model *m);

/* A launch of kernel (NULL: a graph) in p. */
void gs_top_proc__launch(struct gs_top_proc *p, const char *kernel);
/* The most launched kernel of p, NULL before any launch. */
const struct gs_top_kernel *gs_top_proc__top_kernel(const struct gs_top_proc *p);
/* p's kernels, most launched first (ties by name), at most max into out. Returns how many. */
size_t gs_top_proc__kernels(const struct gs_top_proc *p, struct gs_top_kernel *out, size_t max);

/* Turns each row's counts since the previous sample into rates, over now_ns - that sample. */
void gs_top_model__sample(struct gs_top_model *m, uint64_t now_ns);
/*
 * The rows ordered by key, largest first (smallest with reverse), ties by pid: at most max
 * borrowed pointers into out. Returns how many (0 also when out of memory).
 */
size_t gs_top_model__rows(const struct gs_top_model *m, enum gs_top_sort key, bool reverse,
			  struct gs_top_proc **out, size_t max);
/* "mem", "launches", ...: a key's name for headers and --sort; NULL outside the enum. */
const char *gs_top_sort_name(enum gs_top_sort key);
/* The key named so (see gs_top_sort_name), or -EINVAL. */
int gs_top_sort_parse(const char *name);

#endif /* GS_TOP_MODEL_H */
