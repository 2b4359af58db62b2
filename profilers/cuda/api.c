// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* api.c: probed APIs of libcudart and libcuda (names and argument shapes from the CUDA 13
 * headers; per-thread-stream _ptsz/_ptds variants are separate exports). */
#include <errno.h>
#include <string.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/cuda/api.h"

#define MEM(lib, n, shape, kind)                                                   \
	{                                                                          \
		0, #n, lib, GS_FAM_MEM, GS_SHAPE_##shape, GS_MEM_##kind, -1, NULL, \
		{                                                                  \
			0                                                          \
		}                                                                  \
	}
#define RT_MEM(n, shape, kind)	MEM(GS_LIB_RUNTIME, n, shape, kind)
#define DRV_MEM(n, shape, kind) MEM(GS_LIB_DRIVER, n, shape, kind)
#define CALL(lib, n, fam, shape)                                 \
	{                                                        \
		0, #n, lib, fam, shape, GS_MEM_DEVICE, -1, NULL, \
		{                                                \
			0                                        \
		}                                                \
	}
#define RT_LAUNCH(n, shape)  CALL(GS_LIB_RUNTIME, n, GS_FAM_LAUNCH, GS_SHAPE_##shape)
#define DRV_LAUNCH(n, shape) CALL(GS_LIB_DRIVER, n, GS_FAM_LAUNCH, GS_SHAPE_##shape)
#define SYNC(lib, n, arg, what)                                                   \
	{                                                                         \
		0, #n, lib, GS_FAM_SYNC, GS_SHAPE_SYNC, GS_MEM_DEVICE, arg, what, \
		{                                                                 \
			0                                                         \
		}                                                                 \
	}
#define COPY(lib, n, bytes, rows, kind, stream, elem, fixed)                     \
	{                                                                        \
		0, #n, lib, GS_FAM_COPY, GS_SHAPE_COPY, GS_MEM_DEVICE, -1, NULL, \
		{                                                                \
			bytes, rows, kind, stream, elem, fixed                   \
		}                                                                \
	}
#define RT_COPY(n, bytes, rows, kind, stream, fixed) \
	COPY(GS_LIB_RUNTIME, n, bytes, rows, kind, stream, 1, fixed)
#define DRV_COPY(n, bytes, stream, elem, fixed) \
	COPY(GS_LIB_DRIVER, n, bytes, -1, -1, stream, elem, fixed)
#define NAMES(lib, n, shape) CALL(lib, n, GS_FAM_NAMES, GS_SHAPE_##shape)

