// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_mem_model.c: one event sequence through the memory model, as each command renders it. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "profilers/cuda/api.h"
#include "profilers/leak_report.h"
#include "profilers/mem_model.h"
#include "user/pid_index.h"
#include "tests/unit/harness.h"
#include "user/stack_table.h"
#include "user/symcache.h"

#ifndef GS_FIXTURES
#define GS_FIXTURES ".output/fixtures"
#endif
#define C10_CUDA GS_FIXTURES "/torch/lib/libc10_cuda.so"
#define MiB	 (1ULL << 20)

__attribute__((noinline)) void weights_site(void);
__attribute__((noinline)) void weights_site(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void activations_site(void);
__attribute__((noinline)) void activations_site(void)
{
	__asm__ volatile("" ::: "memory");
}

/*
 * This process is the traced one: its maps are real, so the model classifies a call whose
 * return address lies in a mapped libc10_cuda.so as the caching allocator's, as it would in
 * a PyTorch process.
 */
struct world {
	struct gs_symcache *cache;
	struct gs_stack_table *stacks;
	struct gs_mem_model m;
	void *c10;
	pid_t pid;
	uint64_t weights, activations, allocator; /* return addresses: two call sites, c10 */
};

static bool world_open(struct world *w, bool torch_on)
{
	int fd = open(C10_CUDA, O_RDONLY | O_CLOEXEC);

	memset(w, 0, sizeof(*w));
	w->c10 = fd >= 0 ? mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
	if (fd >= 0)
		close(fd);
	w->cache = gs_symcache__new();
	w->stacks = w->cache ? gs_stack_table__new(w->cache) : NULL;
	if (w->c10 == MAP_FAILED || !w->stacks)
		return false;
	gs_mem_model__init(&w->m, w->stacks, w->cache, torch_on);
	w->pid = getpid();
	w->weights = (uint64_t)(uintptr_t)weights_site + 4;
	w->activations = (uint64_t)(uintptr_t)activations_site + 4;
	w->allocator = (uint64_t)(uintptr_t)w->c10 + 0x40;
	return true;
}

static void world_close(struct world *w)
{
	if (w->stacks)
		gs_mem_model__release(&w->m);
	gs_stack_table__free(w->stacks);
	gs_symcache__free(w->cache);
	if (w->c10 && w->c10 != MAP_FAILED)
		munmap(w->c10, 4096);
}

static uint16_t api_id(const char *name)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 0; i < nr; i++)
		if (!strcmp(apis[i].name, name))
			return apis[i].id;
	return 0;
}

static struct gs_mem_effect alloc(struct world *w, uint64_t ts, uint64_t ptr, uint64_t size,
				  int32_t ret, uint64_t site)
{
	struct gs_mem_alloc e = {
		.hdr = { .type = GS_EV_MEM_ALLOC, .ts_ns = ts, .pid = (__u32)w->pid, .tid = 7 },
		.ptr = ret ? 0 : ptr,
		.size = size,
		.ret = ret,
		.api = api_id("cudaMalloc"),
		.nr_frames = 1,
		.frames = { site },
	};
	struct gs_mem_effect fx;

	GS_EXPECT_EQ(gs_mem_model__alloc(&w->m, &e, &fx), 0);
	return fx;
}

static struct gs_mem_effect cuda_free(struct world *w, uint64_t ptr)
{
	struct gs_mem_free e = {
		.hdr = { .type = GS_EV_MEM_FREE, .pid = (__u32)w->pid, .tid = 7 },
		.ptr = ptr,
		.api = api_id("cudaFree"),
	};
	struct gs_mem_effect fx;

	GS_EXPECT_EQ(gs_mem_model__free(&w->m, &e, &fx), 0);
	return fx;
}

static struct gs_mem_effect free_returned(struct world *w, uint64_t ptr, int32_t ret)
{
	struct gs_mem_free_ret e = {
		.hdr = { .type = GS_EV_MEM_FREE_RET, .pid = (__u32)w->pid, .tid = 7 },
		.ptr = ptr,
		.ret = ret,
		.api = api_id("cudaFree"),
	};
	struct gs_mem_effect fx;

	GS_EXPECT_EQ(gs_mem_model__free_ret(&w->m, &e, &fx), 0);
	return fx;
}

