/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* api.h: the CUDA APIs gpusnoop probes, their argument shapes, and their libraries. */
#ifndef GS_CUDA_API_H
#define GS_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gs_cuda_lib { GS_LIB_RUNTIME, GS_LIB_DRIVER };

/* out of memory: cudaErrorMemoryAllocation and CUDA_ERROR_OUT_OF_MEMORY share the value */
#define GS_CUDA_ERROR_OUT_OF_MEMORY 2

/* what a call is about; -e selects families (kernel naming follows launches) */
enum gs_api_family {
	GS_FAM_MEM,
	GS_FAM_LAUNCH,
	GS_FAM_SYNC,
	GS_FAM_COPY,
	GS_FAM_NAMES,
	GS_FAM_TORCH, /* no CUDA APIs: PyTorch's allocators (profilers/torch/attach.c) */
	/* no APIs of its own: launches get a return probe too (CPU-side duration, error) */
	GS_FAM_LAUNCH_LATENCY,
};
#define GS_FAM_BIT(f) (1u << (f))

enum gs_api_shape {
	/* bpf/mem.bpf.c */
	GS_SHAPE_ALLOC,	      /* (T **out, size_t size, ...) */
	GS_SHAPE_ALLOC_PITCH, /* (T **out, size_t *pitch, size_t width, size_t height) */
	GS_SHAPE_FREE,	      /* (T *ptr, ...) */
	GS_SHAPE_REGISTER,    /* (void *ptr, size_t size, ...): the caller's memory, pinned */
	/* bpf/cuda.bpf.c: generic calls, decoded by profilers/cuda/call.c */
	GS_SHAPE_LAUNCH_RT,	    /* (func, dim3 grid, dim3 block, args, size_t shmem, stream) */
	GS_SHAPE_LAUNCH_RT_CONFIG,  /* (const cudaLaunchConfig_t *, func, args) */
	GS_SHAPE_LAUNCH_DRV,	    /* (f, gx, gy, gz, bx, by, bz, unsigned shmem, stream, ...) */
	GS_SHAPE_LAUNCH_DRV_CONFIG, /* (const CUlaunchConfig *, f, params, extra) */
	GS_SHAPE_GRAPH_LAUNCH,	    /* (graphExec, stream) */
	GS_SHAPE_SYNC,		    /* (handle) or () */
	GS_SHAPE_COPY,		    /* positions in struct gs_cuda_api.copy */
	GS_SHAPE_REGISTER_FUNCTION, /* __cudaRegisterFunction(handle, hostFun, deviceFun, name, ..) */
	GS_SHAPE_GET_KERNEL,	    /* (cudaKernel_t *out, const void *hostFun) */
	GS_SHAPE_GET_FUNCTION,	    /* (CUfunction *out, module, const char *name) */
	GS_SHAPE_MAP,		    /* cuMemMap(ptr, size, offset, handle, flags): generic probe */
	GS_SHAPE_UNMAP,		    /* cuMemUnmap(ptr, size): generic probe */
};

enum gs_mem_kind { GS_MEM_DEVICE, GS_MEM_MANAGED, GS_MEM_HOST };

/* cudaMemcpyKind values 0..4, then kinds that the API itself implies */
enum gs_copy_kind {
	GS_COPY_HTOH = 0,
	GS_COPY_HTOD = 1,
	GS_COPY_DTOH = 2,
	GS_COPY_DTOD = 3,
	GS_COPY_DEFAULT = 4,
	GS_COPY_PEER = 5,
	GS_COPY_MEMSET = 6,
	GS_COPY__MAX,
	GS_COPY_FROM_ARG = 0xff, /* the kind is an argument (cudaMemcpyKind) */
};

/* argument positions: 0..5 registers, 6..8 stack slots (7th..9th argument); -1 none */
struct gs_copy_shape {
	int8_t bytes, rows, kind, stream;
	uint8_t elem_size;  /* cuMemsetD32: count is in 4-byte elements */
	uint8_t fixed_kind; /* enum gs_copy_kind, or GS_COPY_FROM_ARG */
};

struct gs_cuda_api {
	uint16_t id;	  /* the probe's bpf_cookie; index into the table */
	const char *name; /* exported symbol */
	enum gs_cuda_lib lib;
	enum gs_api_family family;
	enum gs_api_shape shape;
	enum gs_mem_kind mem_kind; /* GS_FAM_MEM */
	int8_t handle_arg;	   /* GS_SHAPE_SYNC: the stream/event argument, -1 none */
	const char *handle_name;   /* "stream", "event", "device", "context" */
	struct gs_copy_shape copy; /* GS_SHAPE_COPY */
};

/* The table; entry 0 is unused so that a zero cookie means "unknown". */
const struct gs_cuda_api *gs_cuda_apis(size_t *nr);
const struct gs_cuda_api *gs_cuda_api_get(uint16_t id);
/* Name of an API id, "unknown" for ids not in the table. */
const char *gs_cuda_api_name(uint16_t id);
/* GS_CALL_F_* the generic probe needs for this API (its cookie's upper bits). */
uint32_t gs_cuda_api_call_flags(const struct gs_cuda_api *api);
/*
 * Whether api is probed at its return too, with these families: a result or a duration is
 * needed (allocations, frees, synchronizations, copies, kernel names); a launch has all it
 * shows at entry, and its return only with GS_FAM_LAUNCH_LATENCY.
 */
bool gs_cuda_api_wants_return(const struct gs_cuda_api *api, uint32_t families);

const char *gs_mem_kind_name(enum gs_mem_kind kind);
/* "HtoD", "DtoH", ...; "unknown" outside the enum */
const char *gs_copy_kind_name(unsigned int kind);
/* Symbolic name of an error code of a runtime (cudaError_t) or driver (CUresult) call. */
const char *gs_cuda_error_name(enum gs_cuda_lib lib, int code);

/* Parses "cuda-mem,cuda-launch,..." into GS_FAM_BIT()s; -EINVAL on an unknown name. */
int gs_parse_event_families(const char *list, uint32_t *families);
#define GS_EVENT_FAMILY_NAMES \
	"cuda-mem, cuda-launch, cuda-launch-latency, cuda-sync, cuda-memcpy, torch-mem"

/* Whether a mapped file's name marks it as the CUDA runtime or the driver. */
bool gs_is_cudart_name(const char *path);
bool gs_is_libcuda_name(const char *path);
bool gs_is_ld_so_name(const char *path);

#endif /* GS_CUDA_API_H */
