/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* leak_report.h: outstanding allocations grouped by stack, as text for people or JSON. */
#ifndef GS_LEAK_REPORT_H
#define GS_LEAK_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/mem_accounting.h"
#include "profilers/mem_model.h"
#include "profilers/torch/accounting.h"
#include "user/units.h" /* gs_format_bytes(), for the reports */

struct gs_stack_table;

/* outstanding allocations from one stack through one API */
struct gs_leak_group {
	uint64_t bytes;
	uint64_t count;
	uint64_t oldest_ts_ns;
	uint32_t stack_id;
	uint16_t api;
};

struct gs_leak_proc_report {
	pid_t pid;
	const char *comm;
	pid_t ppid;		  /* the target that started it; 0: a root, or unknown */
	int32_t rank, local_rank; /* from its environment (profilers/proc_tree.h); -1: none */
	bool exited;		  /* what it held when it exited (or replaced itself by exec) */
	bool exec;
	uint64_t outstanding_bytes, outstanding_allocations;
	uint64_t pinned_bytes, pinned_allocations; /* of the outstanding: pinned host memory */
	uint64_t failed_allocations, failed_frees, unknown_frees;
	struct gs_leak_group *groups; /* sorted by bytes, largest first */
	size_t nr_groups;
	struct gs_fail_group *fails; /* sorted by count */
	size_t nr_fails;
	/* PyTorch: NULL when the process showed none; tensor groups' api is the device key */
	struct gs_torch_proc *torch;
	struct gs_leak_group *tensor_groups;
	size_t nr_tensor_groups;
	uint64_t tensor_bytes, tensor_allocations;
};

/* what made a report be written at that moment (the daemon's triggers) */
struct gs_leak_trigger {
	/* "cuda-oom"; "torch-oom" (torch set, no API); "oom-kill" (no API: the kernel chose) */
	const char *kind;
	pid_t pid;
	uint16_t api;
	int32_t error;
	uint64_t bytes_requested;
	uint32_t stack_id;		       /* the failing call's stack */
	const struct gs_torch_oom_info *torch; /* "torch-oom": what PyTorch's allocator said */
};

/* The trigger of a CUDA allocation call that failed with GS_CUDA_ERROR_OUT_OF_MEMORY. */
struct gs_leak_trigger gs_leak_trigger_cuda_oom(const struct gs_mem_alloc *e, uint32_t stack_id);
/* The trigger of a PyTorch out-of-memory in process pid (o is borrowed by the result). */
struct gs_leak_trigger gs_leak_trigger_torch_oom(pid_t pid, const struct gs_torch_oom_info *o);

struct gs_leak_report {
	const char *reason; /* "final", "interval", "exit", "exec", "trigger", "snapshot" */
	const struct gs_leak_trigger *trigger; /* NULL unless reason is "trigger" */
	uint64_t now_ns;		       /* CLOCK_MONOTONIC, ages are measured from it */
	double min_age_s;
	size_t top; /* stacks shown per process; 0: all */
	struct gs_leak_proc_report *procs;
	size_t nr_procs;
	uint64_t stats[GS_STAT__MAX];
	/* events lost since window_start_ns (0: the session's start), the previous report */
	uint64_t window_lost;
	uint64_t window_start_ns;
	/* successful CUDA allocations since the start, so that "none left" tells "none made" */
	uint64_t seen_allocations, seen_bytes;
	bool no_stacks;	       /* --stacks none: the groups are by API only, no frames were taken */
	unsigned stack_sample; /* --stack-sample N > 1: other events have their call site alone */
};

/*
 * Groups the entries of t at least min_age_ns old at now by (stack, API), largest first:
 * *groups (caller frees) and *nr; adds their bytes and count to *bytes and *count.
 */
int gs_leak_group_table(const struct gs_alloc_table *t, uint64_t now, uint64_t min_age_ns,
			struct gs_leak_group **groups, size_t *nr, uint64_t *bytes,
			uint64_t *count);
/*
 * Fills out with the allocations p (a process of m) holds that are at least min_age_ns old
 * at now (CLOCK_MONOTONIC), grouped by (stack, API) and sorted by bytes, and the process's
 * PyTorch tensors the same way when it has any; sorts p's failures by count. Returns 0, the
 * caller then frees with gs_leak_proc_report__release(); or -ENOMEM, out holding nothing.
 */
int gs_leak_proc_report__build(struct gs_leak_proc_report *out, const struct gs_mem_model *m,
			       struct gs_mem_proc *p, const char *comm, uint64_t now,
			       uint64_t min_age_ns);
/* Frees what __build allocated (fails and torch are borrowed from the model). */
void gs_leak_proc_report__release(struct gs_leak_proc_report *out);

void gs_leak_report__write_text(FILE *f, const struct gs_leak_report *r,
				const struct gs_stack_table *stacks);
/* Exactly one JSON document, on one line. */
void gs_leak_report__write_json(FILE *f, const struct gs_leak_report *r,
				const struct gs_stack_table *stacks);

#endif /* GS_LEAK_REPORT_H */
