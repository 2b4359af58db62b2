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
#include "profilers/torch_acct.h"

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
	bool exited; /* what it held when it exited (or replaced itself by exec) */
	bool exec;
	uint64_t outstanding_bytes, outstanding_allocations;
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

struct gs_leak_report {
	const char *reason; /* "final", "interval", "exit", "exec" */
	uint64_t now_ns;    /* CLOCK_MONOTONIC, ages are measured from it */
	double min_age_s;
	size_t top; /* stacks shown per process; 0: all */
	struct gs_leak_proc_report *procs;
	size_t nr_procs;
	uint64_t stats[GS_STAT__MAX];
	/* reason "trigger" (--on-oom): a PyTorch OOM, or a CUDA allocation failing with error 2 */
	const struct gs_torch_oom_info *oom;
	const struct gs_mem_alloc *oom_raw;
	uint32_t oom_raw_stack_id;
};

void gs_leak_report__write_text(FILE *f, const struct gs_leak_report *r,
				const struct gs_stack_table *stacks);
/* Exactly one JSON document, on one line. */
void gs_leak_report__write_json(FILE *f, const struct gs_leak_report *r,
				const struct gs_stack_table *stacks);

/* "256.0 MiB": a size for people. */
void gs_format_bytes(uint64_t bytes, char *buf, size_t len);

#endif /* GS_LEAK_REPORT_H */
