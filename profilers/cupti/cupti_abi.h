/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cupti_abi.h: what gpusnoop reads of CUPTI 13 activity records, and the injection's probes. */
#ifndef GS_CUPTI_ABI_H
#define GS_CUPTI_ABI_H

/*
 * Byte offsets of the fields gpusnoop decodes, from CUDA 13.0's cupti_activity.h
 * (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemset4), the same in every
 * record version since CUDA 11.6 (Kernel7.., Memcpy4..): the injection library hands over
 * the first *_NEED bytes of a record, whichever version its CUPTI writes. It asserts them
 * against the real headers it is built with; the decoder reads records through them with
 * size checks, and the tests' stand-in CUPTI writes whole CUDA 13 records (*_SIZE).
 * Includes nothing, like bpf/gs_event.h.
 */
#define GS_CUPTI_KIND_MEMCPY		1  /* CUPTI_ACTIVITY_KIND_MEMCPY */
#define GS_CUPTI_KIND_MEMSET		2  /* CUPTI_ACTIVITY_KIND_MEMSET */
#define GS_CUPTI_KIND_CONCURRENT_KERNEL 10 /* CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL */

#define GS_CUPTI_DOMAIN_DRIVER_API  1 /* CUPTI_CB_DOMAIN_DRIVER_API */
#define GS_CUPTI_DOMAIN_RUNTIME_API 2 /* CUPTI_CB_DOMAIN_RUNTIME_API */

/* CUpti_ActivityMemcpyKind */
#define GS_CUPTI_MEMCPY_HTOD 1
#define GS_CUPTI_MEMCPY_DTOH 2
#define GS_CUPTI_MEMCPY_DTOD 8
#define GS_CUPTI_MEMCPY_HTOH 9
#define GS_CUPTI_MEMCPY_PTOP 10

/* every record: kind (u32) at 0 */
#define GS_CUPTI_OFF_KIND 0

/* CUpti_ActivityKernel10: 216 bytes */
#define GS_CUPTI_KERNEL_SIZE	     216
#define GS_CUPTI_KERNEL_REGISTERS    6	 /* u16 registersPerThread */
#define GS_CUPTI_KERNEL_START	     16	 /* u64 */
#define GS_CUPTI_KERNEL_END	     24	 /* u64 */
#define GS_CUPTI_KERNEL_DEVICE	     40	 /* u32 deviceId */
#define GS_CUPTI_KERNEL_CONTEXT	     44	 /* u32 contextId */
#define GS_CUPTI_KERNEL_STREAM	     48	 /* u32 streamId */
#define GS_CUPTI_KERNEL_GRID	     52	 /* i32 gridX, gridY, gridZ */
#define GS_CUPTI_KERNEL_BLOCK	     64	 /* i32 blockX, blockY, blockZ */
#define GS_CUPTI_KERNEL_STATIC_SMEM  76	 /* i32 */
#define GS_CUPTI_KERNEL_DYNAMIC_SMEM 80	 /* i32 */
#define GS_CUPTI_KERNEL_CORRELATION  92	 /* u32 */
#define GS_CUPTI_KERNEL_NAME	     104 /* const char * */
#define GS_CUPTI_KERNEL_NEED	     112 /* bytes a decoder needs */

/* CUpti_ActivityMemcpy6: 96 bytes */
#define GS_CUPTI_MEMCPY_SIZE	    96
#define GS_CUPTI_MEMCPY_COPY_KIND   4 /* u8 CUpti_ActivityMemcpyKind */
#define GS_CUPTI_MEMCPY_BYTES	    8 /* u64 */
#define GS_CUPTI_MEMCPY_START	    16
#define GS_CUPTI_MEMCPY_END	    24
#define GS_CUPTI_MEMCPY_DEVICE	    32
#define GS_CUPTI_MEMCPY_CONTEXT	    36
#define GS_CUPTI_MEMCPY_STREAM	    40
#define GS_CUPTI_MEMCPY_CORRELATION 44
#define GS_CUPTI_MEMCPY_NEED	    48

/* CUpti_ActivityMemset4: 88 bytes */
#define GS_CUPTI_MEMSET_SIZE	    88
#define GS_CUPTI_MEMSET_VALUE	    4 /* u32 */
#define GS_CUPTI_MEMSET_BYTES	    8
#define GS_CUPTI_MEMSET_START	    16
#define GS_CUPTI_MEMSET_END	    24
#define GS_CUPTI_MEMSET_DEVICE	    32
#define GS_CUPTI_MEMSET_CONTEXT	    36
#define GS_CUPTI_MEMSET_STREAM	    40
#define GS_CUPTI_MEMSET_CORRELATION 44
#define GS_CUPTI_MEMSET_NEED	    48

/*
 * The injection library's USDT probes (provider "gpusnoop"), each behind its own
 * semaphore, so that an untraced process pays one load and branch per site:
 *   activity(const void *record, u32 size, const char *kernel_name)   a completed record
 *   api(u32 correlation_id, u32 cbid, u32 domain)   a CUDA API call is entered
 *   dropped(u64 records)   CUPTI dropped this many records since the last report
 *   clock(u64 mono_before, u64 cupti_ts, u64 mono_after)   a clock check of the mapping
 *   nvtx(const struct gs_nvtx_usdt *call)   an NVTX call (bpf/gs_nvtx.h, nvtx_inject.c)
 */
#define GS_CUPTI_USDT_PROVIDER "gpusnoop"

/* How CUPTI timestamps become CLOCK_MONOTONIC (gs_gpu_clock.method) */
#define GS_CUPTI_CLOCK_CALLBACK 1 /* cuptiActivityRegisterTimestampCallback: CLOCK_MONOTONIC */

/* The name the library is installed under, next to the gpusnoop binary. */
#define GS_CUPTI_LIB_NAME "libgpusnoop-cupti.so"

#endif /* GS_CUPTI_ABI_H */