static struct gs_cuda_api apis[] = {
	{ 0,
	  "unknown",
	  GS_LIB_RUNTIME,
	  GS_FAM_MEM,
	  GS_SHAPE_ALLOC,
	  GS_MEM_DEVICE,
	  -1,
	  NULL,
	  { 0 } },
	/* allocations */
	RT_MEM(cudaMalloc, ALLOC, DEVICE),
	RT_MEM(cudaMallocAsync, ALLOC, DEVICE),
	RT_MEM(cudaMallocAsync_ptsz, ALLOC, DEVICE),
	RT_MEM(cudaMallocFromPoolAsync, ALLOC, DEVICE),
	RT_MEM(cudaMallocFromPoolAsync_ptsz, ALLOC, DEVICE),
	RT_MEM(cudaMallocManaged, ALLOC, MANAGED),
	RT_MEM(cudaMallocPitch, ALLOC_PITCH, DEVICE),
	RT_MEM(cudaMallocHost, ALLOC, HOST),
	RT_MEM(cudaHostAlloc, ALLOC, HOST),
	RT_MEM(cudaFree, FREE, DEVICE),
	RT_MEM(cudaFreeAsync, FREE, DEVICE),
	RT_MEM(cudaFreeAsync_ptsz, FREE, DEVICE),
	RT_MEM(cudaFreeHost, FREE, HOST),
	/* pinned host memory of the caller's own (PyTorch 2.15's pinned option) */
	RT_MEM(cudaHostRegister, REGISTER, HOST),
	RT_MEM(cudaHostUnregister, FREE, HOST),
	DRV_MEM(cuMemAlloc_v2, ALLOC, DEVICE),
	DRV_MEM(cuMemAllocAsync, ALLOC, DEVICE),
	DRV_MEM(cuMemAllocAsync_ptsz, ALLOC, DEVICE),
	DRV_MEM(cuMemAllocFromPoolAsync, ALLOC, DEVICE),
	DRV_MEM(cuMemAllocFromPoolAsync_ptsz, ALLOC, DEVICE),
	DRV_MEM(cuMemAllocManaged, ALLOC, MANAGED),
	DRV_MEM(cuMemAllocPitch_v2, ALLOC_PITCH, DEVICE),
	DRV_MEM(cuMemAllocHost_v2, ALLOC, HOST),
	DRV_MEM(cuMemHostAlloc, ALLOC, HOST),
	DRV_MEM(cuMemFree_v2, FREE, DEVICE),
	DRV_MEM(cuMemFreeAsync, FREE, DEVICE),
	DRV_MEM(cuMemFreeAsync_ptsz, FREE, DEVICE),
	DRV_MEM(cuMemFreeHost, FREE, HOST),
	DRV_MEM(cuMemHostRegister_v2, REGISTER, HOST),
	DRV_MEM(cuMemHostUnregister, FREE, HOST),
	/* virtual memory management: PyTorch's expandable segments (profilers/torch/accounting.c) */
	DRV_MEM(cuMemMap, MAP, DEVICE),
	DRV_MEM(cuMemUnmap, UNMAP, DEVICE),
	/* launches (CUDA 13 <<<>>> reaches cudaLaunchKernel through __cudaLaunchKernel) */
	RT_LAUNCH(cudaLaunchKernel, LAUNCH_RT),
	RT_LAUNCH(cudaLaunchKernel_ptsz, LAUNCH_RT),
	RT_LAUNCH(cudaLaunchCooperativeKernel, LAUNCH_RT),
	RT_LAUNCH(cudaLaunchCooperativeKernel_ptsz, LAUNCH_RT),
	RT_LAUNCH(cudaLaunchKernelExC, LAUNCH_RT_CONFIG),
	RT_LAUNCH(cudaLaunchKernelExC_ptsz, LAUNCH_RT_CONFIG),
	RT_LAUNCH(cudaGraphLaunch, GRAPH_LAUNCH),
	RT_LAUNCH(cudaGraphLaunch_ptsz, GRAPH_LAUNCH),
	DRV_LAUNCH(cuLaunchKernel, LAUNCH_DRV),
	DRV_LAUNCH(cuLaunchKernel_ptsz, LAUNCH_DRV),
	DRV_LAUNCH(cuLaunchCooperativeKernel, LAUNCH_DRV),
	DRV_LAUNCH(cuLaunchCooperativeKernel_ptsz, LAUNCH_DRV),
	DRV_LAUNCH(cuLaunchKernelEx, LAUNCH_DRV_CONFIG),
	DRV_LAUNCH(cuLaunchKernelEx_ptsz, LAUNCH_DRV_CONFIG),
	DRV_LAUNCH(cuGraphLaunch, GRAPH_LAUNCH),
	DRV_LAUNCH(cuGraphLaunch_ptsz, GRAPH_LAUNCH),
	/* synchronization */
	SYNC(GS_LIB_RUNTIME, cudaStreamSynchronize, 0, "stream"),
	SYNC(GS_LIB_RUNTIME, cudaStreamSynchronize_ptsz, 0, "stream"),
	SYNC(GS_LIB_RUNTIME, cudaDeviceSynchronize, -1, "device"),
	SYNC(GS_LIB_RUNTIME, cudaEventSynchronize, 0, "event"),
	SYNC(GS_LIB_DRIVER, cuStreamSynchronize, 0, "stream"),
	SYNC(GS_LIB_DRIVER, cuStreamSynchronize_ptsz, 0, "stream"),
	SYNC(GS_LIB_DRIVER, cuCtxSynchronize, -1, "context"),
	SYNC(GS_LIB_DRIVER, cuEventSynchronize, 0, "event"),
	/* copies and sets: bytes, rows, kind, stream argument positions */
	RT_COPY(cudaMemcpy, 2, -1, 3, -1, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpy_ptds, 2, -1, 3, -1, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpyAsync, 2, -1, 3, 4, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpyAsync_ptsz, 2, -1, 3, 4, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpy2D, 4, 5, 6, -1, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpy2D_ptds, 4, 5, 6, -1, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpy2DAsync, 4, 5, 6, 7, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpy2DAsync_ptsz, 4, 5, 6, 7, GS_COPY_FROM_ARG),
	RT_COPY(cudaMemcpyPeer, 4, -1, -1, -1, GS_COPY_PEER),
	RT_COPY(cudaMemcpyPeer_ptds, 4, -1, -1, -1, GS_COPY_PEER),
	RT_COPY(cudaMemcpyPeerAsync, 4, -1, -1, 5, GS_COPY_PEER),
	RT_COPY(cudaMemcpyPeerAsync_ptsz, 4, -1, -1, 5, GS_COPY_PEER),
	RT_COPY(cudaMemset, 2, -1, -1, -1, GS_COPY_MEMSET),
	RT_COPY(cudaMemset_ptds, 2, -1, -1, -1, GS_COPY_MEMSET),
	RT_COPY(cudaMemsetAsync, 2, -1, -1, 3, GS_COPY_MEMSET),
	RT_COPY(cudaMemsetAsync_ptsz, 2, -1, -1, 3, GS_COPY_MEMSET),
	DRV_COPY(cuMemcpy, 2, -1, 1, GS_COPY_DEFAULT),
	DRV_COPY(cuMemcpyAsync, 2, 3, 1, GS_COPY_DEFAULT),
	DRV_COPY(cuMemcpyAsync_ptsz, 2, 3, 1, GS_COPY_DEFAULT),
	DRV_COPY(cuMemcpyHtoD_v2, 2, -1, 1, GS_COPY_HTOD),
	DRV_COPY(cuMemcpyDtoH_v2, 2, -1, 1, GS_COPY_DTOH),
	DRV_COPY(cuMemcpyDtoD_v2, 2, -1, 1, GS_COPY_DTOD),
	DRV_COPY(cuMemcpyHtoDAsync_v2, 2, 3, 1, GS_COPY_HTOD),
	DRV_COPY(cuMemcpyHtoDAsync_v2_ptsz, 2, 3, 1, GS_COPY_HTOD),
	DRV_COPY(cuMemcpyDtoHAsync_v2, 2, 3, 1, GS_COPY_DTOH),
	DRV_COPY(cuMemcpyDtoHAsync_v2_ptsz, 2, 3, 1, GS_COPY_DTOH),
	DRV_COPY(cuMemcpyDtoDAsync_v2, 2, 3, 1, GS_COPY_DTOD),
	DRV_COPY(cuMemcpyDtoDAsync_v2_ptsz, 2, 3, 1, GS_COPY_DTOD),
	DRV_COPY(cuMemcpyPeer, 4, -1, 1, GS_COPY_PEER),
	DRV_COPY(cuMemcpyPeerAsync, 4, 5, 1, GS_COPY_PEER),
	DRV_COPY(cuMemsetD8_v2, 2, -1, 1, GS_COPY_MEMSET),
	DRV_COPY(cuMemsetD16_v2, 2, -1, 2, GS_COPY_MEMSET),
	DRV_COPY(cuMemsetD32_v2, 2, -1, 4, GS_COPY_MEMSET),
	DRV_COPY(cuMemsetD8Async, 2, 3, 1, GS_COPY_MEMSET),
	DRV_COPY(cuMemsetD16Async, 2, 3, 2, GS_COPY_MEMSET),
	DRV_COPY(cuMemsetD32Async, 2, 3, 4, GS_COPY_MEMSET),
	/* where kernel names come from */
	NAMES(GS_LIB_RUNTIME, __cudaRegisterFunction, REGISTER_FUNCTION),
	NAMES(GS_LIB_RUNTIME, __cudaGetKernel, GET_KERNEL),
	NAMES(GS_LIB_RUNTIME, cudaGetKernel, GET_KERNEL),
	NAMES(GS_LIB_DRIVER, cuModuleGetFunction, GET_FUNCTION),
	NAMES(GS_LIB_DRIVER, cuLibraryGetKernel, GET_FUNCTION),
};

