// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_gpu_activity.c: CUPTI record decoding against hostile sizes, and launch correlation. */
#include <errno.h>
#include <string.h>
#include "profilers/cuda/gpu_activity.h"
#include "profilers/cuda/gpu_correlate.h"
#include "profilers/cupti/cupti_abi.h"
#include "tests/unit/harness.h"

static void put32(struct gs_gpu_record *e, size_t off, uint32_t v)
{
	memcpy(e->rec + off, &v, sizeof(v));
}

static void put64(struct gs_gpu_record *e, size_t off, uint64_t v)
{
	memcpy(e->rec + off, &v, sizeof(v));
}

/* A kernel record as the injection library hands it over, name included. */
static void kernel_record(struct gs_gpu_record *e, const char *name)
{
	uint16_t regs = 40;

	memset(e, 0, sizeof(*e));
	e->hdr.type = GS_EV_GPU_RECORD;
	e->hdr.size = sizeof(*e);
	e->size = GS_CUPTI_KERNEL_SIZE;
	put32(e, GS_CUPTI_OFF_KIND, GS_CUPTI_KIND_CONCURRENT_KERNEL);
	memcpy(e->rec + GS_CUPTI_KERNEL_REGISTERS, &regs, sizeof(regs));
	put64(e, GS_CUPTI_KERNEL_START, 1000);
	put64(e, GS_CUPTI_KERNEL_END, 4000);
	put32(e, GS_CUPTI_KERNEL_DEVICE, 2);
	put32(e, GS_CUPTI_KERNEL_STREAM, 13);
	put32(e, GS_CUPTI_KERNEL_GRID, 7);
	put32(e, GS_CUPTI_KERNEL_BLOCK + 8, 4);
	put32(e, GS_CUPTI_KERNEL_STATIC_SMEM, 100);
	put32(e, GS_CUPTI_KERNEL_DYNAMIC_SMEM, 24);
	put32(e, GS_CUPTI_KERNEL_CORRELATION, 77);
	strcpy(e->name, name);
	e->name_len = (uint16_t)(strlen(name) + 1);
}

GS_TEST(kernel_record_decodes)
{
	static struct gs_gpu_record e;
	struct gs_gpu_op op;

	kernel_record(&e, "_Z3fooi");
	if (!GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), 0))
		return;
	GS_EXPECT_EQ(op.kind, GS_GPU_KERNEL);
	GS_EXPECT_EQ(op.start_ns, 1000);
	GS_EXPECT_EQ(op.end_ns, 4000);
	GS_EXPECT_EQ(op.device, 2);
	GS_EXPECT_EQ(op.stream, 13);
	GS_EXPECT_EQ(op.correlation, 77);
	GS_EXPECT_EQ(op.grid[0], 7);
	GS_EXPECT_EQ(op.block[2], 4);
	GS_EXPECT_EQ(op.shared_mem, 124);
	GS_EXPECT_EQ(op.registers, 40);
	GS_EXPECT_STR_EQ(op.name, "_Z3fooi");
}

GS_TEST(hostile_sizes_are_refused)
{
	static struct gs_gpu_record e;
	struct gs_gpu_op op;

	kernel_record(&e, "k");
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e) - 1, &op), -EINVAL); /* short ring record */
	e.size = GS_CUPTI_KERNEL_NEED - 1;				 /* record cut short */
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), -EINVAL);
	e.size = GS_GPU_RECORD_BYTES + 1; /* claims more than BPF can copy */
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), -EINVAL);
	e.size = 2; /* not even a kind */
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), -EINVAL);
}

GS_TEST(unterminated_name_is_dropped)
{
	static struct gs_gpu_record e;
	struct gs_gpu_op op;

	kernel_record(&e, "abc");
	e.name_len = 3; /* the NUL is outside what it says was copied */
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), 0);
	GS_EXPECT(op.name == NULL);
	e.name_len = GS_GPU_NAME_BYTES + 1;
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), 0);
	GS_EXPECT(op.name == NULL);
}

GS_TEST(timestamps_checked)
{
	static struct gs_gpu_record e;
	struct gs_gpu_op op;

	kernel_record(&e, "k");
	put64(&e, GS_CUPTI_KERNEL_START, 0); /* CUPTI's overflowed device buffers */
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), -ERANGE);
	put64(&e, GS_CUPTI_KERNEL_START, 5000); /* ends before it starts */
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), -EINVAL);
}

