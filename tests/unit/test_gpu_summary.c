// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_gpu_summary.c: kernel times, device busy fraction and copy throughput, printed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/timeline/gpu_summary.h"
#include "profilers/cupti/cupti_abi.h"
#include "tests/unit/harness.h"

static struct gs_gpu_op op(enum gs_gpu_op_kind kind, const char *name, uint32_t device,
			   uint64_t start, uint64_t end, uint64_t bytes)
{
	return (struct gs_gpu_op){ .kind = kind,
				   .name = name,
				   .device = device,
				   .start_ns = start,
				   .end_ns = end,
				   .bytes = bytes,
				   .copy_kind = GS_CUPTI_MEMCPY_HTOD };
}

/* What gs_gpu_summary__print writes, in a buffer the caller frees. */
static char *printed(struct gs_gpu_summary *s)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	gs_gpu_summary__print(s, f);
	fclose(f);
	return text;
}

GS_TEST(kernels_by_total_device_time)
{
	struct gs_gpu_summary *s = gs_gpu_summary__new();
	char *text;

	if (!GS_EXPECT(s))
		return;
	for (int i = 0; i < 4; i++) {
		struct gs_gpu_op k = op(GS_GPU_KERNEL, "small", 0, 1000 * i, 1000 * i + 100, 0);

		GS_EXPECT_EQ(gs_gpu_summary__add(s, &k), 0);
	}
	{
		struct gs_gpu_op k = op(GS_GPU_KERNEL, "big", 0, 10000, 12000, 0);

		GS_EXPECT_EQ(gs_gpu_summary__add(s, &k), 0);
	}
	text = printed(s);
	if (GS_EXPECT(text)) {
		/* big first: 2 us in one launch; small: 4 x 0.1 us */
		GS_EXPECT(strstr(text, "       1       0.002       2.000       2.000  big\n"));
		GS_EXPECT(strstr(text, "       4       0.000       0.100       0.100  small\n"));
		GS_EXPECT(strstr(text, "big") < strstr(text, "small"));
	}
	free(text);
	gs_gpu_summary__free(s);
}

GS_TEST(busy_is_the_union_over_the_span)
{
	struct gs_gpu_summary *s = gs_gpu_summary__new();
	/* two streams overlapping on device 1: [0,400) and [200,600), then [800,1000) */
	struct gs_gpu_op ops[] = {
		op(GS_GPU_KERNEL, "a", 1, 0, 400, 0),
		op(GS_GPU_KERNEL, "b", 1, 200, 600, 0),
		op(GS_GPU_MEMCPY, NULL, 1, 800, 1000, 4000),
	};
	char *text;

	if (!GS_EXPECT(s))
		return;
	for (size_t i = 0; i < 3; i++)
		gs_gpu_summary__add(s, &ops[i]);
	text = printed(s);
	if (GS_EXPECT(text)) {
		/* busy 600 + 200 of 1000 ns */
		GS_EXPECT(strstr(text, "GPU 1: busy 80.0% of 0.001 ms"));
		/* 4000 bytes in 200 ns */
		GS_EXPECT(strstr(text, "GPU copies HtoD     1 x,"));
		GS_EXPECT(strstr(text, "20.00 GB/s"));
	}
	free(text);
	gs_gpu_summary__free(s);
}

GS_TEST(nothing_printed_without_records)
{
	struct gs_gpu_summary *s = gs_gpu_summary__new();
	char *text;

	if (!GS_EXPECT(s))
		return;
	text = printed(s);
	GS_EXPECT(text && !*text);
	free(text);
	gs_gpu_summary__free(s);
}

GS_TEST(names_beyond_the_cap_are_counted_as_other)
{
	struct gs_gpu_summary *s = gs_gpu_summary__new();
	char name[32], *text;

	if (!GS_EXPECT(s))
		return;
	/* 1100 distinct names, twice each: the last 76 names go to one counted entry */
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 1100; i++) {
			struct gs_gpu_op k =
				op(GS_GPU_KERNEL, name, 0, 10, 10 + 1000 * (i == 1099), 0);

			snprintf(name, sizeof(name), "kernel_%04d", i);
			GS_EXPECT_EQ(gs_gpu_summary__add(s, &k), 0);
		}
	text = printed(s);
	if (GS_EXPECT(text)) {
		GS_EXPECT(strstr(
			text, "     152       0.002       0.013       1.000  [other kernels]\n"));
		GS_EXPECT(strstr(text, "    ... 1005 more kernels\n"));
		GS_EXPECT(strstr(text, "    152 launches of names beyond the first 1024 are under "
				       "[other kernels]\n"));
		GS_EXPECT(!strstr(text, "kernel_1099"));
	}
	free(text);
	gs_gpu_summary__free(s);
}

GS_TEST(busy_past_the_cap_is_a_bounded_range)
{
	struct gs_gpu_summary *s = gs_gpu_summary__new();
	char *text;

	if (!GS_EXPECT(s))
		return;
	/* 100 ns of every 1000 then 900 of every 1000: 50% busy over 2 ms */
	for (uint64_t i = 0; i < 2000; i++) {
		uint64_t len = i < 1000 ? 100 : 900;
		struct gs_gpu_op k = op(GS_GPU_KERNEL, "k", 0, i * 1000, i * 1000 + len, 0);

		gs_gpu_summary__add(s, &k);
	}
	text = printed(s);
	if (GS_EXPECT(text)) /* the kept pieces overcount; the range holds the truth */
		GS_EXPECT(strstr(text, "GPU 0: busy 50.0% to 9"));
	free(text);
	gs_gpu_summary__free(s);
}

GS_TEST_MAIN(kernels_by_total_device_time, busy_is_the_union_over_the_span,
	     nothing_printed_without_records, names_beyond_the_cap_are_counted_as_other,
	     busy_past_the_cap_is_a_bounded_range)
