// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cuda_api.c: allocation APIs of libcudart and libcuda (names and argument shapes from the
 * CUDA 13 headers; per-thread-stream _ptsz variants are separate exports). */
#include <string.h>
#include "profilers/cuda_api.h"

#define RT(n, shape, kind)                                             \
	{                                                              \
		0, #n, GS_LIB_RUNTIME, GS_SHAPE_##shape, GS_MEM_##kind \
	}
#define DRV(n, shape, kind)                                           \
	{                                                             \
		0, #n, GS_LIB_DRIVER, GS_SHAPE_##shape, GS_MEM_##kind \
	}

static struct gs_mem_api apis[] = {
	{ 0, "unknown", GS_LIB_RUNTIME, GS_SHAPE_ALLOC, GS_MEM_DEVICE },
	RT(cudaMalloc, ALLOC, DEVICE),
	RT(cudaMallocAsync, ALLOC, DEVICE),
	RT(cudaMallocAsync_ptsz, ALLOC, DEVICE),
	RT(cudaMallocFromPoolAsync, ALLOC, DEVICE),
	RT(cudaMallocFromPoolAsync_ptsz, ALLOC, DEVICE),
	RT(cudaMallocManaged, ALLOC, MANAGED),
	RT(cudaMallocPitch, ALLOC_PITCH, DEVICE),
	RT(cudaMallocHost, ALLOC, HOST),
	RT(cudaHostAlloc, ALLOC, HOST),
	RT(cudaFree, FREE, DEVICE),
	RT(cudaFreeAsync, FREE, DEVICE),
	RT(cudaFreeAsync_ptsz, FREE, DEVICE),
	RT(cudaFreeHost, FREE, HOST),
	DRV(cuMemAlloc_v2, ALLOC, DEVICE),
	DRV(cuMemAllocAsync, ALLOC, DEVICE),
	DRV(cuMemAllocAsync_ptsz, ALLOC, DEVICE),
	DRV(cuMemAllocFromPoolAsync, ALLOC, DEVICE),
	DRV(cuMemAllocFromPoolAsync_ptsz, ALLOC, DEVICE),
	DRV(cuMemAllocManaged, ALLOC, MANAGED),
	DRV(cuMemAllocPitch_v2, ALLOC_PITCH, DEVICE),
	DRV(cuMemAllocHost_v2, ALLOC, HOST),
	DRV(cuMemHostAlloc, ALLOC, HOST),
	DRV(cuMemFree_v2, FREE, DEVICE),
	DRV(cuMemFreeAsync, FREE, DEVICE),
	DRV(cuMemFreeAsync_ptsz, FREE, DEVICE),
	DRV(cuMemFreeHost, FREE, HOST),
};

const struct gs_mem_api *gs_mem_apis(size_t *nr)
{
	for (size_t i = 0; i < sizeof(apis) / sizeof(apis[0]); i++)
		apis[i].id = (uint16_t)i;
	*nr = sizeof(apis) / sizeof(apis[0]);
	return apis;
}

const struct gs_mem_api *gs_mem_api_get(uint16_t id)
{
	return id > 0 && id < sizeof(apis) / sizeof(apis[0]) ? &apis[id] : NULL;
}

const char *gs_mem_api_name(uint16_t id)
{
	const struct gs_mem_api *api = gs_mem_api_get(id);

	return api ? api->name : "unknown";
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
		{ 2, "cudaErrorMemoryAllocation", "CUDA_ERROR_OUT_OF_MEMORY" },
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
