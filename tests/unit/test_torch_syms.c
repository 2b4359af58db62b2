// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_torch_syms.c: PyTorch hooks by demangled meaning across versions, versions, accounting. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "profilers/torch/accounting.h"
#include "profilers/torch/dynsym.h"
#include "profilers/torch/syms.h"
#include "tests/unit/harness.h"
#include "user/elf_file.h"
#include "user/stack_table.h"
#include "user/symcache.h"

/* the mangled names of notes/cuda-torch-facts.md section 2.3, per version */
GS_TEST(profiler_hooks_of_every_version)
{
	/* 1.13: int64 totals; 2.x: size_t totals */
	GS_EXPECT_EQ(
		gs_torch_classify_symbol("_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE"),
		GS_TORCH_HOOK_REPORT_USAGE);
	GS_EXPECT_EQ(
		gs_torch_classify_symbol("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"),
		GS_TORCH_HOOK_REPORT_USAGE);
	GS_EXPECT_EQ(
		gs_torch_classify_symbol("_ZN3c1027reportOutOfMemoryToProfilerElllNS_6DeviceE"),
		GS_TORCH_HOOK_REPORT_OOM);
	GS_EXPECT_EQ(
		gs_torch_classify_symbol("_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE"),
		GS_TORCH_HOOK_REPORT_OOM);
	GS_EXPECT_EQ(gs_torch_classify_symbol("_ZN3c109alloc_cpuEm"), GS_TORCH_HOOK_ALLOC_CPU);
	GS_EXPECT_EQ(gs_torch_classify_symbol("_ZN3c108free_cpuEPv"), GS_TORCH_HOOK_FREE_CPU);
}

GS_TEST(caching_allocator_of_every_version)
{
	static const char *const mallocs[] = {
		/* 1.13 THCCachingAllocator (int device) */
		"_ZN3c104cuda20CUDACachingAllocator19THCCachingAllocator6mallocEPPvimP11CUstream_"
		"st",
		/* 2.0 Native, int device */
		"_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator6mallocEPPvimP11"
		"CUstream_st",
		/* 2.4 / 2.6: DeviceIndex (signed char) */
		"_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator6mallocEPPvamP11"
		"CUstream_st",
	};
	static const char *const frees[] = {
		"_ZN3c104cuda20CUDACachingAllocator19THCCachingAllocator4freeEPv",
		"_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator4freeEPv",
	};

	for (size_t i = 0; i < sizeof(mallocs) / sizeof(mallocs[0]); i++)
		GS_EXPECT_EQ(gs_torch_classify_symbol(mallocs[i]), GS_TORCH_HOOK_CACHING_MALLOC);
	for (size_t i = 0; i < sizeof(frees) / sizeof(frees[0]); i++)
		GS_EXPECT_EQ(gs_torch_classify_symbol(frees[i]), GS_TORCH_HOOK_CACHING_FREE);
	/* 2.15's libc10_cuda.so .symtab (allocateWithAddress calls it, not malloc) */
	GS_EXPECT_EQ(
		gs_torch_classify_symbol("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCach"
					 "ingAllocator17mallocWithAddressEmP11CUstream_stPv"),
		GS_TORCH_HOOK_MALLOC_WITH_ADDRESS);
	/* NativeCachingAllocator::allocateWithAddress is not it (it returns a DataPtr) */
	GS_EXPECT_EQ(
		gs_torch_classify_symbol("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCach"
					 "ingAllocator19allocateWithAddressEmPv"),
		GS_TORCH_HOOK_NONE);
}

GS_TEST(look_alikes_are_not_hooks)
{
	static const char *const others[] = {
		/* the per-device allocator's own malloc/free take a Block, not a void** */
		"_ZN3c104cuda20CUDACachingAllocator22DeviceCachingAllocator6mallocEimP11CUstream_"
		"st",
		"_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEamP11CUst"
		"ream_"
		"st",
		"_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator4freeEPNS2_12_"
		"GLOBAL__"
		"N_15BlockE",
		"_ZN3c104cuda20CUDACachingAllocator10raw_deleteEPv",
		"_ZNK3c104cuda20CUDACachingAllocator20CudaCachingAllocator8allocateEm",
		"_ZN3c1025ProfiledCPUMemoryReporter11OutOfMemoryEm",
		"_ZN3c109alloc_cpuEm.constprop.0", /* a clone, not the entry point */
		"alloc_cpu",
		"_ZN5other9alloc_cpuEm",
		"",
	};

	for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
		GS_EXPECT_EQ(gs_torch_classify_symbol(others[i]), GS_TORCH_HOOK_NONE);
}

