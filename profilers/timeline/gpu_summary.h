/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_summary.h: record's summary of GPU activity: kernels, busy time, copy throughput. */
#ifndef GS_TIMELINE_GPU_SUMMARY_H
#define GS_TIMELINE_GPU_SUMMARY_H

#include <stdio.h>
#include "profilers/cuda/gpu_activity.h"

struct gs_gpu_summary;

struct gs_gpu_summary *gs_gpu_summary__new(void);
void gs_gpu_summary__free(struct gs_gpu_summary *s);
/* Counts one decoded record. Returns 0 or -ENOMEM. */
int gs_gpu_summary__add(struct gs_gpu_summary *s, const struct gs_gpu_op *op);
/*
 * GPU time per kernel name (count, total, mean, p99), the busy fraction of each device
 * (the union of its records' intervals over first start to last end), copy throughput per
 * kind. Nothing when no record came.
 */
void gs_gpu_summary__print(struct gs_gpu_summary *s, FILE *f);

#endif /* GS_TIMELINE_GPU_SUMMARY_H */
