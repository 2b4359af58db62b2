// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* syms.c: PyTorch library names, hook functions by demangled meaning, version lookup. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/torch/syms.h"
#include "user/demangle.h"
#include "user/safe_open.h"

#define ALLOCATOR_NS "c10::cuda::CUDACachingAllocator::"

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* the part of a demangled name before its parameter list */
static size_t name_len(const char *demangled)
{
	const char *paren = strchr(demangled, '(');

	return paren ? (size_t)(paren - demangled) : strlen(demangled);
}

static size_t count_params(const char *params)
{
	size_t n = 1, depth = 0;

	if (!strcmp(params, "()"))
		return 0;
	for (const char *p = params + 1; *p && !(depth == 0 && *p == ')'); p++) {
		if (*p == '<' || *p == '(')
			depth++;
		else if (*p == '>' || *p == ')')
			depth--;
		else if (*p == ',' && depth == 0)
			n++;
	}
	return n;
}

/* THCCachingAllocator (1.13) or Native::NativeCachingAllocator (2.x), in the allocator ns */
static bool is_caching_method(const char *d, size_t len, const char *method)
{
	static const char *const classes[] = { "THCCachingAllocator::",
					       "Native::NativeCachingAllocator::" };
	char want[160];

	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		int n = snprintf(want, sizeof(want), ALLOCATOR_NS "%s%s", classes[i], method);

		if (n > 0 && (size_t)n == len && !strncmp(d, want, len))
			return true;
	}
	return false;
}

static enum gs_torch_hook classify_demangled(const char *d)
{
	size_t len = name_len(d);
	const char *params = d + len;

	if (!*params || d[strlen(d) - 1] != ')') /* no parameters, or a [clone ...] */
		return GS_TORCH_HOOK_NONE;
	if (len == strlen("c10::reportMemoryUsageToProfiler") &&
	    starts_with(d, "c10::reportMemoryUsageToProfiler") &&
	    starts_with(params, "(void*, long, ") && count_params(params) == 5)
		return GS_TORCH_HOOK_REPORT_USAGE;
	if (len == strlen("c10::reportOutOfMemoryToProfiler") &&
	    starts_with(d, "c10::reportOutOfMemoryToProfiler") && starts_with(params, "(long, ") &&
	    count_params(params) == 4)
		return GS_TORCH_HOOK_REPORT_OOM;
	if (!strcmp(d, "c10::alloc_cpu(unsigned long)"))
		return GS_TORCH_HOOK_ALLOC_CPU;
	if (!strcmp(d, "c10::free_cpu(void*)"))
		return GS_TORCH_HOOK_FREE_CPU;
	/* malloc(void** devPtr, int | c10::DeviceIndex device, size_t size, cudaStream_t) */
	if (is_caching_method(d, len, "malloc") && starts_with(params, "(void**, ") &&
	    count_params(params) == 4 && strstr(params, ", unsigned long, "))
		return GS_TORCH_HOOK_CACHING_MALLOC;
	if (is_caching_method(d, len, "free") && !strcmp(params, "(void*)"))
		return GS_TORCH_HOOK_CACHING_FREE;
	if (len == strlen(ALLOCATOR_NS "Native::DeviceCachingAllocator::mallocWithAddress") &&
	    starts_with(d, ALLOCATOR_NS "Native::DeviceCachingAllocator::mallocWithAddress") &&
	    starts_with(params, "(unsigned long, ") && count_params(params) == 3)
		return GS_TORCH_HOOK_MALLOC_WITH_ADDRESS;
	return GS_TORCH_HOOK_NONE;
}

enum gs_torch_hook gs_torch_classify_symbol(const char *mangled)
{
	static const char *const needles[] = {
		"reportMemoryUsageToProfiler",
		"reportOutOfMemoryToProfiler",
		"alloc_cpu",
		"free_cpu",
		"CachingAllocator6malloc",
		"CachingAllocator4free",
		"mallocWithAddress",
	};
	enum gs_torch_hook hook = GS_TORCH_HOOK_NONE;
	bool maybe = false;
	char *d;

	/* demangling every symbol of a large library is slow: only names that could match */
	if (strncmp(mangled, "_ZN", 3))
		return GS_TORCH_HOOK_NONE;
	for (size_t i = 0; i < sizeof(needles) / sizeof(needles[0]) && !maybe; i++)
		maybe = strstr(mangled, needles[i]) != NULL;
	if (!maybe)
		return GS_TORCH_HOOK_NONE;
	d = gs_demangle(mangled);
	if (d)
		hook = classify_demangled(d);
	free(d);
	return hook;
}