struct found {
	int count[GS_TORCH_HOOK__MAX]; /* distinct addresses: .symtab and .dynsym repeat exports */
	uint64_t addr[GS_TORCH_HOOK__MAX];
};

static int count_hook(const char *name, uint64_t vaddr, void *ctx)
{
	struct found *f = ctx;
	enum gs_torch_hook h = gs_torch_classify_symbol(name);

	if (f->addr[h] != vaddr)
		f->count[h]++;
	f->addr[h] = vaddr;
	return 0;
}

/* what g++ itself mangled in the fixture pair */
GS_TEST(fixture_libraries)
{
	struct gs_elf *c10 = gs_elf__open(GS_FIXTURES "/torch/lib/libc10.so");
	struct gs_elf *cuda = gs_elf__open(GS_FIXTURES "/torch/lib/libc10_cuda.so");
	struct found a = {}, b = {};

	if (!GS_EXPECT(c10 && cuda))
		goto out;
	gs_elf__for_each_function(c10, count_hook, &a);
	gs_elf__for_each_function(cuda, count_hook, &b);
	GS_EXPECT_EQ(a.count[GS_TORCH_HOOK_REPORT_USAGE], 1);
	GS_EXPECT_EQ(a.count[GS_TORCH_HOOK_REPORT_OOM], 1);
	GS_EXPECT_EQ(a.count[GS_TORCH_HOOK_ALLOC_CPU], 1);
	GS_EXPECT_EQ(a.count[GS_TORCH_HOOK_FREE_CPU], 1);
	GS_EXPECT_EQ(b.count[GS_TORCH_HOOK_CACHING_MALLOC], 1);
	GS_EXPECT_EQ(b.count[GS_TORCH_HOOK_CACHING_FREE], 1);
	GS_EXPECT_EQ(b.count[GS_TORCH_HOOK_MALLOC_WITH_ADDRESS], 1);
out:
	gs_elf__free(c10);
	gs_elf__free(cuda);
}

/* exports found through .dynsym alone land where the full symbol load puts them */
GS_TEST(exports_through_dynsym)
{
	const char *const names[] = { "cuMemMap", "cuMemUnmap", "no_such_function", "mem_alloc" };
	struct gs_elf *elf = gs_elf__open(GS_FIXTURES "/lib/libcuda.so.1");
	int fd = open(GS_FIXTURES "/lib/libcuda.so.1", O_RDONLY | O_CLOEXEC);
	uint64_t off[4] = { 1, 1, 1, 1 }, want;

	if (!GS_EXPECT(elf && fd >= 0))
		goto out;
	GS_EXPECT_EQ(gs_dynsym_offsets(fd, names, 4, off), 0);
	for (int i = 0; i < 2; i++) {
		GS_EXPECT_EQ(
			gs_elf__vaddr_to_offset(elf, gs_elf__find_function(elf, names[i]), &want),
			0);
		GS_EXPECT_EQ(off[i], want);
	}
	GS_EXPECT_EQ(off[2], 0);
	GS_EXPECT_EQ(off[3], 0); /* static: in .symtab only */
	GS_EXPECT_EQ(gs_dynsym_offsets(fd, names, 9, off), -EINVAL);
out:
	if (fd >= 0)
		close(fd);
	gs_elf__free(elf);
}

