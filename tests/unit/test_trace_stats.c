// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_trace_stats.c: the summary engine over rows, and rows read back from trace text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cmd/stats_reader.h"
#include "profilers/timeline/trace_stats.h"
#include "stitch/trace_parse.h"
#include "tests/unit/harness.h"

static char *printed(struct gs_trace_stats *s, int fmt)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	if (fmt < 0)
		gs_trace_stats__print_summary(s, f);
	else
		gs_trace_stats__print(s, f, (enum gs_stats_format)fmt);
	fclose(f);
	return text;
}

static const char TRACE[] =
	"{\"traceEvents\":["
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":42,\"tid\":0,"
	"\"args\":{\"name\":\"train\"}},"
	"{\"ph\":\"X\",\"name\":\"cudaLaunchKernel\",\"cat\":\"cuda_runtime\",\"pid\":42,"
	"\"tid\":42,\"ts\":10,\"dur\":4.25,\"args\":{\"kernel\":\"gemm\"}},"
	"{\"ph\":\"X\",\"name\":\"cudaLaunchKernel\",\"cat\":\"cuda_runtime\",\"pid\":42,"
	"\"tid\":42,\"ts\":20,\"dur\":1.75,\"args\":{\"kernel\":\"gemm\"}},"
	"{\"ph\":\"X\",\"name\":\"cudaStreamSynchronize\",\"cat\":\"cuda_runtime\",\"pid\":42,"
	"\"tid\":42,\"ts\":30,\"dur\":100,\"args\":{}},"
	"{\"ph\":\"X\",\"name\":\"cudaMemcpy\",\"cat\":\"cuda_runtime\",\"pid\":42,\"tid\":42,"
	"\"ts\":140,\"dur\":7,\"args\":{\"bytes\":1048576,\"kind\":\"HtoD\"}},"
	"{\"ph\":\"X\",\"name\":\"cudaMalloc\",\"cat\":\"cuda_runtime\",\"pid\":42,\"tid\":42,"
	"\"ts\":150,\"dur\":3,\"args\":{\"bytes\":4096,\"error\":2}},"
	"{\"ph\":\"X\",\"name\":\"gemm\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":15,"
	"\"dur\":50},"
	"{\"ph\":\"X\",\"name\":\"step\",\"cat\":\"nvtx\",\"pid\":42,\"tid\":42,\"ts\":5,"
	"\"dur\":200},"
	"{\"ph\":\"X\",\"name\":\"step\",\"cat\":\"nvtx\",\"pid\":42,\"tid\":42,\"ts\":300,"
	"\"dur\":100},"
	/* PyTorch's own row in a stitched trace: not counted */
	"{\"ph\":\"X\",\"name\":\"cudaLaunchKernel\",\"cat\":\"cuda_runtime\",\"pid\":42,"
	"\"tid\":42,\"ts\":10,\"dur\":4,\"args\":{\"External id\":2,\"cbid\":211}},"
	"{\"ph\":\"X\",\"name\":\"aten::mm\",\"cat\":\"cpu_op\",\"pid\":42,\"tid\":42,\"ts\":1,"
	"\"dur\":9}"
	"]}";

static struct gs_trace_stats *read_trace(const char *text, size_t chunk)
{
	struct gs_stats_reader rd = { .stats = gs_trace_stats__new() };
	struct gs_trace_parse_ops ops = { .ctx = &rd, .event = gs_stats_reader_event };
	struct gs_trace_parser *p = gs_trace_parser__new(&ops);
	size_t len = strlen(text);
	int err = 0;

	for (size_t off = 0; p && rd.stats && !err && off < len; off += chunk)
		err = gs_trace_parser__feed(p, text + off, off + chunk < len ? chunk : len - off);
	if (!p || !rd.stats || err || gs_trace_parser__finish(p)) {
		gs_trace_stats__free(rd.stats);
		rd.stats = NULL;
	}
	gs_trace_parser__free(p);
	free(rd.obj);
	return rd.stats;
}

GS_TEST(rows_from_a_trace_make_every_table)
{
	struct gs_trace_stats *s = read_trace(TRACE, 7);
	char *csv;

	if (!GS_EXPECT(s))
		return;
	GS_EXPECT_EQ(gs_trace_stats__rows(s), 8);
	csv = printed(s, GS_STATS_CSV);
	if (GS_EXPECT(csv)) {
		GS_EXPECT(
			strstr(csv, "cuda_api,process,42,train,cudaLaunchKernel,ns,2,6000,3000,"));
		GS_EXPECT(strstr(csv,
				 "cuda_api,process,42,train,cudaMalloc,ns,1,3000,3000,3000,3000,"
				 "3000,1\n"));
		GS_EXPECT(strstr(csv, "gpu_kernels,device,0,,gemm,ns,1,50000,50000,"));
		GS_EXPECT(strstr(csv, "copies,process,42,train,HtoD,bytes,1,1048576,1048576,"));
		GS_EXPECT(strstr(csv, "memory,process,42,train,cudaMalloc,bytes,1,4096,4096,"));
		GS_EXPECT(strstr(csv, "nvtx,process,42,train,step,ns,2,300000,150000,"));
		GS_EXPECT(!strstr(csv, "aten::mm"));
	}
	free(csv);
	gs_trace_stats__free(s);
}

