// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_event_decode.c: synthetic ring-buffer records through the decoder's size checks. */
#include <errno.h>
#include <string.h>
#include <linux/types.h>
#include "tests/unit/harness.h"
#include "user/event_decode.h"

static struct gs_mem_alloc alloc_record(__u16 nr_frames, __u32 hdr_size)
{
	struct gs_mem_alloc e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = GS_EV_MEM_ALLOC;
	e.hdr.size = hdr_size;
	e.nr_frames = nr_frames;
	return e;
}

GS_TEST(alloc_with_frames_is_valid)
{
	struct gs_mem_alloc e = alloc_record(3, offsetof(struct gs_mem_alloc, frames) + 3 * 8);

	/* BPF reserves the whole struct; hdr.size says how much of it is valid */
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), GS_EV_MEM_ALLOC);
	GS_EXPECT_EQ(gs_event_decode(&e, e.hdr.size), GS_EV_MEM_ALLOC);
}

GS_TEST(alloc_claiming_more_frames_than_it_holds)
{
	struct gs_mem_alloc e = alloc_record(4, offsetof(struct gs_mem_alloc, frames) + 3 * 8);

	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
	e = alloc_record(GS_MAX_STACK + 1, sizeof(e));
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
	e = alloc_record(0, offsetof(struct gs_mem_alloc, frames) - 1);
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
}

GS_TEST(header_size_must_fit_the_record)
{
	struct gs_mem_free e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = GS_EV_MEM_FREE;
	e.hdr.size = sizeof(e);
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), GS_EV_MEM_FREE);
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e) - 1), -EINVAL);     /* hdr.size > record */
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e.hdr) - 1), -EINVAL); /* no whole header */
	e.hdr.size = sizeof(e.hdr) - 1;
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
	e.hdr.size = sizeof(e) - 1; /* shorter than its type's fixed part */
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
}

GS_TEST(each_type_needs_its_fixed_part)
{
	struct {
		__u16 type;
		__u32 size;
	} cases[] = {
		{ GS_EV_PROC_EXEC, sizeof(struct gs_proc_event) },
		{ GS_EV_PROC_EXIT, sizeof(struct gs_proc_event) },
		{ GS_EV_LIBS_CHANGED, sizeof(struct gs_proc_event) },
		{ GS_EV_MEM_FREE, sizeof(struct gs_mem_free) },
		{ GS_EV_MEM_FREE_RET, offsetof(struct gs_mem_free_ret, frames) },
		{ GS_EV_CUDA_CALL, offsetof(struct gs_cuda_call, frames) },
		{ GS_EV_TORCH_MEM, offsetof(struct gs_torch_mem, frames) },
		{ GS_EV_TORCH_OOM, offsetof(struct gs_torch_oom, frames) },
	};
	union {
		struct gs_event_hdr hdr;
		char bytes[512];
	} rec;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&rec, 0, sizeof(rec));
		rec.hdr.type = cases[i].type;
		rec.hdr.size = cases[i].size;
		GS_EXPECT_EQ(gs_event_decode(&rec, sizeof(rec)), cases[i].type);
		rec.hdr.size = cases[i].size - 1;
		if (cases[i].size > sizeof(rec.hdr))
			GS_EXPECT_EQ(gs_event_decode(&rec, sizeof(rec)), -EINVAL);
	}
}

GS_TEST(call_frames_must_fit)
{
	struct gs_cuda_call e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = GS_EV_CUDA_CALL;
	e.nr_frames = 2;
	e.hdr.size = offsetof(struct gs_cuda_call, frames) + 2 * 8;
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), GS_EV_CUDA_CALL);
	e.nr_frames = 3;
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
}

GS_TEST(cpu_sample_stacks_must_fit)
{
	struct gs_cpu_sample e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = GS_EV_CPU_SAMPLE;
	e.nr_frames = 2;
	e.nr_kernel = GS_CPU_KERNEL_STACK;
	e.hdr.size = offsetof(struct gs_cpu_sample, frames) + 2 * 8;
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), GS_EV_CPU_SAMPLE);
	e.nr_frames = 3; /* more user frames than hdr.size holds */
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
	e.nr_frames = 2;
	e.nr_kernel = GS_CPU_KERNEL_STACK + 1; /* more kernel frames than the array */
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
	e.nr_kernel = 0;
	e.hdr.size = offsetof(struct gs_cpu_sample, frames) - 1;
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -EINVAL);
}

GS_TEST(torch_frames_must_fit)
{
	struct gs_torch_mem m;
	struct gs_torch_oom o;

	memset(&m, 0, sizeof(m));
	m.hdr.type = GS_EV_TORCH_MEM;
	m.nr_frames = 2;
	m.hdr.size = offsetof(struct gs_torch_mem, frames) + 2 * 8;
	GS_EXPECT_EQ(gs_event_decode(&m, sizeof(m)), GS_EV_TORCH_MEM);
	m.nr_frames = 3;
	GS_EXPECT_EQ(gs_event_decode(&m, sizeof(m)), -EINVAL);
	m.nr_frames = GS_MAX_STACK + 1;
	m.hdr.size = sizeof(m);
	GS_EXPECT_EQ(gs_event_decode(&m, sizeof(m)), -EINVAL);
	memset(&o, 0, sizeof(o));
	o.hdr.type = GS_EV_TORCH_OOM;
	o.nr_frames = 1;
	o.hdr.size = offsetof(struct gs_torch_oom, frames) + 8;
	GS_EXPECT_EQ(gs_event_decode(&o, sizeof(o)), GS_EV_TORCH_OOM);
	o.nr_frames = 2;
	GS_EXPECT_EQ(gs_event_decode(&o, sizeof(o)), -EINVAL);
}

GS_TEST(unknown_type_is_reported_as_such)
{
	struct gs_proc_event e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = 999;
	e.hdr.size = sizeof(e);
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), -ENOENT);
}

GS_TEST(proc_event_carries_start_time_and_comm)
{
	struct gs_proc_event e;

	memset(&e, 0, sizeof(e));
	e.hdr.type = GS_EV_PROC_EXEC;
	e.hdr.size = sizeof(e);
	e.start = 12345;
	memcpy(e.comm, "true", 5);
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e)), GS_EV_PROC_EXEC);
	/* the old record, a header alone, is too short: a stop's start time is not guessed */
	e.hdr.size = sizeof(e.hdr);
	GS_EXPECT_EQ(gs_event_decode(&e, sizeof(e.hdr)), -EINVAL);
	GS_EXPECT_EQ(offsetof(struct gs_proc_event, start), 24);
	GS_EXPECT_EQ(offsetof(struct gs_proc_event, comm), 32);
}

GS_TEST_MAIN(alloc_with_frames_is_valid, alloc_claiming_more_frames_than_it_holds,
	     header_size_must_fit_the_record, each_type_needs_its_fixed_part, call_frames_must_fit,
	     cpu_sample_stacks_must_fit, torch_frames_must_fit, unknown_type_is_reported_as_such,
	     proc_event_carries_start_time_and_comm)
