/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* record_summary.h: what `gpusnoop record` prints on stderr at the end of a recording. */
#ifndef GS_RECORD_SUMMARY_H
#define GS_RECORD_SUMMARY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "profilers/cuda/api.h"
#include "user/histogram.h"

struct gs_record_summary;

struct gs_record_summary *gs_record_summary__new(void);
void gs_record_summary__free(struct gs_record_summary *s);

void gs_record_summary__launch(struct gs_record_summary *s, const char *kernel);
void gs_record_summary__sync(struct gs_record_summary *s, pid_t pid, const char *comm,
			     uint64_t dur_ns);
void gs_record_summary__copy(struct gs_record_summary *s, unsigned int kind, uint64_t bytes);
/* torch-mem: a tensor block allocated (alloc) or freed; a PyTorch out-of-memory */
void gs_record_summary__torch_mem(struct gs_record_summary *s, bool alloc);
void gs_record_summary__torch_oom(struct gs_record_summary *s);
/*
 * The torch-mem line (tensor allocations, frees, out-of-memory): tensors are counters in the
 * trace, not rows, so this line is record's own, not part of the tables stats reproduces.
 */
void gs_record_summary__print_torch(const struct gs_record_summary *s, FILE *f);

/* Names the process pid in the sync lines (its trace label), when it has some. */
void gs_record_summary__name(struct gs_record_summary *s, pid_t pid, const char *comm);
/* The tables alone: top kernels, sync time per process (total, p50, p99), bytes per kind. */
void gs_record_summary__print_tables(const struct gs_record_summary *s, FILE *f);
/* A first line (events, seconds, drops), the tables, a warning when events were dropped. */
void gs_record_summary__print(const struct gs_record_summary *s, FILE *f, uint64_t events,
			      uint64_t dropped, double seconds);

#endif /* GS_RECORD_SUMMARY_H */