GS_TEST(summary_is_records_from_rows)
{
	struct gs_trace_stats *s = read_trace(TRACE, 4096);
	char *text;

	if (!GS_EXPECT(s))
		return;
	text = printed(s, -1);
	if (GS_EXPECT(text)) {
		GS_EXPECT(strstr(text, "  kernels by launches:\n             2  gemm\n"));
		/* the sync's process named by its process_name row, wherever that row came */
		GS_EXPECT(strstr(text, "  sync: pid 42 (train): 1 call, total 0.100 ms"));
		GS_EXPECT(strstr(text, "  copies HtoD         1.0 MiB in 1 call\n"));
		GS_EXPECT(strstr(text, "  GPU kernels by device time:\n"));
	}
	free(text);
	gs_trace_stats__free(s);
}

GS_TEST(hostile_names_are_escaped_and_cut)
{
	struct gs_trace_stats *s = gs_trace_stats__new();
	char *name = malloc(100000), *text;

	if (!GS_EXPECT(s && name))
		return;
	memset(name, 'a', 99999);
	name[99999] = '\0';
	name[0] = '\033';
	GS_EXPECT_EQ(gs_trace_stats__add(s, &(struct gs_stats_row){ .ph = 'X',
								    .name = name,
								    .cat = "nvtx",
								    .pid = 1,
								    .dur_ns = 5 }),
		     0);
	text = printed(s, GS_STATS_TEXT);
	if (GS_EXPECT(text)) {
		GS_EXPECT(!strchr(text, '\033'));
		GS_EXPECT(strstr(text, "\\x1baaa"));
		GS_EXPECT(strlen(text) < 10000);
	}
	free(text);
	free(name);
	gs_trace_stats__free(s);
}

GS_TEST(keys_past_the_cap_are_other)
{
	struct gs_trace_stats *s = gs_trace_stats__new();
	char name[32], *json;

	if (!GS_EXPECT(s))
		return;
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "range%d", i);
		gs_trace_stats__add(s,
				    &(struct gs_stats_row){
					    .ph = 'X', .name = name, .cat = "nvtx", .dur_ns = 1 });
	}
	json = printed(s, GS_STATS_JSON);
	if (GS_EXPECT(json))
		GS_EXPECT(strstr(json, "\"name\":\"[other]\",\"count\":904,"));
	free(json);
	gs_trace_stats__free(s);
}

GS_TEST(async_nvtx_ranges_pair_by_process_and_id)
{
	static const char trace[] =
		"{\"traceEvents\":["
		"{\"ph\":\"b\",\"name\":\"epoch\",\"cat\":\"nvtx\",\"pid\":5,\"tid\":5,"
		"\"ts\":1,\"id\":7},"
		"{\"ph\":\"b\",\"name\":\"load\",\"cat\":\"nvtx\",\"pid\":5,\"tid\":6,"
		"\"ts\":2,\"id\":\"0x8\"},"
		"{\"ph\":\"b\",\"name\":\"epoch\",\"cat\":\"nvtx\",\"pid\":6,\"tid\":6,"
		"\"ts\":3,\"id\":7},"
		"{\"ph\":\"e\",\"cat\":\"nvtx\",\"pid\":5,\"tid\":9,\"ts\":11,\"id\":7},"
		"{\"ph\":\"e\",\"cat\":\"nvtx\",\"pid\":5,\"tid\":6,\"ts\":4.5,"
		"\"id\":\"0x8\"},"
		"{\"ph\":\"e\",\"cat\":\"nvtx\",\"pid\":5,\"tid\":6,\"ts\":50,\"id\":99}"
		"]}";
	struct gs_trace_stats *s = read_trace(trace, 5);
	char *csv;

	if (!GS_EXPECT(s))
		return;
	csv = printed(s, GS_STATS_CSV);
	if (GS_EXPECT(csv)) {
		GS_EXPECT(strstr(csv, "nvtx,process,5,,epoch,ns,1,10000,"));
		GS_EXPECT(strstr(csv, "nvtx,process,5,,load,ns,1,2500,"));
		GS_EXPECT(!strstr(csv, "nvtx,process,6,"));
	}
	GS_EXPECT_EQ(gs_trace_stats__unended(s), 1); /* pid 6's epoch */
	free(csv);
	gs_trace_stats__free(s);
}

GS_TEST_MAIN(rows_from_a_trace_make_every_table, summary_is_records_from_rows,
	     async_nvtx_ranges_pair_by_process_and_id, hostile_names_are_escaped_and_cut,
	     keys_past_the_cap_are_other)