GS_TEST(library_names)
{
	GS_EXPECT(gs_is_c10_name("/x/site-packages/torch/lib/libc10.so"));
	GS_EXPECT(gs_is_c10_name("/usr/lib/x86_64-linux-gnu/libc10.so.1.13"));
	GS_EXPECT(!gs_is_c10_name("/x/torch/lib/libc10_cuda.so"));
	GS_EXPECT(!gs_is_c10_name("/usr/lib/libc.so.6"));
	GS_EXPECT(gs_is_c10_cuda_name("/x/torch/lib/libc10_cuda.so"));
	GS_EXPECT(!gs_is_c10_cuda_name("/x/torch/lib/libc10.so"));
	GS_EXPECT(gs_is_libstdcxx_name("/usr/lib/x86_64-linux-gnu/libstdc++.so.6"));
	GS_EXPECT(!gs_is_libstdcxx_name("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	GS_EXPECT(gs_is_torch_cpu_name("/x/site-packages/torch/lib/libtorch_cpu.so"));
	GS_EXPECT(!gs_is_torch_cpu_name("/x/site-packages/torch/lib/libtorch_cuda.so"));
	GS_EXPECT(!gs_is_torch_cpu_name("/x/site-packages/torch/lib/libtorch.so"));
}

GS_TEST(version_py)
{
	char v[32];

	GS_EXPECT(gs_torch_parse_version_py("__version__ = '2.4.0+cu121'\n", v, sizeof(v)));
	GS_EXPECT_STR_EQ(v, "2.4.0+cu121");
	GS_EXPECT(gs_torch_parse_version_py("from typing import Optional\n"
					    "__all__ = ['__version__', 'debug']\n"
					    "__version__ = \"1.13.1\"\ndebug = False\n",
					    v, sizeof(v)));
	GS_EXPECT_STR_EQ(v, "1.13.1");
	GS_EXPECT(!gs_torch_parse_version_py("git_version = 'abc'\n", v, sizeof(v)));
	GS_EXPECT(!gs_torch_parse_version_py("__version__ = 'unterminated\n", v, sizeof(v)));
	GS_EXPECT(!gs_torch_parse_version_py("__version__ = '2.10.0.dev20250101+cu128'\n", v, 8));
}

GS_TEST(version_of_an_install)
{
	char dir[] = "/tmp/gs-torch-XXXXXX", path[256], v[32];
	FILE *f;

	if (!GS_EXPECT(mkdtemp(dir)))
		return;
	snprintf(path, sizeof(path), "%s/torch", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/torch/lib", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/torch/version.py", dir);
	f = fopen(path, "w");
	if (GS_EXPECT(f)) {
		fputs("__version__ = '2.6.0+cu124'\n", f);
		fclose(f);
	}
	/* a wheel: lib/ next to version.py, seen through a root prefix */
	gs_torch_read_version(dir, "/torch/lib/libc10.so", v, sizeof(v));
	GS_EXPECT_STR_EQ(v, "2.6.0+cu124");
	/* Debian: no version.py above the lib directory, the file name says it */
	gs_torch_read_version(NULL, "/nonexistent/lib/libc10.so.1.13", v, sizeof(v));
	GS_EXPECT_STR_EQ(v, "1.13");
	gs_torch_read_version(NULL, "/nonexistent/lib/libc10.so", v, sizeof(v));
	GS_EXPECT_STR_EQ(v, "");
	unlink(path);
	snprintf(path, sizeof(path), "%s/torch/lib", dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/torch", dir);
	rmdir(path);
	rmdir(dir);
}

GS_TEST(block_sizes)
{
	GS_EXPECT_EQ(gs_torch_block_size(0), 512);
	GS_EXPECT_EQ(gs_torch_block_size(1), 512);
	GS_EXPECT_EQ(gs_torch_block_size(512), 512);
	GS_EXPECT_EQ(gs_torch_block_size(513), 1024);
	GS_EXPECT_EQ(gs_torch_block_size(100000), 100352);
}

static struct gs_torch_mem tensor(uint32_t pid, uint32_t tid, uint8_t source, uint8_t op,
				  int8_t device, uint64_t ptr, uint64_t size)
{
	struct gs_torch_mem e = {
		.hdr = { .type = GS_EV_TORCH_MEM, .pid = pid, .tid = tid },
		.ptr = ptr,
		.size = size,
		.source = source,
		.op = op,
		.device_type = GS_TORCH_DEV_CUDA,
		.device = device,
	};

	e.hdr.size = offsetof(struct gs_torch_mem, frames);
	return e;
}

#define NO_PID 0x7ffffff0 /* never a live process */

GS_TEST(accounting_by_source)
{
	struct gs_symcache *sc = gs_symcache__new();
	struct gs_stack_table *st = gs_stack_table__new(sc);
	struct gs_torch_acct m;
	struct gs_torch_proc *p;
	struct gs_torch_mem e;
	const struct gs_torch_device *d;

	if (!GS_EXPECT(sc && st))
		goto out;
	gs_torch_acct__init(&m, st, sc);
	/* USDT: the request, rounded to a 512-byte block as PyTorch counts it */
	e = tensor(NO_PID, 1, GS_TORCH_SRC_USDT, GS_TORCH_OP_ALLOC, 0, 0x1000, 1000);
	GS_EXPECT_EQ(gs_torch_acct__tensor(&m, &e), 0);
	e = tensor(NO_PID, 1, GS_TORCH_SRC_USDT, GS_TORCH_OP_ALLOC, 1, 0x2000, 3 << 20);
	GS_EXPECT_EQ(gs_torch_acct__tensor(&m, &e), 0);
	/* a second source in the same process is ignored (-a may probe two) */
	e = tensor(NO_PID, 1, GS_TORCH_SRC_REPORT, GS_TORCH_OP_ALLOC, 0, 0x9000, 4096);
	GS_EXPECT_EQ(gs_torch_acct__tensor(&m, &e), 0);
	p = gs_torch_acct__find(&m, NO_PID);
	if (!GS_EXPECT(p))
		goto out_release;
	gs_torch_proc__update(p);
	d = gs_torch_proc__device(p, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 0));
	GS_EXPECT(d && d->allocated == 1024 && d->tensors == 1 && !d->totals);
	d = gs_torch_proc__device(p, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 1));
	GS_EXPECT(d && d->allocated == 3 << 20 && d->tensors == 1);
	/* frees carry no device; unknown pointers are counted */
	e = tensor(NO_PID, 1, GS_TORCH_SRC_USDT, GS_TORCH_OP_FREE, -1, 0x1000, 0);
	gs_torch_acct__tensor(&m, &e);
	e = tensor(NO_PID, 1, GS_TORCH_SRC_USDT, GS_TORCH_OP_FREE, -1, 0x7777, 0);
	gs_torch_acct__tensor(&m, &e);
	gs_torch_proc__update(p);
	GS_EXPECT_EQ(p->unknown_frees, 1);
	GS_EXPECT(!gs_torch_proc__device(p, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 0)));
	GS_EXPECT_EQ(p->nr_devs, 1);

	/* the profiler hook: PyTorch's own totals win */
	e = tensor(NO_PID + 1, 1, GS_TORCH_SRC_REPORT, GS_TORCH_OP_ALLOC, 0, 0x1000, 1024);
	e.flags = GS_TORCH_F_TOTALS;
	e.total_allocated = 5 << 20;
	e.total_reserved = 20 << 20;
	gs_torch_acct__tensor(&m, &e);
	p = gs_torch_acct__find(&m, NO_PID + 1);
	if (!GS_EXPECT(p))
		goto out_release;
	gs_torch_proc__update(p);
	d = gs_torch_proc__device(p, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 0));
	GS_EXPECT(d && d->allocated == 5 << 20 && d->reserved == 20 << 20 && d->totals);
