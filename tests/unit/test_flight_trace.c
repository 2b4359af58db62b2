// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_flight_trace.c: a flight-recorder window rendered through the timeline engine, no BPF. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/cuda/api.h"
#include "profilers/daemon/flight_recorder.h"
#include "profilers/daemon/flight_trace.h"
#include "profilers/leak_report.h"
#include "tests/unit/harness.h"
#include "user/stack_table.h"
#include "user/symcache.h"

/* above PID_MAX_LIMIT (4194304), so never a live process: nothing to symbolize, fast */
#define NO_PID 0x7ffffff0
#define MiB    (1024 * 1024ULL)

struct rig {
	struct gs_symcache *symcache;
	struct gs_stack_table *stacks;
	struct gs_flight_recorder *fr;
	uint64_t stats[GS_STAT__MAX];
	char *text;
	size_t len;
};

static uint16_t api_id(const char *name)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 1; i < nr; i++)
		if (!strcmp(apis[i].name, name))
			return apis[i].id;
	return 0;
}

static size_t count(const char *text, size_t len, const char *what)
{
	size_t n = 0, wlen = strlen(what);

	for (size_t i = 0; text && i + wlen <= len; i++)
		n += !memcmp(text + i, what, wlen);
	return n;
}

/*
 * The window: a free of what was allocated before it (1 MiB), a 4 MiB cudaMalloc with its
 * stack, a failed 1 GiB one, the 4 MiB freed; the process holds 10 MiB at the end.
 */
static bool rig_open(struct rig *g)
{
	static const uint64_t frames[] = { 0x1000, 0x2000 };
	uint16_t malloc_id = api_id("cudaMalloc"), free_id = api_id("cudaFree");
	int64_t stack;

	memset(g, 0, sizeof(*g));
	g->symcache = gs_symcache__new();
	g->stacks = g->symcache ? gs_stack_table__new(g->symcache) : NULL;
	g->fr = gs_flight_recorder__new(30000000000ULL, 100);
	if (!g->stacks || !g->fr || !malloc_id || !free_id)
		return false;
	stack = gs_stack_table__intern(g->stacks, NO_PID, frames, 2);
	if (stack < 0)
		return false;
	struct gs_flight_event ev[] = {
		{ .ts_ns = 1000,
		  .entry_ts_ns = 1000,
		  .ptr = 0xa000,
		  .size = MiB,
		  .tid = 7,
		  .api = free_id,
		  .kind = GS_FLIGHT_FREE },
		{ .ts_ns = 3000,
		  .entry_ts_ns = 2000,
		  .ptr = 0xb000,
		  .size = 4 * MiB,
		  .tid = 7,
		  .stack_id = (uint32_t)stack,
		  .api = malloc_id,
		  .kind = GS_FLIGHT_ALLOC },
		{ .ts_ns = 5000,
		  .entry_ts_ns = 4000,
		  .size = 1024 * MiB,
		  .tid = 7,
		  .stack_id = (uint32_t)stack,
		  .ret = 2,
		  .api = malloc_id,
		  .kind = GS_FLIGHT_FAILED },
		{ .ts_ns = 6000,
		  .entry_ts_ns = 6000,
		  .ptr = 0xb000,
		  .size = 4 * MiB,
		  .tid = 7,
		  .api = free_id,
		  .kind = GS_FLIGHT_FREE },
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++)
		if (gs_flight_recorder__add(g->fr, NO_PID, &ev[i]))
			return false;
	g->stats[GS_STAT_RINGBUF_FULL] = 5;
	return true;
}

