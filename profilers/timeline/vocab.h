/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* vocab.h: the timeline's one vocabulary: the categories and counter names of every trace. */
#ifndef GS_TIMELINE_VOCAB_H
#define GS_TIMELINE_VOCAB_H

/*
 * Every trace gpusnoop writes (record, the daemon's flight-recorder and OOM traces, stitch's
 * merges of them) names its rows with these words, Kineto's where Kineto has one, so that
 * Holistic Trace Analysis and Perfetto's PyTorch views recognise them. `gpusnoop stats`
 * counts rows by them. gpusnoop-record(8) (scripts/man/sections/gpusnoop-record.8.md) lists
 * them for users: change it with this file.
 *
 * "cat" of a row:
 *   cuda_runtime  a CUDA runtime API call on its thread (cudaMalloc, cudaLaunchKernel, ...):
 *                 complete (X) slices, entry to return, allocations and frees included
 *   cuda_driver   the same for a driver API call (cuMemAlloc, cuLaunchKernel, ...)
 *   kernel        a kernel's execution on its device and stream (-e gpu)
 *   gpu_memcpy    a copy's execution on its device and stream (-e gpu)
 *   gpu_memset    a memset's execution on its device and stream (-e gpu)
 *   ac2g          the flow from a launch or copy call to the GPU work it made (s/f events)
 *   nvtx          an NVTX range (X) or mark (i) on the thread that made it
 *   cpu_sample    a CPU sample (-e cpu): an instant on its thread, named by its function
 *   torch_oom     PyTorch's out-of-memory (an instant, with what was requested)
 *   trigger       what made the daemon write a flight-recorder trace (an instant)
 *   counter       a sample of one of the counters below (C events), per process:
 *   "CUDA memory"                 device and managed bytes held through the CUDA API
 *   "CUDA pinned host memory"     page-locked host bytes (cudaMallocHost, ...), once any
 *   "PyTorch DEV allocated"       bytes of live tensors on DEV (cuda:0, cpu, ...)
 *   "PyTorch DEV reserved"        bytes the caching allocator holds on DEV
 * Instants and counter samples carry "dur": 0: Holistic Trace Analysis keeps only rows with
 * a duration and a category, and loads no trace without one.
 */
#define GS_TL_CAT_CUDA_RUNTIME "cuda_runtime"
#define GS_TL_CAT_CUDA_DRIVER  "cuda_driver"
#define GS_TL_CAT_FLOW	       "ac2g"
#define GS_TL_CAT_NVTX	       "nvtx"
#define GS_TL_CAT_CPU_SAMPLE   "cpu_sample"
#define GS_TL_CAT_TORCH_OOM    "torch_oom"
#define GS_TL_CAT_TRIGGER      "trigger"

#define GS_TL_COUNTER_MEMORY "CUDA memory"
#define GS_TL_COUNTER_PINNED "CUDA pinned host memory"

#endif /* GS_TIMELINE_VOCAB_H */