const char *gs_torch_hook_name(enum gs_torch_hook hook)
{
	static const char *const names[GS_TORCH_HOOK__MAX] = {
		[GS_TORCH_HOOK_NONE] = "none",
		[GS_TORCH_HOOK_REPORT_USAGE] = "c10::reportMemoryUsageToProfiler",
		[GS_TORCH_HOOK_REPORT_OOM] = "c10::reportOutOfMemoryToProfiler",
		[GS_TORCH_HOOK_ALLOC_CPU] = "c10::alloc_cpu",
		[GS_TORCH_HOOK_FREE_CPU] = "c10::free_cpu",
		[GS_TORCH_HOOK_CACHING_MALLOC] = "CachingAllocator::malloc",
		[GS_TORCH_HOOK_CACHING_FREE] = "CachingAllocator::free",
		[GS_TORCH_HOOK_MALLOC_WITH_ADDRESS] = "DeviceCachingAllocator::mallocWithAddress",
	};

	return hook < GS_TORCH_HOOK__MAX ? names[hook] : "none";
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* libc10.so, libc10.so.1.13, libc10.so.2 (a vendored name like libc10-<hash>.so too) */
bool gs_is_c10_name(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "libc10.so", 9) || !strncmp(b, "libc10-", 7);
}

const char *const gs_torch_map_allocator_ctors[] = {
	"_ZN2at12MapAllocatorC2ENS_6WithFdESt17basic_string_viewIcSt11char_traitsIcEEiim",
	"_ZN2at12MapAllocatorC2ENS_6WithFdEN3c1017basic_string_viewIcEEiim",
	NULL,
};

bool gs_is_torch_cpu_name(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "libtorch_cpu.so", 15) || !strncmp(b, "libtorch_cpu-", 13);
}

bool gs_is_c10_cuda_name(const char *path)
{
	const char *b = base_name(path);

	return !strncmp(b, "libc10_cuda.so", 14) || !strncmp(b, "libc10_cuda-", 12);
}

bool gs_is_libstdcxx_name(const char *path)
{
	return !strncmp(base_name(path), "libstdc++.so", 12);
}

const char *gs_torch_source_name(unsigned int source)
{
	switch (source) {
	case GS_TORCH_SRC_USDT:
		return "usdt";
	case GS_TORCH_SRC_REPORT:
		return "report";
	case GS_TORCH_SRC_SYMBOLS:
		return "symbols";
	case GS_TORCH_SRC_CPU:
		return "cpu";
	}
	return "none";
}

bool gs_torch_parse_version_py(const char *text, char *buf, size_t len)
{
	const char *p = text;

	while ((p = strstr(p, "__version__"))) {
		const char *q = p + strlen("__version__");
		size_t n;
		char quote;

		if (p != text && p[-1] != '\n') {
			p = q;
			continue;
		}
		q += strspn(q, " \t");
		if (*q++ != '=')
			return false;
		q += strspn(q, " \t");
		quote = *q;
		if (quote != '\'' && quote != '"')
			return false;
		n = strcspn(q + 1, quote == '\'' ? "'\n" : "\"\n");
		if (q[1 + n] != quote || n == 0 || n >= len)
			return false;
		memcpy(buf, q + 1, n);
		buf[n] = '\0';
		return true;
	}
	return false;
}

void gs_torch_read_version(const char *root, const char *lib_path, char *buf, size_t len)
{
	char path[4096], text[4096];
	const char *b = base_name(lib_path), *suffix;
	size_t dir_len = (size_t)(b - lib_path);
	struct stat st;
	ssize_t n = -1;
	int w, fd;

	buf[0] = '\0';
	/*
	 * <site-packages>/torch/lib/libc10.so -> <site-packages>/torch/version.py, a file of
	 * the process's user: within its root, never through a symlink, a regular file only
	 * (a FIFO there would block).
	 */
	w = snprintf(path, sizeof(path), "%.*s../version.py", (int)dir_len, lib_path);
	fd = w > 0 && (size_t)w < sizeof(path) ? gs_open_in_root(root, path, &st) : -ENAMETOOLONG;
	if (fd >= 0) {
		n = read(fd, text, sizeof(text) - 1);
		close(fd);
	}
	if (n >= 0) {
		text[n] = '\0';
		if (gs_torch_parse_version_py(text, buf, len))
			return;
	}
	suffix = strstr(b, ".so.");
	if (suffix && suffix[4] >= '0' && suffix[4] <= '9' && strlen(suffix + 4) < len)
		strcpy(buf, suffix + 4);
}
