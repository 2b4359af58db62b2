/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cuda_api.h: the CUDA allocation APIs gpusnoop probes, and how to recognise their libraries. */
#ifndef GS_CUDA_API_H
#define GS_CUDA_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gs_cuda_lib { GS_LIB_RUNTIME, GS_LIB_DRIVER };
/* which BPF entry program reads the arguments */
enum gs_api_shape { GS_SHAPE_ALLOC, GS_SHAPE_ALLOC_PITCH, GS_SHAPE_FREE };
enum gs_mem_kind { GS_MEM_DEVICE, GS_MEM_MANAGED, GS_MEM_HOST };

struct gs_mem_api {
	uint16_t id;	  /* the probe's bpf_cookie; index into the table */
	const char *name; /* exported symbol */
	enum gs_cuda_lib lib;
	enum gs_api_shape shape;
	enum gs_mem_kind kind;
};

/* The table; entry 0 is unused so that a zero cookie means "unknown". */
const struct gs_mem_api *gs_mem_apis(size_t *nr);
/* Name of an API id, "unknown" for ids not in the table. */
const char *gs_mem_api_name(uint16_t id);
const char *gs_mem_kind_name(enum gs_mem_kind kind);
const struct gs_mem_api *gs_mem_api_get(uint16_t id);

/* Symbolic name of an error code of a runtime (cudaError_t) or driver (CUresult) call. */
const char *gs_cuda_error_name(enum gs_cuda_lib lib, int code);

/* Whether a mapped file's name marks it as the CUDA runtime or the driver. */
bool gs_is_cudart_name(const char *path);
bool gs_is_libcuda_name(const char *path);
bool gs_is_ld_so_name(const char *path);

#endif /* GS_CUDA_API_H */
