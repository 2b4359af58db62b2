/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_activity.h: CUPTI activity records (kernel, memcpy, memset) from the ring buffer, decoded. */
#ifndef GS_GPU_ACTIVITY_H
#define GS_GPU_ACTIVITY_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

enum gs_gpu_op_kind {
	GS_GPU_KERNEL,
	GS_GPU_MEMCPY,
	GS_GPU_MEMSET,
};

/* One piece of GPU work; CLOCK_MONOTONIC ns. */
struct gs_gpu_op {
	enum gs_gpu_op_kind kind;
	uint64_t start_ns, end_ns;
	uint32_t device, context, stream, correlation;
	const char *name; /* GS_GPU_KERNEL: borrowed from the record; NULL if it had none */
	int32_t grid[3], block[3];
	uint32_t shared_mem; /* static + dynamic */
	uint16_t registers;  /* per thread */
	uint8_t copy_kind;   /* GS_GPU_MEMCPY: GS_CUPTI_MEMCPY_* */
	uint64_t bytes;	     /* GS_GPU_MEMCPY, GS_GPU_MEMSET */
	uint32_t value;	     /* GS_GPU_MEMSET */
};

/*
 * Decodes e (size bytes as they came from the ring buffer) into op, whose name points into
 * e. Returns 0; -ENOENT for a record kind gpusnoop does not use; -EINVAL when sizes or
 * fields are inconsistent; -ERANGE for a record without timestamps (CUPTI's when the
 * device's record buffers overflowed).
 */
int gs_gpu_op_decode(const struct gs_gpu_record *e, size_t size, struct gs_gpu_op *op);
/* "HtoD", "DtoH", "DtoD", "HtoH", "PtoP", or "other" */
const char *gs_gpu_copy_kind_name(uint8_t kind);
/* Kineto's categories: "kernel", "gpu_memcpy", "gpu_memset" */
const char *gs_gpu_op_category(enum gs_gpu_op_kind kind);

#endif /* GS_GPU_ACTIVITY_H */