static struct gs_mem_effect tensor(struct world *w, uint8_t op, uint64_t ptr, uint64_t size)
{
	struct gs_torch_mem e = {
		.hdr = { .type = GS_EV_TORCH_MEM, .ts_ns = 500, .pid = (__u32)w->pid, .tid = 7 },
		.ptr = ptr,
		.size = size,
		.source = GS_TORCH_SRC_USDT,
		.op = op,
		.device_type = GS_TORCH_DEV_CUDA,
		.device = 0,
		.nr_frames = 1,
		.frames = { w->activations },
	};
	struct gs_mem_effect fx;

	GS_EXPECT_EQ(gs_mem_model__tensor(&w->m, &e, &fx), 0);
	return fx;
}

/*
 * The sequence every command is fed below: raw allocations from two stacks, a segment of
 * the caching allocator and a tensor in it, an out-of-memory of each kind, a free of each
 * kind, an unknown free, a failed free and cudaFree(NULL).
 */
static void feed(struct world *w)
{
	struct gs_mem_effect fx;

	fx = alloc(w, 100, 0x1000, 1 * MiB, 0, w->weights);
	GS_EXPECT_EQ(fx.route, GS_ROUTE_RAW);
	alloc(w, 200, 0x2000, 2 * MiB, 0, w->weights);
	alloc(w, 300, 0x3000, 4 * MiB, 0, w->activations);
	fx = alloc(w, 400, 0x10000000, 20 * MiB, 0, w->allocator);
	GS_EXPECT_EQ(fx.route, w->m.torch_on ? GS_ROUTE_SEGMENT : GS_ROUTE_RAW);
	alloc(w, 410, 0x20000000, 2 * MiB, 0, w->allocator);
	tensor(w, GS_TORCH_OP_ALLOC, 0x10000000, 1000);
	fx = alloc(w, 600, 0, 1ULL << 30, GS_CUDA_ERROR_OUT_OF_MEMORY, w->activations);
	GS_EXPECT(fx.cuda_oom);
	/* the caching allocator's failure is retried after emptying its cache: no OOM yet */
	fx = alloc(w, 610, 0, 1ULL << 30, GS_CUDA_ERROR_OUT_OF_MEMORY, w->allocator);
	GS_EXPECT_EQ(fx.cuda_oom, !w->m.torch_on);
	fx = cuda_free(w, 0x2000);
	GS_EXPECT_EQ(fx.freed_size, 2 * MiB);
	fx = cuda_free(w, 0x20000000); /* the second segment */
	GS_EXPECT_EQ(fx.route, w->m.torch_on ? GS_ROUTE_SEGMENT : GS_ROUTE_RAW);
	fx = cuda_free(w, 0x9999);
	GS_EXPECT_EQ(fx.freed_size, 0);
	cuda_free(w, 0x1000);
	fx = free_returned(w, 0x1000, 1); /* cudaErrorInvalidValue: it is still held */
	GS_EXPECT(fx.restored);
	cuda_free(w, 0);
}