out_release:
	gs_torch_acct__release(&m);
out:
	gs_stack_table__free(st);
	gs_symcache__free(sc);
}

GS_TEST(oom_once_per_out_of_memory)
{
	struct gs_symcache *sc = gs_symcache__new();
	struct gs_stack_table *st = gs_stack_table__new(sc);
	struct gs_torch_oom e = { .hdr = { .type = GS_EV_TORCH_OOM, .pid = NO_PID, .tid = 7 } };
	struct gs_torch_oom_info info;
	struct gs_torch_acct m;

	if (!GS_EXPECT(sc && st))
		goto out;
	gs_torch_acct__init(&m, st, sc);
	e.hdr.size = offsetof(struct gs_torch_oom, frames);
	e.source = GS_TORCH_OOM_REPORT;
	e.size = 1 << 30;
	e.device_type = GS_TORCH_DEV_CUDA;
	GS_EXPECT_EQ(gs_torch_acct__oom(&m, &e, &info), 1);
	GS_EXPECT_EQ(info.requested, 1 << 30);
	GS_EXPECT_EQ(info.device, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 0));
	/* the throw that follows on the same thread is the same OOM */
	e.source = GS_TORCH_OOM_THROW;
	e.size = 0;
	e.device = -1;
	GS_EXPECT_EQ(gs_torch_acct__oom(&m, &e, &info), 0);
	/* a throw with no hook before it is one */
	GS_EXPECT_EQ(gs_torch_acct__oom(&m, &e, &info), 1);
	GS_EXPECT_EQ(info.device, GS_TORCH_DEV_UNKNOWN);
	GS_EXPECT_EQ(gs_torch_acct__find(&m, NO_PID)->ooms, 2);
	gs_torch_acct__release(&m);
