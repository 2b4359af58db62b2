// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_fail_groups.c: failure groups found by hash, capped per process, the rest folded. */
#include <stdint.h>
#include <time.h>
#include "profilers/fail_groups.h"
#include "profilers/mem_accounting.h"
#include "tests/unit/harness.h"
#include "user/stack_table.h"
#include "user/symcache.h"

#define NO_PID 0x7ffffff0 /* never a live process: nothing to symbolize */

static const struct gs_fail_group *group_of(const struct gs_fail_groups *g, uint32_t stack_id)
{
	for (size_t i = 0; i < g->nr; i++)
		if (g->items[i].stack_id == stack_id)
			return &g->items[i];
	return NULL;
}

GS_TEST(same_key_counts_in_one_group)
{
	struct gs_fail_groups g = { 0 };

	for (int i = 0; i < 5; i++)
		GS_EXPECT_EQ(gs_fail_groups__add(&g, 7, 1, 2, 100), 0);
	GS_EXPECT_EQ(gs_fail_groups__add(&g, 7, 1, 3, 10), 0); /* another error */
	GS_EXPECT_EQ(gs_fail_groups__add(&g, 8, 1, 2, 10), 0); /* another stack */
	GS_EXPECT_EQ(g.nr, 3);
	GS_EXPECT_EQ(g.items[0].count, 5);
	GS_EXPECT_EQ(g.items[0].bytes_requested, 500);
	GS_EXPECT_EQ(g.folded, 0);
	gs_fail_groups__release(&g);
}

GS_TEST(past_the_cap_folded_with_exact_counts)
{
	struct gs_fail_groups g = { 0 };
	const struct gs_fail_group *other;

	for (uint32_t i = 0; i < GS_FAIL_GROUPS_MAX + 500; i++)
		GS_EXPECT_EQ(gs_fail_groups__add(&g, i, 1, 2, 1), 0);
	/* a kept group still counts in its own */
	GS_EXPECT_EQ(gs_fail_groups__add(&g, 3, 1, 2, 1), 0);
	GS_EXPECT_EQ(g.nr, GS_FAIL_GROUPS_MAX + 1);
	other = group_of(&g, GS_FAIL_OTHER_STACK);
	if (GS_EXPECT(other)) {
		GS_EXPECT_EQ(other->count, 500);
		GS_EXPECT_EQ(other->bytes_requested, 500);
	}
	GS_EXPECT_EQ(g.folded, 500);
	GS_EXPECT_EQ(group_of(&g, 3)->count, 2);
	gs_fail_groups__release(&g);
}

GS_TEST(sort_keeps_lookups_right)
{
	struct gs_fail_groups g = { .max = 4 };

	for (uint32_t i = 0; i < 10; i++)
		for (uint32_t k = 0; k <= i; k++)
			gs_fail_groups__add(&g, i, 0, 2, 0);
	gs_fail_groups__sort(&g);
	GS_EXPECT_EQ(g.nr, 5);
	GS_EXPECT_EQ(g.items[0].stack_id, 3); /* 4 failures: the most of the kept ones */
	GS_EXPECT_EQ(g.items[4].stack_id, GS_FAIL_OTHER_STACK); /* folded last */
	GS_EXPECT_EQ(g.items[4].count, 5 + 6 + 7 + 8 + 9 + 10);
	/* after the sort, adds still find their group */
	gs_fail_groups__add(&g, 0, 0, 2, 0);
	gs_fail_groups__add(&g, 99, 0, 2, 0);
	GS_EXPECT_EQ(g.nr, 5);
	GS_EXPECT_EQ(group_of(&g, 0)->count, 2);
	GS_EXPECT_EQ(group_of(&g, GS_FAIL_OTHER_STACK)->count, 46);
	gs_fail_groups__release(&g);
}

/* 200,000 distinct failing call sites: bounded groups, in linear time (a scan is quadratic) */
GS_TEST(flood_of_call_sites_is_bounded_and_fast)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *st = cache ? gs_stack_table__new(cache) : NULL;
	struct gs_mem_accounting a;
	struct gs_mem_alloc e = {
		.hdr = { .pid = NO_PID }, .api = 1, .ret = 2, .size = 8, .nr_frames = 2
	};
	struct timespec t0, t1;
	struct gs_mem_proc *p;

	if (!GS_EXPECT(st))
		goto out;
	gs_mem_accounting__init(&a, st);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < 200000; i++) {
		e.frames[0] = 0x10000 + i * 16;
		e.frames[1] = 0x400000;
		GS_EXPECT_EQ(gs_mem_accounting__alloc(&a, &e, NULL), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	p = gs_mem_accounting__find(&a, NO_PID);
	if (GS_EXPECT(p)) {
		GS_EXPECT_EQ(p->failed_allocations, 200000);
		GS_EXPECT(p->fails.nr <= GS_FAIL_GROUPS_MAX + 1);
	}
	GS_EXPECT(gs_stack_table__size(st) <= GS_STACK_TABLE_MAX_PER_PROCESS + 1);
	GS_EXPECT((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec) < 5e9);
	gs_mem_accounting__release(&a);
out:
	gs_stack_table__free(st);
	gs_symcache__free(cache);
}

GS_TEST_MAIN(same_key_counts_in_one_group, past_the_cap_folded_with_exact_counts,
	     sort_keeps_lookups_right, flood_of_call_sites_is_bounded_and_fast)