GS_TEST(one_sequence_three_commands)
{
	struct world w;
	struct gs_leak_proc_report r = { 0 };
	const struct gs_torch_device *dev;
	struct gs_mem_proc *p;

	if (!GS_EXPECT(world_open(&w, true)))
		goto out;
	feed(&w);
	p = gs_mem_model__proc(&w.m, w.pid, false);
	if (!GS_EXPECT(p))
		goto out;
	/* leaks (and the daemon's reports): raw allocations by stack, no segment among them */
	if (!GS_EXPECT_EQ(gs_leak_proc_report__build(&r, &w.m, p, "t", 1000, 0), 0))
		goto out;
	GS_EXPECT_EQ(r.outstanding_bytes, 5 * MiB);
	GS_EXPECT_EQ(r.outstanding_allocations, 2);
	GS_EXPECT_EQ(r.nr_groups, 2);
	GS_EXPECT_EQ(r.groups[0].bytes, 4 * MiB);
	GS_EXPECT_EQ(r.groups[1].bytes, 1 * MiB);
	GS_EXPECT_EQ(r.groups[1].oldest_ts_ns, 100); /* restored with its own age */
	GS_EXPECT_EQ(r.failed_allocations, 1);
	GS_EXPECT_EQ(r.nr_fails, 1);
	GS_EXPECT_EQ(r.failed_frees, 1);
	GS_EXPECT_EQ(r.unknown_frees, 1);
	GS_EXPECT_EQ(r.tensor_bytes, 1024); /* the allocator's 512-byte blocks */
	if (GS_EXPECT(r.torch)) {
		GS_EXPECT_EQ(r.torch->failed_segments, 1);
		GS_EXPECT_EQ(r.torch->unknown_frees, 0);
	}
	/* record's counter tracks: "CUDA memory" leaves PyTorch's reserved memory out */
	GS_EXPECT_EQ(gs_mem_model__cuda_bytes(&w.m, w.pid), 5 * MiB);
	dev = gs_mem_model__torch_proc(&w.m, w.pid)
		      ? gs_torch_proc__device(gs_mem_model__torch_proc(&w.m, w.pid),
					      GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 0))
		      : NULL;
	if (GS_EXPECT(dev)) {
		GS_EXPECT_EQ(dev->allocated, 1024);
		GS_EXPECT_EQ(dev->reserved, 20 * MiB);
	}
	/* the daemon's metrics: calls through raw CUDA, successes and frees (NULL included) */
	GS_EXPECT_EQ(p->allocations, 3);
	GS_EXPECT_EQ(p->frees, 4);
out:
	gs_leak_proc_report__release(&r);
	world_close(&w);
}

/* --no-torch, or a daemon started with torch off: segments are plain CUDA allocations */
GS_TEST(torch_off_segments_are_raw)
{
	struct world w;
	struct gs_mem_proc *p;
	struct gs_mem_effect fx;

	if (!GS_EXPECT(world_open(&w, false)))
		goto out;
	feed(&w);
	fx = tensor(&w, GS_TORCH_OP_ALLOC, 0x30000000, 64);
	GS_EXPECT_EQ(fx.route, GS_ROUTE_NONE);
	GS_EXPECT(!gs_mem_model__torch_proc(&w.m, w.pid));
	GS_EXPECT_EQ(gs_mem_model__cuda_bytes(&w.m, w.pid), 25 * MiB);
	p = gs_mem_model__proc(&w.m, w.pid, false);
	if (GS_EXPECT(p)) {
		GS_EXPECT_EQ(p->failed_allocations, 2);
		GS_EXPECT_EQ(p->allocations, 5);
		GS_EXPECT(gs_mem_model__has_anything(&w.m, p));
	}
out:
	world_close(&w);
}

GS_TEST(exec_keeps_the_process_exit_forgets_it)
{
	struct world w;
	struct gs_mem_proc *p;
	struct gs_torch_proc *tp;

	if (!GS_EXPECT(world_open(&w, true)))
		goto out;
	feed(&w);
	gs_mem_model__proc_gone(&w.m, w.pid, true);
	p = gs_mem_model__proc(&w.m, w.pid, false);
	tp = gs_mem_model__torch_proc(&w.m, w.pid);
	if (GS_EXPECT(p) && GS_EXPECT(tp)) {
		GS_EXPECT_EQ(gs_alloc_table__count(p->allocs), 0);
		GS_EXPECT_EQ(p->failed_allocations, 1); /* the process's history stays */
		GS_EXPECT_EQ(gs_alloc_table__count(tp->blocks), 0);
		GS_EXPECT_EQ(gs_alloc_table__count(tp->segments), 0);
	}
	/* the new image frees an old pointer: unknown, and nothing to go negative */
	cuda_free(&w, 0x3000);
	GS_EXPECT_EQ(gs_mem_model__cuda_bytes(&w.m, w.pid), 0);
	gs_mem_model__proc_gone(&w.m, w.pid, false);
	GS_EXPECT(!gs_mem_model__proc(&w.m, w.pid, false));
	GS_EXPECT(!gs_mem_model__torch_proc(&w.m, w.pid));
out:
	world_close(&w);
}

