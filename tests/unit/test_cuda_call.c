// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_cuda_call.c: raw argument words of synthetic call records decoded per API shape. */
#include <string.h>
#include "profilers/cuda/api.h"
#include "profilers/cuda/call.h"
#include "tests/unit/harness.h"

#define STACK(i)  (GS_CALL_REG_ARGS + (i))
#define CONFIG(i) (GS_CALL_REG_ARGS + GS_CALL_STACK_ARGS + (i))

static const struct gs_cuda_api *api_named(const char *name)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 1; i < nr; i++)
		if (!strcmp(apis[i].name, name))
			return &apis[i];
	return NULL;
}

static struct gs_cuda_call call_of(const struct gs_cuda_api *api)
{
	struct gs_cuda_call e;

	memset(&e, 0, sizeof(e));
	e.api = api->id;
	return e;
}

GS_TEST(runtime_launch_splits_dim3_over_two_registers)
{
	const struct gs_cuda_api *api = api_named("cudaLaunchKernel");
	struct gs_cuda_call e = call_of(api);
	struct gs_launch l;

	/* cudaLaunchKernel(func, grid{128,2,1}, block{256,3,4}, args, 4096, stream) */
	e.args[0] = 0x401000;
	e.args[1] = 128 | (2ULL << 32);
	e.args[2] = 1 | (0xdeadULL << 32); /* upper half of edx's register is junk */
	e.args[3] = 256 | (3ULL << 32);
	e.args[4] = 4 | (0xbeefULL << 32);
	e.args[5] = 0x7ffe0000;
	e.args[STACK(0)] = 4096;
	e.args[STACK(1)] = 0x55aa;
	GS_EXPECT(gs_decode_launch(api, &e, &l));
	GS_EXPECT_EQ(l.func, 0x401000);
	GS_EXPECT_EQ(l.grid[0], 128);
	GS_EXPECT_EQ(l.grid[1], 2);
	GS_EXPECT_EQ(l.grid[2], 1);
	GS_EXPECT_EQ(l.block[0], 256);
	GS_EXPECT_EQ(l.block[1], 3);
	GS_EXPECT_EQ(l.block[2], 4);
	GS_EXPECT_EQ(l.shared_mem, 4096);
	GS_EXPECT_EQ(l.stream, 0x55aa);
	GS_EXPECT(!l.graph);
}

GS_TEST(driver_launch_has_one_register_per_dim)
{
	const struct gs_cuda_api *api = api_named("cuLaunchKernel");
	struct gs_cuda_call e = call_of(api);
	struct gs_launch l;

	/* cuLaunchKernel(f, 8, 4, 2, 64, 2, 1, 512, stream, params, extra) */
	e.args[0] = 0x1234;
	e.args[1] = 8;
	e.args[2] = 4;
	e.args[3] = 2;
	e.args[4] = 64;
	e.args[5] = 2;
	e.args[STACK(0)] = 1 | (0xffULL << 32);
	e.args[STACK(1)] = 512;
	e.args[STACK(2)] = 0x99;
	GS_EXPECT(gs_decode_launch(api, &e, &l));
	GS_EXPECT_EQ(l.func, 0x1234);
	GS_EXPECT_EQ(l.grid[2], 2);
	GS_EXPECT_EQ(l.block[0], 64);
	GS_EXPECT_EQ(l.block[2], 1);
	GS_EXPECT_EQ(l.shared_mem, 512);
	GS_EXPECT_EQ(l.stream, 0x99);
}

GS_TEST(config_launches_read_the_struct_words)
{
	const struct gs_cuda_api *rt = api_named("cudaLaunchKernelExC");
	const struct gs_cuda_api *drv = api_named("cuLaunchKernelEx");
	struct gs_cuda_call e = call_of(rt);
	struct gs_launch l;

	/* grid {7,3,2} at 0, block {32,4,2} at 12, shmem 1024 at 24, stream at 32 */
	e.args[1] = 0x777;
	e.args[CONFIG(0)] = 7 | (3ULL << 32);
	e.args[CONFIG(1)] = 2 | (32ULL << 32);
	e.args[CONFIG(2)] = 4 | (2ULL << 32);
	e.args[CONFIG(3)] = 1024;
	e.args[CONFIG(4)] = 0xabc;
	GS_EXPECT(gs_decode_launch(rt, &e, &l));
	GS_EXPECT_EQ(l.func, 0x777);
	GS_EXPECT_EQ(l.grid[0], 7);
	GS_EXPECT_EQ(l.grid[1], 3);
	GS_EXPECT_EQ(l.grid[2], 2);
	GS_EXPECT_EQ(l.block[0], 32);
	GS_EXPECT_EQ(l.block[1], 4);
	GS_EXPECT_EQ(l.block[2], 2);
	GS_EXPECT_EQ(l.shared_mem, 1024);
	GS_EXPECT_EQ(l.stream, 0xabc);
	/* CUlaunchConfig's sharedMemBytes is an unsigned int: padding above it is junk */
	e.api = drv->id;
	e.args[CONFIG(3)] = 128 | (0x5555ULL << 32);
	GS_EXPECT(gs_decode_launch(drv, &e, &l));
	GS_EXPECT_EQ(l.shared_mem, 128);
}

