// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gpu_activity.c: decode CUPTI kernel, memcpy and memset records with bounds checks. */
#include <errno.h>
#include <string.h>
#include "profilers/cuda/gpu_activity.h"
#include "profilers/cupti/cupti_abi.h"

_Static_assert(GS_CUPTI_KERNEL_NEED <= GS_GPU_RECORD_BYTES, "kernel record fits");

static uint32_t u32_at(const __u8 *rec, size_t off)
{
	uint32_t v;

	memcpy(&v, rec + off, sizeof(v));
	return v;
}

static uint64_t u64_at(const __u8 *rec, size_t off)
{
	uint64_t v;

	memcpy(&v, rec + off, sizeof(v));
	return v;
}

/* The offsets of one layout's common fields. */
struct layout {
	size_t need, start, end, device, context, stream, correlation;
};

static const struct layout kernel_layout = {
	GS_CUPTI_KERNEL_NEED,	     GS_CUPTI_KERNEL_START,   GS_CUPTI_KERNEL_END,
	GS_CUPTI_KERNEL_DEVICE,	     GS_CUPTI_KERNEL_CONTEXT, GS_CUPTI_KERNEL_STREAM,
	GS_CUPTI_KERNEL_CORRELATION,
};
static const struct layout memcpy_layout = {
	GS_CUPTI_MEMCPY_NEED,	     GS_CUPTI_MEMCPY_START,   GS_CUPTI_MEMCPY_END,
	GS_CUPTI_MEMCPY_DEVICE,	     GS_CUPTI_MEMCPY_CONTEXT, GS_CUPTI_MEMCPY_STREAM,
	GS_CUPTI_MEMCPY_CORRELATION,
};
static const struct layout memset_layout = {
	GS_CUPTI_MEMSET_NEED,	     GS_CUPTI_MEMSET_START,   GS_CUPTI_MEMSET_END,
	GS_CUPTI_MEMSET_DEVICE,	     GS_CUPTI_MEMSET_CONTEXT, GS_CUPTI_MEMSET_STREAM,
	GS_CUPTI_MEMSET_CORRELATION,
};

static int decode_common(const __u8 *rec, uint32_t size, const struct layout *l,
			 struct gs_gpu_op *op)
{
	if (size < l->need)
		return -EINVAL;
	op->start_ns = u64_at(rec, l->start);
	op->end_ns = u64_at(rec, l->end);
	op->device = u32_at(rec, l->device);
	op->context = u32_at(rec, l->context);
	op->stream = u32_at(rec, l->stream);
	op->correlation = u32_at(rec, l->correlation);
	if (!op->start_ns || !op->end_ns)
		return -ERANGE;
	return op->end_ns < op->start_ns ? -EINVAL : 0;
}

/* The name only if NUL-terminated inside what BPF copied. */
static const char *record_name(const struct gs_gpu_record *e)
{
	if (!e->name_len || e->name_len > GS_GPU_NAME_BYTES || e->name[e->name_len - 1])
		return NULL;
	return e->name;
}

static void decode_kernel(const struct gs_gpu_record *e, struct gs_gpu_op *op)
{
	uint16_t regs;

	op->kind = GS_GPU_KERNEL;
	for (int i = 0; i < 3; i++) {
		op->grid[i] = (int32_t)u32_at(e->rec, GS_CUPTI_KERNEL_GRID + 4 * i);
		op->block[i] = (int32_t)u32_at(e->rec, GS_CUPTI_KERNEL_BLOCK + 4 * i);
	}
	op->shared_mem = u32_at(e->rec, GS_CUPTI_KERNEL_STATIC_SMEM) +
			 u32_at(e->rec, GS_CUPTI_KERNEL_DYNAMIC_SMEM);
	memcpy(&regs, e->rec + GS_CUPTI_KERNEL_REGISTERS, sizeof(regs));
	op->registers = regs;
	op->name = record_name(e);
}

int gs_gpu_op_decode(const struct gs_gpu_record *e, size_t size, struct gs_gpu_op *op)
{
	uint32_t kind;
	int err;

	if (size < sizeof(*e) || e->size > GS_GPU_RECORD_BYTES || e->size < sizeof(kind))
		return -EINVAL;
	memset(op, 0, sizeof(*op));
	kind = u32_at(e->rec, GS_CUPTI_OFF_KIND);
	switch (kind) {
	case GS_CUPTI_KIND_CONCURRENT_KERNEL:
		err = decode_common(e->rec, e->size, &kernel_layout, op);
		if (!err)
			decode_kernel(e, op);
		return err;
	case GS_CUPTI_KIND_MEMCPY:
		err = decode_common(e->rec, e->size, &memcpy_layout, op);
		op->kind = GS_GPU_MEMCPY;
		op->copy_kind = e->rec[GS_CUPTI_MEMCPY_COPY_KIND];
		op->bytes = u64_at(e->rec, GS_CUPTI_MEMCPY_BYTES);
		return err;
	case GS_CUPTI_KIND_MEMSET:
		err = decode_common(e->rec, e->size, &memset_layout, op);
		op->kind = GS_GPU_MEMSET;
		op->value = u32_at(e->rec, GS_CUPTI_MEMSET_VALUE);
		op->bytes = u64_at(e->rec, GS_CUPTI_MEMSET_BYTES);
		return err;
	default:
		return -ENOENT;
	}
}

const char *gs_gpu_copy_kind_name(uint8_t kind)
{
	switch (kind) {
	case GS_CUPTI_MEMCPY_HTOD:
		return "HtoD";
	case GS_CUPTI_MEMCPY_DTOH:
		return "DtoH";
	case GS_CUPTI_MEMCPY_DTOD:
		return "DtoD";
	case GS_CUPTI_MEMCPY_HTOH:
		return "HtoH";
	case GS_CUPTI_MEMCPY_PTOP:
		return "PtoP";
	default:
		return "other";
	}
}

const char *gs_gpu_op_category(enum gs_gpu_op_kind kind)
{
	switch (kind) {
	case GS_GPU_KERNEL:
		return "kernel";
	case GS_GPU_MEMCPY:
		return "gpu_memcpy";
	default:
		return "gpu_memset";
	}
}