/* mem_accounting.h: an entry stays where it is while other processes come and go */
GS_TEST(entries_keep_their_address)
{
	struct gs_mem_accounting a;
	struct gs_mem_proc *first, *p;
	bool all_found = true;

	gs_mem_accounting__init(&a, NULL);
	first = gs_mem_accounting__get(&a, 1);
	if (!GS_EXPECT(first))
		goto out;
	first->unknown_frees = 42;
	for (pid_t pid = 2; pid < 5000; pid++)
		if (!gs_mem_accounting__get(&a, pid))
			all_found = false;
	for (pid_t pid = 2; pid < 5000; pid += 2)
		gs_mem_accounting__remove(&a, gs_mem_accounting__find(&a, pid));
	GS_EXPECT(all_found);
	GS_EXPECT(gs_mem_accounting__find(&a, 1) == first);
	GS_EXPECT_EQ(first->unknown_frees, 42);
	GS_EXPECT_EQ(a.nr_procs, 2500);
	for (pid_t pid = 2; pid < 5000; pid++) {
		p = gs_mem_accounting__find(&a, pid);
		if (pid % 2 ? !p || p->pid != pid : p != NULL)
			all_found = false;
	}
	GS_EXPECT(all_found);
out:
	gs_mem_accounting__release(&a);
}

/* the pid index: removal by backward shift keeps every other pid of a probe run findable */
GS_TEST(pid_index_survives_churn)
{
	struct gs_pid_index x = { 0 };
	size_t pos;
	bool ok = true;

	for (pid_t pid = 1; pid <= 3000; pid++)
		if (gs_pid_index__set(&x, pid * 64, (size_t)pid))
			ok = false;
	for (pid_t pid = 1; pid <= 3000; pid += 3)
		gs_pid_index__remove(&x, pid * 64);
	gs_pid_index__remove(&x, 77); /* absent: nothing */
	for (pid_t pid = 1; pid <= 3000; pid++) {
		bool found = gs_pid_index__get(&x, pid * 64, &pos);

		if (pid % 3 == 1 ? found : !found || pos != (size_t)pid)
			ok = false;
	}
	GS_EXPECT(ok);
	GS_EXPECT_EQ(x.h.nr, 2000);
	GS_EXPECT_EQ(gs_pid_index__set(&x, 128, 5), 0); /* moves it */
	GS_EXPECT(gs_pid_index__get(&x, 128, &pos) && pos == 5);
	GS_EXPECT_EQ(x.h.nr, 2000);
	gs_pid_index__release(&x);
	GS_EXPECT(!gs_pid_index__get(&x, 128, &pos));
}

static void api_alloc(struct world *w, const char *api, uint64_t ptr, uint64_t size)
{
	struct gs_mem_alloc e = {
		.hdr = { .type = GS_EV_MEM_ALLOC, .ts_ns = 100, .pid = (__u32)w->pid, .tid = 7 },
		.ptr = ptr,
		.size = size,
		.api = api_id(api),
		.nr_frames = 1,
		.frames = { w->weights },
	};
	struct gs_mem_effect fx;

	GS_EXPECT_EQ(gs_mem_model__alloc(&w->m, &e, &fx), 0);
	GS_EXPECT_EQ(fx.route, GS_ROUTE_RAW);
}

static struct gs_mem_effect api_free(struct world *w, const char *api, uint64_t ptr)
{
	struct gs_mem_free e = {
		.hdr = { .type = GS_EV_MEM_FREE, .pid = (__u32)w->pid, .tid = 7 },
		.ptr = ptr,
		.api = api_id(api),
	};
	struct gs_mem_effect fx;

	GS_EXPECT_EQ(gs_mem_model__free(&w->m, &e, &fx), 0);
	return fx;
}