GS_TEST(graph_launch_has_no_dims)
{
	const struct gs_cuda_api *api = api_named("cudaGraphLaunch");
	struct gs_cuda_call e = call_of(api);
	struct gs_launch l;

	e.args[0] = 0x600d;
	e.args[1] = 0x5;
	GS_EXPECT(gs_decode_launch(api, &e, &l));
	GS_EXPECT(l.graph);
	GS_EXPECT_EQ(l.func, 0x600d);
	GS_EXPECT_EQ(l.stream, 5);
}

GS_TEST(copies_take_bytes_kind_and_stream_from_their_positions)
{
	const struct gs_cuda_api *async = api_named("cudaMemcpyAsync");
	const struct gs_cuda_api *two_d = api_named("cudaMemcpy2DAsync");
	const struct gs_cuda_api *d32 = api_named("cuMemsetD32_v2");
	const struct gs_cuda_api *peer = api_named("cudaMemcpyPeer");
	struct gs_cuda_call e = call_of(async);
	struct gs_copy c;

	e.args[2] = 524288;
	e.args[3] = 3 | (0xffULL << 32); /* cudaMemcpyKind is an int */
	e.args[4] = 0x42;
	GS_EXPECT(gs_decode_copy(async, &e, &c));
	GS_EXPECT_EQ(c.bytes, 524288);
	GS_EXPECT_EQ(c.kind, GS_COPY_DTOD);
	GS_EXPECT(c.has_stream);
	GS_EXPECT_EQ(c.stream, 0x42);

	/* (dst, dpitch, src, spitch, width, height, kind, stream): kind and stream on the stack */
	e = call_of(two_d);
	e.args[4] = 1000;
	e.args[5] = 10;
	e.args[STACK(0)] = 1;
	e.args[STACK(1)] = 0x43;
	GS_EXPECT(gs_decode_copy(two_d, &e, &c));
	GS_EXPECT_EQ(c.bytes, 10000);
	GS_EXPECT_EQ(c.kind, GS_COPY_HTOD);
	GS_EXPECT_EQ(c.stream, 0x43);

	e = call_of(d32);
	e.args[2] = 1024;
	GS_EXPECT(gs_decode_copy(d32, &e, &c));
	GS_EXPECT_EQ(c.bytes, 4096);
	GS_EXPECT_EQ(c.kind, GS_COPY_MEMSET);
	GS_EXPECT(!c.has_stream);

	e = call_of(peer);
	e.args[4] = 4096;
	GS_EXPECT(gs_decode_copy(peer, &e, &c));
	GS_EXPECT_EQ(c.bytes, 4096);
	GS_EXPECT_EQ(c.kind, GS_COPY_PEER);
	GS_EXPECT(!gs_decode_copy(api_named("cudaLaunchKernel"), &e, &c));
}

GS_TEST(sync_handles_and_scopes)
{
	const struct gs_cuda_api *stream = api_named("cudaStreamSynchronize");
	const struct gs_cuda_api *device = api_named("cudaDeviceSynchronize");
	struct gs_cuda_call e = call_of(stream);
	uint64_t h = 0;

	e.args[0] = 0x77;
	GS_EXPECT(gs_decode_sync_handle(stream, &e, &h));
	GS_EXPECT_EQ(h, 0x77);
	GS_EXPECT_STR_EQ(stream->handle_name, "stream");
	GS_EXPECT(!gs_decode_sync_handle(device, &e, &h));
	GS_EXPECT_STR_EQ(device->handle_name, "device");
}

