// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_kernel_names.c: every source of kernel names, against this very process. */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "profilers/cuda/kernel_names.h"
#include "tests/unit/harness.h"
#include "user/addr_map.h"
#include "user/symcache.h"

/* as nvcc emits it: the mangled name in .rodata, read from the file by the resolver */
static const char registered_name[] = "_Z11gemm_kernelPfi";

/* what nvcc 13 leaves in .bss for `relu_kernel(float*, int)` once it was launched */
static volatile uint64_t relu_handle __asm__("_ZZ32__device_stub__Z11relu_kernelPfiPfiE8__handle")
	__attribute__((used));

__attribute__((noinline, used)) void host_shadow(void)
{
	__asm__ volatile("" ::: "memory");
}

struct fixture {
	struct gs_symcache *symcache;
	struct gs_kernel_names *names;
};

static bool setup(struct fixture *f)
{
	f->symcache = gs_symcache__new();
	f->names = f->symcache ? gs_kernel_names__new(f->symcache) : NULL;
	return f->names != NULL;
}

static void teardown(struct fixture *f)
{
	gs_kernel_names__free(f->names);
	gs_symcache__free(f->symcache);
}

GS_TEST(registration_names_the_host_function_and_its_handle)
{
	struct fixture f;
	uint64_t host = 0x10000, handle = 0xfeed0000;

	if (!GS_EXPECT(setup(&f)))
		return;
	gs_kernel_names__add_registration(f.names, getpid(), host, (uintptr_t)registered_name);
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), host),
			 "gemm_kernel(float*, int)");
	/* a CUDA 13 launch passes the cudaKernel_t that __cudaGetKernel returned */
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), handle), "unknown 0xfeed0000");
	gs_kernel_names__add_handle(f.names, getpid(), handle, host);
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), handle),
			 "gemm_kernel(float*, int)");
	/* another process's registration names nothing here */
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid() + 1, host), "unknown 0x10000");
	teardown(&f);
}

GS_TEST(driver_handles_carry_their_lookup_name)
{
	struct fixture f;

	if (!GS_EXPECT(setup(&f)))
		return;
	gs_kernel_names__add_function(f.names, getpid(), 0xf00, "_Z10drv_kernelPf");
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), 0xf00), "drv_kernel(float*)");
	gs_kernel_names__add_function(f.names, getpid(), 0xf01, "plain_c_kernel");
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), 0xf01), "plain_c_kernel");
	teardown(&f);
}

GS_TEST(symbols_only_at_a_function_entry)
{
	struct fixture f;
	uint64_t fn = (uintptr_t)host_shadow;
	char want[64];

	if (!GS_EXPECT(setup(&f)))
		return;
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), fn), "host_shadow");
	/* inside a function is not a kernel: say unknown rather than guess */
	snprintf(want, sizeof(want), "unknown 0x%llx", (unsigned long long)fn + 1);
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), fn + 1), want);
	teardown(&f);
}

GS_TEST(handles_made_before_attach_are_read_from_the_stub_statics)
{
	struct fixture f;

	if (!GS_EXPECT(setup(&f)))
		return;
	relu_handle = 0xabc0;
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), 0xabc0),
			 "relu_kernel(float*, int)");
	/* a pointer no static holds stays unknown */
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), 0xabc8), "unknown 0xabc8");
	teardown(&f);
}

GS_TEST(forget_drops_a_process)
{
	struct fixture f;

	if (!GS_EXPECT(setup(&f)))
		return;
	gs_kernel_names__add_function(f.names, getpid(), 0xf00, "_Z10drv_kernelPf");
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), 0xf00), "drv_kernel(float*)");
	gs_kernel_names__forget(f.names, getpid());
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, getpid(), 0xf00), "unknown 0xf00");
	teardown(&f);
}

GS_TEST(a_process_keeps_at_most_its_cap_of_names)
{
	pid_t me = getpid(), other = me + 1;
	struct fixture f;

	if (!GS_EXPECT(setup(&f)))
		return;
	/* 65,536 entries per process (kernel_names.c); 4 more are refused and counted */
	for (uint64_t i = 1; i <= 65540; i++)
		gs_kernel_names__add_function(f.names, me, i << 4, "_Z10drv_kernelPf");
	GS_EXPECT_EQ(gs_kernel_names__refused(f.names), 4);
	/* a kept name still resolves, uncached; a refused one reads unknown, never a guess */
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, me, 1 << 4), "drv_kernel(float*)");
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, me, 65540ULL << 4), "unknown 0x100040");
	/* another process is not held to this one's count */
	gs_kernel_names__add_function(f.names, other, 0x10, "_Z10drv_kernelPf");
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, other, 0x10), "drv_kernel(float*)");
	/* forgetting the process frees its count */
	gs_kernel_names__forget(f.names, me);
	gs_kernel_names__add_function(f.names, me, 0x20, "_Z10drv_kernelPf");
	GS_EXPECT_STR_EQ(gs_kernel_names__resolve(f.names, me, 0x20), "drv_kernel(float*)");
	GS_EXPECT_EQ(gs_kernel_names__refused(f.names), 4 + 2); /* the two resolves at the cap */
	teardown(&f);
}

GS_TEST(addr_map_set_get_forget)
{
	struct gs_addr_map *m = gs_addr_map__new();
	uint64_t v = 0;

	if (!GS_EXPECT(m != NULL))
		return;
	for (uint64_t i = 0; i < 10000; i++)
		GS_EXPECT_EQ(gs_addr_map__set(m, (pid_t)(i % 3 + 1), i * 4096, i), 0);
	GS_EXPECT_EQ(gs_addr_map__count(m), 10000);
	GS_EXPECT(gs_addr_map__get(m, 2, 4096, &v));
	GS_EXPECT_EQ(v, 1);
	GS_EXPECT(!gs_addr_map__get(m, 1, 4096, &v));
	gs_addr_map__set(m, 2, 4096, 99);
	GS_EXPECT(gs_addr_map__get(m, 2, 4096, &v));
	GS_EXPECT_EQ(v, 99);
	gs_addr_map__forget_pid(m, 2, NULL);
	GS_EXPECT(!gs_addr_map__get(m, 2, 4096, &v));
	/* every survivor is still found after the holes were closed */
	for (uint64_t i = 0; i < 10000; i++) {
		bool found = gs_addr_map__get(m, (pid_t)(i % 3 + 1), i * 4096, &v);

		if (i % 3 + 1 == 2)
			GS_EXPECT(!found);
		else if (GS_EXPECT(found))
			GS_EXPECT_EQ(v, i);
	}
	GS_EXPECT_EQ(gs_addr_map__count(m), 10000 - 3333);
	gs_addr_map__free(m);
}

GS_TEST_MAIN(registration_names_the_host_function_and_its_handle,
	     driver_handles_carry_their_lookup_name, symbols_only_at_a_function_entry,
	     handles_made_before_attach_are_read_from_the_stub_statics, forget_drops_a_process,
	     a_process_keeps_at_most_its_cap_of_names, addr_map_set_get_forget)