static int rig_write(struct rig *g, bool perfetto)
{
	struct gs_leak_trigger t = { .kind = "cuda-oom", .pid = NO_PID };
	struct gs_flight_trace ft = { .fr = g->fr,
				      .pid = NO_PID,
				      .now_ns = 7000,
				      .outstanding_now = 10 * MiB,
				      .trigger = &t,
				      .stacks = g->stacks,
				      .symcache = g->symcache,
				      .perfetto = perfetto,
				      .stats = g->stats,
				      .window_lost = 3,
				      .window_start_ns = 500 };
	FILE *f = open_memstream(&g->text, &g->len);
	int err;

	if (!f)
		return -1;
	err = gs_flight_trace__write(f, &ft);
	fclose(f);
	return err;
}

static void rig_close(struct rig *g)
{
	gs_flight_recorder__free(g->fr);
	gs_stack_table__free(g->stacks);
	gs_symcache__free(g->symcache);
	free(g->text);
}

GS_TEST(a_window_is_records_rows_counted_from_what_it_held_before)
{
	struct rig g;

	if (!GS_EXPECT(rig_open(&g)) || !GS_EXPECT_EQ(rig_write(&g, false), 0)) {
		rig_close(&g);
		return;
	}
	/* the engine's slices: record's category, the failure named, the allocation's stack */
	GS_EXPECT_EQ(count(g.text, g.len, "\"ph\":\"X\""), 4);
	GS_EXPECT_EQ(count(g.text, g.len, "\"cat\":\"cuda_runtime\""), 4);
	GS_EXPECT_EQ(count(g.text, g.len, "\"name\":\"cudaMalloc\""), 2);
	GS_EXPECT_EQ(count(g.text, g.len, "\"error_name\":\"cudaErrorMemoryAllocation\""), 1);
	GS_EXPECT_EQ(count(g.text, g.len, "\"stack\":[\"0x1000\",\"0x2000\"]"), 2);
	/* CUDA memory from 11 MiB at the window's start: 10, 14, 10 MiB */
	GS_EXPECT_EQ(count(g.text, g.len, "\"name\":\"CUDA memory\""), 3);
	GS_EXPECT_EQ(count(g.text, g.len, "\"bytes\":10485760}"), 2);
	GS_EXPECT_EQ(count(g.text, g.len, "\"bytes\":14680064}"), 1);
	/* the trigger; the process and its thread named once */
	GS_EXPECT_EQ(count(g.text, g.len, "\"name\":\"cuda-oom\",\"cat\":\"trigger\""), 1);
	GS_EXPECT_EQ(count(g.text, g.len, "\"process_name\""), 1);
	GS_EXPECT_EQ(count(g.text, g.len, "\"thread_name\""), 2); /* tid 7, and the pid's own */
	/* the metadata: the window's calls and what it may miss */
	GS_EXPECT_EQ(count(g.text, g.len, "\"events\":4,\"rows\":8"), 1);
	GS_EXPECT_EQ(count(g.text, g.len, "\"ringbuf_full\":5"), 1);
	GS_EXPECT_EQ(count(g.text, g.len, "\"window_lost_events\":3"), 1);
	GS_EXPECT_EQ(count(g.text, g.len, "\"window_start_ns\":500"), 1);
	rig_close(&g);
}

GS_TEST(a_window_in_perfetto_is_trace_packets_with_the_same_names)
{
	struct rig g;

	if (!GS_EXPECT(rig_open(&g)) || !GS_EXPECT_EQ(rig_write(&g, true), 0)) {
		rig_close(&g);
		return;
	}
	GS_EXPECT(g.len > 0);
	GS_EXPECT_EQ((unsigned char)g.text[0], 0x0a); /* Trace.packet, field 1, length-delimited */
	GS_EXPECT_EQ(count(g.text, g.len, "\"traceEvents\""), 0);
	/* interned names appear once each */
	GS_EXPECT_EQ(count(g.text, g.len, "cudaMalloc"), 1);
	GS_EXPECT(count(g.text, g.len, "cuda-oom") >= 1);
	rig_close(&g);
}

GS_TEST_MAIN(a_window_is_records_rows_counted_from_what_it_held_before,
	     a_window_in_perfetto_is_trace_packets_with_the_same_names)