GS_TEST(probe_flags_follow_the_shape)
{
	GS_EXPECT_EQ(gs_cuda_api_call_flags(api_named("cudaLaunchKernel")),
		     GS_CALL_F_STACK_ARGS | GS_CALL_F_USER_STACK);
	GS_EXPECT_EQ(gs_cuda_api_call_flags(api_named("cuLaunchKernelEx")),
		     GS_CALL_F_DEREF_ARG0 | GS_CALL_F_USER_STACK);
	GS_EXPECT_EQ(gs_cuda_api_call_flags(api_named("cudaMemcpy2D")),
		     GS_CALL_F_STACK_ARGS | GS_CALL_F_USER_STACK);
	GS_EXPECT_EQ(gs_cuda_api_call_flags(api_named("cudaMemcpy")), GS_CALL_F_USER_STACK);
	GS_EXPECT_EQ(gs_cuda_api_call_flags(api_named("__cudaGetKernel")), GS_CALL_F_READ_OUT0);
	GS_EXPECT_EQ(gs_cuda_api_call_flags(api_named("cuModuleGetFunction")),
		     GS_CALL_F_READ_OUT0 | GS_CALL_F_READ_STR2);
	GS_EXPECT_EQ(gs_cuda_api_call_flags(api_named("__cudaRegisterFunction")), 0);
}

/* a call's string shares frames[]'s room in its record (gs_event.h): no API may want both */
GS_TEST(no_api_reads_a_string_and_a_stack)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 1; i < nr; i++) {
		uint32_t flags = gs_cuda_api_call_flags(&apis[i]);

		GS_EXPECT(!((flags & GS_CALL_F_READ_STR2) && (flags & GS_CALL_F_USER_STACK)));
	}
}

GS_TEST(event_family_lists)
{
	uint32_t f = 0;

	GS_EXPECT_EQ(gs_parse_event_families("cuda-sync", &f), 0);
	GS_EXPECT_EQ(f, GS_FAM_BIT(GS_FAM_SYNC));
	GS_EXPECT_EQ(gs_parse_event_families("cuda-mem,cuda-launch", &f), 0);
	GS_EXPECT_EQ(f,
		     GS_FAM_BIT(GS_FAM_MEM) | GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_NAMES));
	GS_EXPECT_EQ(gs_parse_event_families("cuda-launch-latency", &f), 0);
	GS_EXPECT_EQ(f, GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_NAMES) |
				GS_FAM_BIT(GS_FAM_LAUNCH_LATENCY));
	GS_EXPECT(gs_parse_event_families("cuda-mem,bogus", &f) < 0);
	GS_EXPECT(gs_parse_event_families("", &f) < 0);
	GS_EXPECT(gs_parse_event_families("cuda-memx", &f) < 0);
}

GS_TEST(launch_return_probe_is_opt_in)
{
	uint32_t plain = GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_SYNC) |
			 GS_FAM_BIT(GS_FAM_MEM) | GS_FAM_BIT(GS_FAM_NAMES);
	uint32_t latency = plain | GS_FAM_BIT(GS_FAM_LAUNCH_LATENCY);

	GS_EXPECT(!gs_cuda_api_wants_return(api_named("cudaLaunchKernel"), plain));
	GS_EXPECT(!gs_cuda_api_wants_return(api_named("cuGraphLaunch"), plain));
	GS_EXPECT(gs_cuda_api_wants_return(api_named("cudaLaunchKernel"), latency));
	GS_EXPECT(gs_cuda_api_wants_return(api_named("cuLaunchKernelEx"), latency));
	/* a result or a duration is what these are for */
	GS_EXPECT(gs_cuda_api_wants_return(api_named("cudaMalloc"), plain));
	GS_EXPECT(gs_cuda_api_wants_return(api_named("cudaFree"), plain));
	GS_EXPECT(gs_cuda_api_wants_return(api_named("cudaStreamSynchronize"), plain));
	GS_EXPECT(gs_cuda_api_wants_return(api_named("cudaMemcpy"), plain));
	GS_EXPECT(gs_cuda_api_wants_return(api_named("__cudaGetKernel"), plain));
}

GS_TEST_MAIN(runtime_launch_splits_dim3_over_two_registers, driver_launch_has_one_register_per_dim,
	     config_launches_read_the_struct_words, graph_launch_has_no_dims,
	     copies_take_bytes_kind_and_stream_from_their_positions, sync_handles_and_scopes,
	     probe_flags_follow_the_shape, no_api_reads_a_string_and_a_stack, event_family_lists,
	     launch_return_probe_is_opt_in)
