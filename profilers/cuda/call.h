/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* call.h: what a generic call record means, per API shape (launch dims, copy bytes...). */
#ifndef GS_CUDA_CALL_H
#define GS_CUDA_CALL_H

#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/cuda/api.h"

struct gs_launch {
	uint64_t func; /* host function, cudaKernel_t, CUfunction/CUkernel or graph */
	uint32_t grid[3], block[3];
	uint64_t shared_mem;
	uint64_t stream;
	bool graph; /* a graph launch: func is the executable graph, no dims */
};

struct gs_copy {
	uint64_t bytes;
	unsigned int kind; /* enum gs_copy_kind */
	uint64_t stream;
	bool has_stream;
};

/* Each returns false when the record's API is not of that kind. */
bool gs_decode_launch(const struct gs_cuda_api *api, const struct gs_cuda_call *e,
		      struct gs_launch *out);
bool gs_decode_copy(const struct gs_cuda_api *api, const struct gs_cuda_call *e,
		    struct gs_copy *out);
/* The stream or event a sync waited on; false for device/context syncs. */
bool gs_decode_sync_handle(const struct gs_cuda_api *api, const struct gs_cuda_call *e,
			   uint64_t *handle);

#endif /* GS_CUDA_CALL_H */