#define NR_APIS (sizeof(apis) / sizeof(apis[0]))

const struct gs_cuda_api *gs_cuda_apis(size_t *nr)
{
	for (size_t i = 0; i < NR_APIS; i++)
		apis[i].id = (uint16_t)i;
	*nr = NR_APIS;
	return apis;
}

const struct gs_cuda_api *gs_cuda_api_get(uint16_t id)
{
	return id > 0 && id < NR_APIS ? &apis[id] : NULL;
}

const char *gs_cuda_api_name(uint16_t id)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(id);

	return api ? api->name : "unknown";
}

uint32_t gs_cuda_api_call_flags(const struct gs_cuda_api *api)
{
	const struct gs_copy_shape *c = &api->copy;

	switch (api->shape) {
	case GS_SHAPE_LAUNCH_RT:
	case GS_SHAPE_LAUNCH_DRV:
		return GS_CALL_F_STACK_ARGS | GS_CALL_F_USER_STACK;
	case GS_SHAPE_LAUNCH_RT_CONFIG:
	case GS_SHAPE_LAUNCH_DRV_CONFIG:
		return GS_CALL_F_DEREF_ARG0 | GS_CALL_F_USER_STACK;
	case GS_SHAPE_GRAPH_LAUNCH:
	case GS_SHAPE_SYNC:
		return GS_CALL_F_USER_STACK;
	case GS_SHAPE_COPY:
		return GS_CALL_F_USER_STACK |
		       (c->bytes >= GS_CALL_REG_ARGS || c->rows >= GS_CALL_REG_ARGS ||
					c->kind >= GS_CALL_REG_ARGS || c->stream >= GS_CALL_REG_ARGS
				? GS_CALL_F_STACK_ARGS
				: 0);
	case GS_SHAPE_GET_KERNEL:
		return GS_CALL_F_READ_OUT0;
	case GS_SHAPE_GET_FUNCTION:
		return GS_CALL_F_READ_OUT0 | GS_CALL_F_READ_STR2;
	case GS_SHAPE_MAP: /* the caller tells a caching allocator's segment */
		return GS_CALL_F_USER_STACK;
	default:
		return 0;
	}
}