/* pinned host memory is held with the rest, and counted apart from device memory */
GS_TEST(pinned_host_memory_apart)
{
	struct gs_leak_proc_report r = { 0 };
	struct gs_mem_effect fx;
	struct gs_mem_proc *p;
	struct world w;

	if (!GS_EXPECT(world_open(&w, true)))
		goto out;
	api_alloc(&w, "cudaMalloc", 0x1000, 8 * MiB);
	api_alloc(&w, "cudaHostAlloc", 0x2000, 2 * MiB);
	api_alloc(&w, "cudaHostRegister", 0x3000, 3 * MiB);
	api_alloc(&w, "cudaHostRegister", 0x4000, 1 * MiB);
	api_alloc(&w, "cudaHostRegister", 0x2000, 4 * MiB); /* 0x2000's free was missed */
	fx = api_free(&w, "cudaHostUnregister", 0x4000);
	GS_EXPECT_EQ(fx.freed_size, 1 * MiB);
	/* unregistered again: unknown, and its failure must not bring 0x4000 back */
	fx = api_free(&w, "cudaHostUnregister", 0x4000);
	GS_EXPECT_EQ(fx.freed_size, 0);
	fx = free_returned(&w, 0x4000, 713);
	GS_EXPECT(!fx.restored);
	p = gs_mem_model__proc(&w.m, w.pid, false);
	if (!GS_EXPECT(p))
		goto out;
	GS_EXPECT_EQ(p->pinned_bytes, 7 * MiB);
	GS_EXPECT_EQ(p->pinned_allocations, 2);
	GS_EXPECT_EQ(gs_mem_model__pinned_bytes(&w.m, w.pid), 7 * MiB);
	GS_EXPECT_EQ(gs_mem_model__cuda_bytes(&w.m, w.pid), 15 * MiB);
	if (!GS_EXPECT_EQ(gs_leak_proc_report__build(&r, &w.m, p, "t", 1000, 0), 0))
		goto out;
	GS_EXPECT_EQ(r.outstanding_bytes, 15 * MiB);
	GS_EXPECT_EQ(r.pinned_bytes, 7 * MiB);
	GS_EXPECT_EQ(r.pinned_allocations, 2);
	GS_EXPECT_EQ(r.unknown_frees, 1);
	gs_mem_model__proc_gone(&w.m, w.pid, true); /* exec: what the old image held goes */
	GS_EXPECT_EQ(p->pinned_bytes, 0);
	GS_EXPECT_EQ(p->pinned_allocations, 0);
out:
	gs_leak_proc_report__release(&r);
	world_close(&w);
}

static struct gs_mem_effect vmm_call(struct world *w, const char *api, uint64_t ptr, uint64_t size,
				     uint64_t site)
{
	struct gs_cuda_call e = {
		.hdr = { .type = GS_EV_CUDA_CALL, .ts_ns = 100, .pid = (__u32)w->pid, .tid = 7 },
		.args = { ptr, size },
		.api = api_id(api),
		.nr_frames = 1,
		.frames = { site },
	};
	struct gs_mem_effect fx;

	GS_EXPECT_EQ(gs_mem_model__cuda_call(&w->m, &e, &fx), 0);
	return fx;
}

/* cuMemMap outside the caching allocator is device memory of its caller; inside, a segment */
GS_TEST(vmm_mappings_raw_or_segment)
{
	struct gs_mem_effect fx;
	struct world w;

	if (!GS_EXPECT(world_open(&w, true)))
		goto out;
	fx = vmm_call(&w, "cuMemMap", 0x10000000, 2 * MiB, w.weights);
	GS_EXPECT_EQ(fx.route, GS_ROUTE_RAW);
	fx = vmm_call(&w, "cuMemMap", 0x10200000, 2 * MiB, w.weights);
	fx = vmm_call(&w, "cuMemMap", 0x20000000, 20 * MiB, w.allocator);
	GS_EXPECT_EQ(fx.route, GS_ROUTE_SEGMENT);
	GS_EXPECT_EQ(gs_mem_model__cuda_bytes(&w.m, w.pid), 4 * MiB);
	fx = vmm_call(&w, "cuMemUnmap", 0x10000000, 2 * MiB, w.weights);
	GS_EXPECT_EQ(fx.route, GS_ROUTE_RAW);
	GS_EXPECT_EQ(fx.freed_size, 2 * MiB);
	fx = vmm_call(&w, "cuMemUnmap", 0x20000000, 20 * MiB, w.allocator);
	GS_EXPECT_EQ(fx.route, GS_ROUTE_SEGMENT);
	GS_EXPECT_EQ(gs_mem_model__cuda_bytes(&w.m, w.pid), 2 * MiB);
out:
	world_close(&w);
}

GS_TEST_MAIN(one_sequence_three_commands, torch_off_segments_are_raw,
	     exec_keeps_the_process_exit_forgets_it, entries_keep_their_address,
	     pid_index_survives_churn, pinned_host_memory_apart, vmm_mappings_raw_or_segment)