GS_TEST(memcpy_and_other_kinds)
{
	static struct gs_gpu_record e;
	struct gs_gpu_op op;

	memset(&e, 0, sizeof(e));
	e.size = GS_CUPTI_MEMCPY_SIZE;
	put32(&e, GS_CUPTI_OFF_KIND, GS_CUPTI_KIND_MEMCPY);
	e.rec[GS_CUPTI_MEMCPY_COPY_KIND] = GS_CUPTI_MEMCPY_DTOH;
	put64(&e, GS_CUPTI_MEMCPY_BYTES, 1 << 20);
	put64(&e, GS_CUPTI_MEMCPY_START, 10);
	put64(&e, GS_CUPTI_MEMCPY_END, 20);
	put32(&e, GS_CUPTI_MEMCPY_CORRELATION, 5);
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), 0);
	GS_EXPECT_EQ(op.kind, GS_GPU_MEMCPY);
	GS_EXPECT_EQ(op.bytes, 1 << 20);
	GS_EXPECT_EQ(op.correlation, 5);
	GS_EXPECT_STR_EQ(gs_gpu_copy_kind_name(op.copy_kind), "DtoH");
	put32(&e, GS_CUPTI_OFF_KIND, 5); /* CUPTI_ACTIVITY_KIND_RUNTIME: not used */
	GS_EXPECT_EQ(gs_gpu_op_decode(&e, sizeof(e), &op), -ENOENT);
}

GS_TEST(slice_takes_the_id_of_its_domain_inside_it)
{
	struct gs_gpu_correlate *c = gs_gpu_correlate__new();

	if (!GS_EXPECT(c))
		return;
	/* a runtime call at 100..200 with a driver call nested in it, on thread 11 */
	gs_gpu_correlate__api(c, 10, 11, 110, 5, GS_CUPTI_DOMAIN_RUNTIME_API);
	gs_gpu_correlate__api(c, 10, 11, 150, 6, GS_CUPTI_DOMAIN_DRIVER_API);
	GS_EXPECT_EQ(gs_gpu_correlate__slice(c, 10, 11, 140, 160, GS_CUPTI_DOMAIN_DRIVER_API), 6);
	GS_EXPECT_EQ(gs_gpu_correlate__slice(c, 10, 11, 100, 200, GS_CUPTI_DOMAIN_RUNTIME_API), 5);
	/* another thread, or a slice that does not span the entry: nothing */
	GS_EXPECT_EQ(gs_gpu_correlate__slice(c, 10, 12, 100, 200, GS_CUPTI_DOMAIN_RUNTIME_API), 0);
	GS_EXPECT_EQ(gs_gpu_correlate__slice(c, 10, 11, 300, 400, GS_CUPTI_DOMAIN_RUNTIME_API), 0);
	GS_EXPECT(gs_gpu_correlate__launched(c, 10, 5));
	GS_EXPECT(gs_gpu_correlate__launched(c, 10, 6));
	GS_EXPECT(!gs_gpu_correlate__launched(c, 10, 7));
	GS_EXPECT(!gs_gpu_correlate__launched(c, 99, 5));
	gs_gpu_correlate__forget_pid(c, 10);
	GS_EXPECT(!gs_gpu_correlate__launched(c, 10, 5));
	gs_gpu_correlate__free(c);
}

GS_TEST(launched_ids_span_a_long_run)
{
	struct gs_gpu_correlate *c = gs_gpu_correlate__new();
	uint32_t id;

	if (!GS_EXPECT(c))
		return;
	for (id = 1000; id < 1000 + 100000; id += 3) {
		gs_gpu_correlate__api(c, 1, 1, id, id, GS_CUPTI_DOMAIN_RUNTIME_API);
		gs_gpu_correlate__slice(c, 1, 1, id, id, GS_CUPTI_DOMAIN_RUNTIME_API);
	}
	GS_EXPECT(gs_gpu_correlate__launched(c, 1, 1000));
	GS_EXPECT(gs_gpu_correlate__launched(c, 1, 1000 + 99999));
	GS_EXPECT(!gs_gpu_correlate__launched(c, 1, 1001));
	GS_EXPECT(!gs_gpu_correlate__launched(c, 1, 999));
	gs_gpu_correlate__free(c);
}

GS_TEST_MAIN(kernel_record_decodes, hostile_sizes_are_refused, unterminated_name_is_dropped,
	     timestamps_checked, memcpy_and_other_kinds, slice_takes_the_id_of_its_domain_inside_it,
	     launched_ids_span_a_long_run)