bool gs_cuda_api_wants_return(const struct gs_cuda_api *api, uint32_t families)
{
	return api->family != GS_FAM_LAUNCH || (families & GS_FAM_BIT(GS_FAM_LAUNCH_LATENCY));
}

const char *gs_copy_kind_name(unsigned int kind)
{
	static const char *const names[GS_COPY__MAX] = {
		"HtoH", "HtoD", "DtoH", "DtoD", "Default", "PtoP", "Memset",
	};

	return kind < GS_COPY__MAX ? names[kind] : "unknown";
}

int gs_parse_event_families(const char *list, uint32_t *families)
{
	static const struct {
		const char *name;
		uint32_t bits;
	} known[] = {
		{ "cuda-mem", GS_FAM_BIT(GS_FAM_MEM) },
		{ "cuda-launch", GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_NAMES) },
		{ "cuda-launch-latency", GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_NAMES) |
						 GS_FAM_BIT(GS_FAM_LAUNCH_LATENCY) },
		{ "cuda-sync", GS_FAM_BIT(GS_FAM_SYNC) },
		{ "cuda-memcpy", GS_FAM_BIT(GS_FAM_COPY) },
		{ "torch-mem", GS_FAM_BIT(GS_FAM_TORCH) },
	};
	const char *p = list;

	*families = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		bool found = false;

		for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
			if (strlen(known[i].name) == len && !strncmp(p, known[i].name, len)) {
				*families |= known[i].bits;
				found = true;
			}
		}
		if (!found)
			return -EINVAL;
		p += len + (p[len] == ',');
	}
	return *families ? 0 : -EINVAL;
}

const char *gs_mem_kind_name(enum gs_mem_kind kind)
{
	switch (kind) {
	case GS_MEM_DEVICE:
		return "device";
	case GS_MEM_MANAGED:
		return "managed";
	case GS_MEM_HOST:
		return "host";
	}
	return "unknown";
}

const char *gs_cuda_error_name(enum gs_cuda_lib lib, int code)
{
	/* the codes that allocation calls return (driver_types.h, cuda.h of CUDA 13) */
	static const struct {
		int code;
		const char *runtime, *driver;
	} names[] = {
		{ 0, "cudaSuccess", "CUDA_SUCCESS" },
		{ 1, "cudaErrorInvalidValue", "CUDA_ERROR_INVALID_VALUE" },
		{ GS_CUDA_ERROR_OUT_OF_MEMORY, "cudaErrorMemoryAllocation",
		  "CUDA_ERROR_OUT_OF_MEMORY" },
		{ 3, "cudaErrorInitializationError", "CUDA_ERROR_NOT_INITIALIZED" },
		{ 4, "cudaErrorCudartUnloading", "CUDA_ERROR_DEINITIALIZED" },
		{ 34, "cudaErrorStubLibrary", "CUDA_ERROR_STUB_LIBRARY" },
		{ 35, "cudaErrorInsufficientDriver", "CUDA_ERROR_35" },
		{ 36, "cudaErrorCallRequiresNewerDriver", "CUDA_ERROR_36" },
		{ 100, "cudaErrorNoDevice", "CUDA_ERROR_NO_DEVICE" },
		{ 101, "cudaErrorInvalidDevice", "CUDA_ERROR_INVALID_DEVICE" },
		{ 201, "cudaErrorDeviceUninitialized", "CUDA_ERROR_INVALID_CONTEXT" },
		{ 700, "cudaErrorIllegalAddress", "CUDA_ERROR_ILLEGAL_ADDRESS" },
		{ 999, "cudaErrorUnknown", "CUDA_ERROR_UNKNOWN" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == code)
			return lib == GS_LIB_DRIVER ? names[i].driver : names[i].runtime;
	return "unknown error";
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* libcudart.so, libcudart.so.13, libcudart.so.12.4.127, pip's libcudart-80664282.so.10.2 */
bool gs_is_cudart_name(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "libcudart.so", 12) || !strncmp(b, "libcudart-", 10);
}

/* libcuda.so, libcuda.so.1, libcuda.so.580.65.06 (not libcudart, libcudnn, ...) */
bool gs_is_libcuda_name(const char *path)
{
	return !strncmp(base_name(path), "libcuda.so", 10);
}

/* ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-2.31.so, ld-musl-x86_64.so.1 */
bool gs_is_ld_so_name(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "ld-linux", 8) || (!strncmp(b, "ld-", 3) && strstr(b, ".so"));
}