out:
	gs_stack_table__free(st);
	gs_symcache__free(sc);
}

/* a return address inside a function of a loaded library: a call made from there */
static __u64 call_site(void *fn)
{
	return (__u64)(uintptr_t)fn + 1;
}

static struct gs_mem_alloc segment(pid_t pid, __u64 ptr, __u64 size, int ret, __u64 from)
{
	struct gs_mem_alloc e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = GS_EV_MEM_ALLOC;
	e.hdr.pid = e.hdr.tid = (__u32)pid;
	e.hdr.size = offsetof(struct gs_mem_alloc, frames) + 8;
	e.ptr = ret ? 0 : ptr;
	e.size = size;
	e.ret = ret;
	e.nr_frames = 1;
	e.frames[0] = from;
	return e;
}

/* segments are told apart by their caller: the fixture's libc10_cuda.so, loaded here */
GS_TEST(segments_by_caller_and_their_device)
{
	void *lib = dlopen(GS_FIXTURES "/torch/lib/libc10_cuda.so", RTLD_NOW | RTLD_LOCAL);
	struct gs_symcache *sc = gs_symcache__new();
	struct gs_stack_table *st = gs_stack_table__new(sc);
	pid_t pid = getpid();
	const struct gs_torch_device *d;
	struct gs_torch_proc *p;
	struct gs_torch_acct m;
	struct gs_mem_alloc a;
	struct gs_mem_free f = { .hdr = { .type = GS_EV_MEM_FREE, .pid = (__u32)pid } };
	struct gs_torch_mem t;
	__u64 torch_site, own_site = call_site((void *)&segment);

	if (!GS_EXPECT(lib && sc && st))
		goto out;
	torch_site = call_site(dlsym(lib, "gs_c10_cuda_empty"));
	gs_torch_acct__init(&m, st, sc);
	gs_symcache__refresh(sc, pid);
	/* not the caching allocator's: a raw CUDA allocation */
	a = segment(pid, 0x30000000, 1 << 20, 0, own_site);
	GS_EXPECT(!gs_torch_acct__segment_alloc(&m, &a));
	/* segment A (20 MiB) gets its device from the tensor placed in it; B has none yet */
	a = segment(pid, 0x10000000, 20 << 20, 0, torch_site);
	GS_EXPECT(gs_torch_acct__segment_alloc(&m, &a));
	a = segment(pid, 0x20000000, 2 << 20, 0, torch_site);
	GS_EXPECT(gs_torch_acct__segment_alloc(&m, &a));
	a = segment(pid, 0, 1 << 30, 2, torch_site); /* retried by the allocator: counted only */
	GS_EXPECT(gs_torch_acct__segment_alloc(&m, &a));
	t = tensor((__u32)pid, (__u32)pid, GS_TORCH_SRC_USDT, GS_TORCH_OP_ALLOC, 1, 0x10000000,
		   3 << 20);
	GS_EXPECT_EQ(gs_torch_acct__tensor(&m, &t), 0);
	p = gs_torch_acct__find(&m, pid);
	if (!GS_EXPECT(p))
		goto out_release;
	GS_EXPECT_EQ(p->failed_segments, 1);
	gs_torch_proc__update(p);
	d = gs_torch_proc__device(p, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 1));
	GS_EXPECT(d && d->allocated == 3 << 20 && d->reserved == 20 << 20 && d->segments == 1 &&
		  d->largest_free_segment == 0);
	d = gs_torch_proc__device(p, GS_TORCH_DEV_UNKNOWN);
	GS_EXPECT(d && d->reserved == 2 << 20 && d->segments == 1 &&
		  d->largest_free_segment == 2 << 20);
	/* B given back (emptyCache); a free of a raw allocation is not a segment */
	f.ptr = 0x20000000;
	GS_EXPECT(gs_torch_acct__segment_free(&m, &f));
	f.ptr = 0x30000000;
	GS_EXPECT(!gs_torch_acct__segment_free(&m, &f));
	/* the tensor freed: A is cached whole, what empty_cache would release */
	t = tensor((__u32)pid, (__u32)pid, GS_TORCH_SRC_USDT, GS_TORCH_OP_FREE, -1, 0x10000000, 0);
	gs_torch_acct__tensor(&m, &t);
	gs_torch_proc__update(p);
	GS_EXPECT(!gs_torch_proc__device(p, GS_TORCH_DEV_UNKNOWN));
	d = gs_torch_proc__device(p, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 1));
	GS_EXPECT(d && d->allocated == 0 && d->reserved == 20 << 20 &&
		  d->largest_free_segment == 20 << 20);
