// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_timeline_engine.c: event sequences rendered to trace rows by the engine, without BPF. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/cuda/api.h"
#include "profilers/cuda/kernel_names.h"
#include "profilers/timeline/engine.h"
#include "profilers/timeline/names.h"
#include "stitch/trace_writer.h"
#include "tests/unit/harness.h"
#include "user/addr_map.h"
#include "user/stack_table.h"
#include "user/symcache.h"

struct rig {
	struct gs_timeline tl;
	struct gs_tracker_ops ops;
	struct gs_symcache *symcache;
	char *text;
	size_t len;
	FILE *f;
};

/* One recording into a memory file, no tracker: what record wires, minus BPF. */
static bool rig_open(struct rig *g, uint32_t families)
{
	memset(g, 0, sizeof(*g));
	g->f = open_memstream(&g->text, &g->len);
	g->symcache = gs_symcache__new();
	if (!g->f || !g->symcache)
		return false;
	g->tl.families = families;
	g->tl.stacks = gs_stack_table__new(g->symcache);
	g->tl.names = gs_kernel_names__new(g->symcache);
	g->tl.named = gs_timeline_names__new();
	g->tl.outputs = gs_addr_map__new();
	g->tl.stats = gs_trace_stats__new();
	g->tl.writer = gs_trace_writer__new(g->f, 1000000);
	gs_mem_model__init(&g->tl.mem, g->tl.stacks, g->symcache, false);
	gs_timeline__tracker_ops(&g->tl, &g->ops);
	return g->tl.stacks && g->tl.names && g->tl.named && g->tl.outputs && g->tl.stats &&
	       g->tl.writer;
}

/* Ends the document as record does: rows in order, then the process names. */
static const char *rig_finish(struct rig *g)
{
	gs_timeline__flush(&g->tl);
	gs_timeline__write_names(&g->tl, 0);
	gs_trace_writer__metadata(g->tl.writer);
	gs_trace_writer__finish(g->tl.writer);
	fflush(g->f);
	return g->text;
}

static void rig_close(struct rig *g)
{
	gs_timeline__release(&g->tl);
	gs_mem_model__release(&g->tl.mem);
	gs_trace_writer__free(g->tl.writer);
	gs_trace_stats__free(g->tl.stats);
	gs_addr_map__free(g->tl.outputs);
	gs_timeline_names__free(g->tl.named);
	gs_kernel_names__free(g->tl.names);
	gs_stack_table__free(g->tl.stacks);
	gs_symcache__free(g->symcache);
	if (g->f)
		fclose(g->f);
	free(g->text);
}

static uint16_t api_id(const char *name)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 1; i < nr; i++)
		if (!strcmp(apis[i].name, name))
			return apis[i].id;
	return 0;
}

static size_t count(const char *text, const char *what)
{
	size_t n = 0;

	for (const char *p = text; p && (p = strstr(p, what)); p++)
		n++;
	return n;
}

static struct gs_event_hdr hdr(uint64_t ts_ns)
{
	pid_t pid = getpid();

	return (struct gs_event_hdr){ .ts_ns = ts_ns, .pid = (__u32)pid, .tid = (__u32)pid };
}

GS_TEST(an_allocation_is_a_runtime_slice_and_a_memory_counter)
{
	struct rig g;
	struct gs_mem_alloc a = { .hdr = hdr(3000),
				  .ptr = 0x1000,
				  .size = 4096,
				  .entry_ts_ns = 1000,
				  .api = api_id("cudaMalloc") };
	const char *text;

	if (!GS_EXPECT(rig_open(&g, GS_FAM_BIT(GS_FAM_MEM))) || !GS_EXPECT(a.api)) {
		rig_close(&g);
		return;
	}
	g.ops.mem_alloc(g.ops.ctx, &a);
	text = rig_finish(&g);
	GS_EXPECT(strstr(text, "\"name\":\"cudaMalloc\",\"cat\":\"cuda_runtime\"") != NULL);
	GS_EXPECT(strstr(text, "\"ts\":1.000") && strstr(text, "\"dur\":2.000"));
	GS_EXPECT(strstr(text, "\"bytes\":4096") && strstr(text, "\"ptr\":\"0x1000\""));
	GS_EXPECT(strstr(text, "\"ph\":\"C\",\"name\":\"CUDA memory\",\"cat\":\"counter\"") !=
		  NULL);
	GS_EXPECT_EQ(count(text, "\"process_name\""), 1);
	GS_EXPECT_EQ(count(text, "\"thread_name\""), 1);
	GS_EXPECT_EQ(g.tl.events, 2); /* the slice and the counter */
	GS_EXPECT_EQ(g.tl.error, 0);
	rig_close(&g);
}

GS_TEST(samples_alone_are_instants_that_last_zero_on_a_named_thread)
{
	struct rig g;
	struct gs_cpu_sample s = { .hdr = hdr(5000), .cpu = 1 };
	const char *text;

	if (!GS_EXPECT(rig_open(&g, 0))) {
		rig_close(&g);
		return;
	}
	g.ops.cpu_sample(g.ops.ctx, &s);
	s.hdr.ts_ns = 6000;
	g.ops.cpu_sample(g.ops.ctx, &s);
	text = rig_finish(&g);
	GS_EXPECT_EQ(count(text, "\"cat\":\"cpu_sample\""), 2);
	GS_EXPECT_EQ(count(text, "\"dur\":0"), 2);
	GS_EXPECT_EQ(count(text, "\"ph\":\"X\""), 0);
	GS_EXPECT_EQ(count(text, "\"process_name\""), 1);
	GS_EXPECT_EQ(count(text, "\"thread_name\""), 1);
	GS_EXPECT_EQ(g.tl.cpu_samples, 2);
	rig_close(&g);
}

GS_TEST(a_process_is_named_once_across_its_exec)
{
	struct rig g;
	struct gs_cpu_sample s = { .hdr = hdr(5000) };
	const char *text;

	if (!GS_EXPECT(rig_open(&g, 0))) {
		rig_close(&g);
		return;
	}
	g.ops.cpu_sample(g.ops.ctx, &s);
	gs_timeline__proc_gone(&g.tl, (pid_t)s.hdr.pid, true); /* exec */
	s.hdr.ts_ns = 7000;
	g.ops.cpu_sample(g.ops.ctx, &s);
	text = rig_finish(&g);
	GS_EXPECT_EQ(count(text, "\"process_name\""), 1);
	GS_EXPECT_EQ(count(text, "\"thread_name\""), 2); /* the new image names its threads */
	rig_close(&g);
}

GS_TEST_MAIN(an_allocation_is_a_runtime_slice_and_a_memory_counter,
	     samples_alone_are_instants_that_last_zero_on_a_named_thread,
	     a_process_is_named_once_across_its_exec)
