/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* syms.h: PyTorch's libraries and functions recognised by name and demangled meaning. */
#ifndef GS_TORCH_SYMS_H
#define GS_TORCH_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* functions gpusnoop probes in libc10.so / libc10_cuda.so */
enum gs_torch_hook {
	GS_TORCH_HOOK_NONE,
	GS_TORCH_HOOK_REPORT_USAGE,   /* c10::reportMemoryUsageToProfiler(void*, long, ...) */
	GS_TORCH_HOOK_REPORT_OOM,     /* c10::reportOutOfMemoryToProfiler(long, ...) */
	GS_TORCH_HOOK_ALLOC_CPU,      /* c10::alloc_cpu(unsigned long) */
	GS_TORCH_HOOK_FREE_CPU,	      /* c10::free_cpu(void*) */
	GS_TORCH_HOOK_CACHING_MALLOC, /* {THC,Native}CachingAllocator::malloc(void**, dev, size, s) */
	GS_TORCH_HOOK_CACHING_FREE,   /* {THC,Native}CachingAllocator::free(void*) */
	/* 2.15: DeviceCachingAllocator::mallocWithAddress(size, stream, ptr), from allocateWithAddress */
	GS_TORCH_HOOK_MALLOC_WITH_ADDRESS,
	GS_TORCH_HOOK__MAX,
};

/*
 * What a mangled symbol is, judged by its demangled name rather than one exact mangled
 * string, so that 1.13's and 2.x's spellings (int64 vs size_t totals, int vs int8 device,
 * the Native namespace) all resolve. Clones ("[clone .constprop.0]") are not matched.
 */
enum gs_torch_hook gs_torch_classify_symbol(const char *mangled);
const char *gs_torch_hook_name(enum gs_torch_hook hook);

/*
 * at::MapAllocator's constructor (WithFd, string_view, fd, flags, size) and base object
 * destructor in libtorch_cpu.so, by their exported mangled names: 2.x's c10::string_view
 * (2.0..2.5) and std::string_view (later) spellings. NULL-terminated lists.
 */
extern const char *const gs_torch_map_allocator_ctors[];
#define GS_TORCH_MAP_ALLOCATOR_DTOR "_ZN2at12MapAllocatorD2Ev"

/* libc10.so, libc10.so.1.13 (not libc10_cuda) / libc10_cuda.so* / libstdc++.so* */
bool gs_is_c10_name(const char *path);
/* libtorch_cpu.so (a vendored libtorch_cpu-<hash>.so too) */
bool gs_is_torch_cpu_name(const char *path);
bool gs_is_c10_cuda_name(const char *path);
bool gs_is_libstdcxx_name(const char *path);

/* "usdt", "report", "symbols", "cpu" for GS_TORCH_SRC_*; "none" otherwise */
const char *gs_torch_source_name(unsigned int source);

/*
 * The PyTorch version of the install a libc10 belongs to: `__version__` of the torch
 * package's version.py next to its lib/ directory (wheels, conda), else the version suffix
 * of the file name (Debian's libc10.so.1.13). Paths resolve inside root (a /proc/PID/root;
 * NULL: "/"), never out of it.
 * Writes "" when unknown.
 */
void gs_torch_read_version(const char *root, const char *lib_path, char *buf, size_t len);
/* Parses the `__version__ = '...'` line of a version.py text; false when absent. */
bool gs_torch_parse_version_py(const char *text, char *buf, size_t len);

#endif /* GS_TORCH_SYMS_H */