out_release:
	gs_torch_acct__release(&m);
out:
	gs_stack_table__free(st);
	gs_symcache__free(sc);
	if (lib)
		dlclose(lib);
}

/* the profiler hook's reserved is PyTorch's, moved by segments given back after it */
GS_TEST(reported_reserved_follows_later_segments)
{
	void *lib = dlopen(GS_FIXTURES "/torch/lib/libc10_cuda.so", RTLD_NOW | RTLD_LOCAL);
	struct gs_symcache *sc = gs_symcache__new();
	struct gs_stack_table *st = gs_stack_table__new(sc);
	struct gs_mem_free f = { .hdr = { .type = GS_EV_MEM_FREE, .pid = (__u32)getpid() } };
	const struct gs_torch_device *d;
	struct gs_torch_proc *p;
	struct gs_torch_acct m;
	struct gs_mem_alloc a;
	struct gs_torch_mem t;

	if (!GS_EXPECT(lib && sc && st))
		goto out;
	gs_torch_acct__init(&m, st, sc);
	gs_symcache__refresh(sc, getpid());
	a = segment(getpid(), 0x10000000, 20 << 20, 0, call_site(dlsym(lib, "gs_c10_cuda_empty")));
	gs_torch_acct__segment_alloc(&m, &a);
	a.ptr = 0x20000000;
	gs_torch_acct__segment_alloc(&m, &a);
	t = tensor((__u32)getpid(), 1, GS_TORCH_SRC_REPORT, GS_TORCH_OP_ALLOC, 0, 0x20000000, 512);
	t.flags = GS_TORCH_F_TOTALS;
	t.total_allocated = 512;
	t.total_reserved = 60 << 20; /* more than we saw: segments made before we attached */
	gs_torch_acct__tensor(&m, &t);
	t = tensor((__u32)getpid(), 1, GS_TORCH_SRC_REPORT, GS_TORCH_OP_FREE, 0, 0x20000000, 512);
	t.flags = GS_TORCH_F_TOTALS;
	t.total_allocated = 0;
	t.total_reserved = 60 << 20;
	gs_torch_acct__tensor(&m, &t);
	f.ptr = 0x20000000;
	GS_EXPECT(gs_torch_acct__segment_free(&m, &f));
	p = gs_torch_acct__find(&m, getpid());
	if (!GS_EXPECT(p))
		goto out_release;
	gs_torch_proc__update(p);
	d = gs_torch_proc__device(p, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 0));
	GS_EXPECT(d && d->totals && d->allocated == 0 && d->reserved == 40 << 20);
out_release:
	gs_torch_acct__release(&m);
out:
	gs_stack_table__free(st);
	gs_symcache__free(sc);
	if (lib)
		dlclose(lib);
}

GS_TEST(device_names)
{
	char b[16];

	gs_torch_device_name(GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 3), b, sizeof(b));
	GS_EXPECT_STR_EQ(b, "cuda:3");
	gs_torch_device_name(GS_TORCH_DEV_KEY(GS_TORCH_DEV_CPU, 0), b, sizeof(b));
	GS_EXPECT_STR_EQ(b, "cpu");
	gs_torch_device_name(GS_TORCH_DEV_UNKNOWN, b, sizeof(b));
	GS_EXPECT_STR_EQ(b, "cuda:?");
}

GS_TEST_MAIN(profiler_hooks_of_every_version, caching_allocator_of_every_version,
	     look_alikes_are_not_hooks, fixture_libraries, exports_through_dynsym, library_names,
	     version_py, version_of_an_install, block_sizes, accounting_by_source,
	     oom_once_per_out_of_memory, segments_by_caller_and_their_device,
	     reported_reserved_follows_later_segments, device_names)
