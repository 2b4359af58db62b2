// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_stack_table.c: interning user stacks by (pid, frames) and symbolizing them once. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/stack_table.h"
#include "user/symcache.h"

/* above PID_MAX_LIMIT (4194304), so never a live process: nothing to symbolize, fast */
#define NO_PID 0x7ffffff0

__attribute__((noinline)) int stack_leaf(void);
__attribute__((noinline)) int stack_leaf(void)
{
	__asm__ volatile("" ::: "memory");
	return getpid() == 0 ? 1 : 3;
}

__attribute__((noinline)) int stack_caller(void);
__attribute__((noinline)) int stack_caller(void)
{
	__asm__ volatile("" ::: "memory");
	return stack_leaf() + 1;
}

GS_TEST(same_stack_same_id)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *t = cache ? gs_stack_table__new(cache) : NULL;
	uint64_t a[] = { 0x1000, 0x2000, 0x3000 }, b[] = { 0x1000, 0x2000, 0x3000 };
	int64_t id, id2;

	if (!GS_EXPECT(t))
		goto out;
	GS_EXPECT_EQ(gs_stack_table__size(t), 0);
	id = gs_stack_table__intern(t, NO_PID, a, 3);
	GS_EXPECT(id >= 0);
	/* equal contents at another address */
	id2 = gs_stack_table__intern(t, NO_PID, b, 3);
	GS_EXPECT_EQ(id2, id);
	GS_EXPECT_EQ(gs_stack_table__size(t), 1);
out:
	gs_stack_table__free(t);
	gs_symcache__free(cache);
}

GS_TEST(different_stacks_different_ids)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *t = cache ? gs_stack_table__new(cache) : NULL;
	uint64_t a[] = { 0x1000, 0x2000, 0x3000 };
	uint64_t other_frame[] = { 0x1000, 0x2001, 0x3000 };
	uint64_t swapped[] = { 0x2000, 0x1000, 0x3000 };
	int64_t ids[7];

	if (!GS_EXPECT(t))
		goto out;
	ids[0] = gs_stack_table__intern(t, NO_PID, a, 3);
	ids[1] = gs_stack_table__intern(t, NO_PID - 1, a, 3); /* another pid */
	ids[2] = gs_stack_table__intern(t, NO_PID, other_frame, 3);
	ids[3] = gs_stack_table__intern(t, NO_PID, swapped, 3);
	ids[4] = gs_stack_table__intern(t, NO_PID, a, 2); /* a prefix */
	ids[5] = gs_stack_table__intern(t, NO_PID, a, 1);
	ids[6] = gs_stack_table__intern(t, NO_PID, a, 0); /* no frames at all */
	for (int i = 0; i < 7; i++) {
		GS_EXPECT(ids[i] >= 0);
		for (int j = 0; j < i; j++)
			GS_EXPECT(ids[i] != ids[j]);
	}
	GS_EXPECT_EQ(gs_stack_table__size(t), 7);
	GS_EXPECT_EQ(gs_stack_table__intern(t, NO_PID - 1, a, 3), ids[1]);
	GS_EXPECT_EQ(gs_stack_table__intern(t, NO_PID, a, 0), ids[6]);
	GS_EXPECT_EQ(gs_stack_table__size(t), 7);
	GS_EXPECT(gs_stack_table__get(t, 7) == NULL);
	GS_EXPECT(gs_stack_table__get(t, UINT32_MAX) == NULL);
out:
	gs_stack_table__free(t);
	gs_symcache__free(cache);
}

#define NR_STACKS 5000
#define MAX_DEPTH 8

static uint32_t depth_of(uint32_t i)
{
	return i % MAX_DEPTH + 1;
}

static void fill_stack(uint32_t i, uint64_t *addrs)
{
	for (uint32_t k = 0; k < depth_of(i); k++)
		addrs[k] = 0x400000 + (uint64_t)i * 0x1000 + k * 0x10;
}

GS_TEST(many_stacks)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *t = cache ? gs_stack_table__new(cache) : NULL;
	uint64_t addrs[MAX_DEPTH];
	static int64_t ids[NR_STACKS];
	size_t bad = 0;

	if (!GS_EXPECT(t))
		goto out;
	/* past the initial 256 stacks and 1024 buckets, several times over */
	for (uint32_t i = 0; i < NR_STACKS; i++) {
		fill_stack(i, addrs);
		ids[i] = gs_stack_table__intern(t, NO_PID, addrs, depth_of(i));
		if (!GS_EXPECT_EQ(ids[i], i) && ++bad > 10)
			goto out;
	}
	GS_EXPECT_EQ(gs_stack_table__size(t), NR_STACKS);
	for (uint32_t i = 0; i < NR_STACKS && bad < 10; i++) {
		const struct gs_stack *s = gs_stack_table__get(t, (uint32_t)ids[i]);
		bool ok;

		fill_stack(i, addrs);
		ok = GS_EXPECT(s) && GS_EXPECT_EQ(s->pid, NO_PID) &&
		     GS_EXPECT_EQ(s->nr_frames, depth_of(i)) &&
		     GS_EXPECT(!memcmp(s->addrs, addrs, depth_of(i) * sizeof(addrs[0])));
		for (uint32_t k = 0; ok && k < s->nr_frames; k++) {
			ok &= GS_EXPECT_EQ(s->frames[k].address, addrs[k]);
			ok &= GS_EXPECT_STR_EQ(s->frames[k].symbol, NULL);
		}
		/* interning again after growth finds the same id */
		ok = ok &&
		     GS_EXPECT_EQ(gs_stack_table__intern(t, NO_PID, addrs, depth_of(i)), ids[i]);
		if (!ok)
			bad++;
	}
	GS_EXPECT_EQ(gs_stack_table__size(t), NR_STACKS);
out:
	gs_stack_table__free(t);
	gs_symcache__free(cache);
}

GS_TEST(frames_symbolized)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *t = cache ? gs_stack_table__new(cache) : NULL;
	/* return addresses: one past a call lands inside the caller */
	uint64_t addrs[] = { (uint64_t)(uintptr_t)&stack_leaf + 1,
			     (uint64_t)(uintptr_t)&stack_caller + 5, 8 };
	const struct gs_stack *s;
	char exe[PATH_MAX];
	int64_t id;

	if (!GS_EXPECT(t))
		goto out;
	GS_EXPECT(realpath("/proc/self/exe", exe) != NULL);
	id = gs_stack_table__intern(t, getpid(), addrs, 3);
	if (!GS_EXPECT(id >= 0))
		goto out;
	s = gs_stack_table__get(t, (uint32_t)id);
	if (!GS_EXPECT(s) || !GS_EXPECT_EQ(s->nr_frames, 3))
		goto out;
	GS_EXPECT_EQ(s->pid, getpid());

	/* looked up at addr-1, reported as an offset from the symbol to addr */
	GS_EXPECT_EQ(s->frames[0].address, addrs[0]);
	GS_EXPECT_STR_EQ(s->frames[0].symbol, "stack_leaf");
	GS_EXPECT_STR_EQ(s->frames[0].module, exe);
	GS_EXPECT_EQ(s->frames[0].offset, 1);

	GS_EXPECT_EQ(s->frames[1].address, addrs[1]);
	GS_EXPECT_STR_EQ(s->frames[1].symbol, "stack_caller");
	GS_EXPECT_EQ(s->frames[1].offset, 5);

	/* an unmapped frame stays unnamed */
	GS_EXPECT_EQ(s->frames[2].address, 8);
	GS_EXPECT_STR_EQ(s->frames[2].symbol, NULL);
	GS_EXPECT_STR_EQ(s->frames[2].module, NULL);

	/* the frames are the table's copies: they outlive the symcache's snapshot */
	gs_symcache__forget(cache, getpid());
	GS_EXPECT_STR_EQ(s->frames[0].module, exe);
	GS_EXPECT_EQ(gs_stack_table__intern(t, getpid(), addrs, 3), id);
out:
	gs_stack_table__free(t);
	gs_symcache__free(cache);
}

/* What free_null runs in a child: NULL, then a table holding a forgotten and a live pid. */
static void free_tables(void)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *t = cache ? gs_stack_table__new(cache) : NULL;
	uint64_t a[] = { 0x1000, 0x2000 };

	gs_stack_table__free(NULL);
	if (!t || gs_stack_table__intern(t, NO_PID, a, 2) < 0 ||
	    gs_stack_table__intern(t, NO_PID - 1, a, 2) < 0)
		_exit(2);
	gs_stack_table__forget(t, NO_PID);
	gs_stack_table__free(t);
	gs_symcache__free(cache);
	_exit(0);
}

/* __free accepts NULL (every caller's error path relies on it): a crash would fail here */
GS_TEST(free_null)
{
	pid_t child;
	int status = -1;

	fflush(stdout);
	child = fork();
	if (child == 0)
		free_tables();
	if (!GS_EXPECT(child > 0))
		return;
	GS_EXPECT_EQ(waitpid(child, &status, 0), child);
	GS_EXPECT(WIFEXITED(status));
	GS_EXPECT_EQ(WEXITSTATUS(status), 0);
}

GS_TEST(forgotten_process_gives_its_ids_back)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *t = cache ? gs_stack_table__new(cache) : NULL;
	uint64_t a[] = { 0x1000, 0x2000 }, b[] = { 0x3000 }, c[] = { 0x4000, 0x5000, 0x6000 };
	int64_t gone_a, gone_b, kept, reused, again;

	if (!GS_EXPECT(t))
		goto out;
	gone_a = gs_stack_table__intern(t, NO_PID, a, 2);
	kept = gs_stack_table__intern(t, NO_PID - 1, a, 2);
	gone_b = gs_stack_table__intern(t, NO_PID, b, 1);
	GS_EXPECT_EQ(gs_stack_table__size(t), 3);
	gs_stack_table__forget(t, NO_PID);
	GS_EXPECT_EQ(gs_stack_table__size(t), 1);
	GS_EXPECT(gs_stack_table__get(t, (uint32_t)gone_a) == NULL);
	GS_EXPECT(gs_stack_table__get(t, (uint32_t)gone_b) == NULL);
	/* the other process's stack is still found, under its id */
	GS_EXPECT_EQ(gs_stack_table__intern(t, NO_PID - 1, a, 2), kept);
	/* a new stack takes a freed id; the same frames of the gone pid are a new stack too */
	reused = gs_stack_table__intern(t, NO_PID - 2, c, 3);
	GS_EXPECT(reused == gone_a || reused == gone_b);
	again = gs_stack_table__intern(t, NO_PID, a, 2);
	GS_EXPECT(again == gone_a || again == gone_b);
	GS_EXPECT(again != reused);
	GS_EXPECT_EQ(gs_stack_table__size(t), 3);
	GS_EXPECT_EQ(gs_stack_table__get(t, (uint32_t)reused)->nr_frames, 3);
	GS_EXPECT_EQ(gs_stack_table__intern(t, NO_PID - 2, c, 3), reused);
out:
	gs_stack_table__free(t);
	gs_symcache__free(cache);
}

/* past the per-process cap, new stacks share the process's "[other stacks]" id */
GS_TEST(per_process_cap_folds_into_other_stacks)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *t = cache ? gs_stack_table__new(cache) : NULL;
	uint64_t a[2] = { 0, 0x5000 };
	int64_t id, other = -1, first;
	const struct gs_stack *s;

	if (!GS_EXPECT(t))
		goto out;
	gs_stack_table__set_max_per_process(t, 100);
	for (uint64_t i = 0; i < 150; i++) {
		a[0] = 0x1000 + i;
		id = gs_stack_table__intern(t, NO_PID, a, 2);
		if (i == 100)
			other = id;
		else if (i > 100)
			GS_EXPECT_EQ(id, other);
	}
	GS_EXPECT_EQ(gs_stack_table__size(t), 101);
	GS_EXPECT_EQ(gs_stack_table__folded(t), 50);
	s = gs_stack_table__get(t, (uint32_t)other);
	if (GS_EXPECT(s) && GS_EXPECT_EQ(s->nr_frames, 1)) {
		GS_EXPECT_EQ(s->frames[0].kind, GS_FRAME_MARKER);
		GS_EXPECT_STR_EQ(s->frames[0].symbol, GS_STACK_OTHER_NAME);
	}
	/* a kept stack keeps its id; another process has its own room */
	a[0] = 0x1000;
	first = gs_stack_table__intern(t, NO_PID, a, 2);
	GS_EXPECT(first != other);
	GS_EXPECT(gs_stack_table__intern(t, NO_PID - 1, (uint64_t[]){ 0x9999 }, 1) != other);
	/* forgetting the process gives its room back */
	gs_stack_table__forget(t, NO_PID);
	GS_EXPECT_EQ(gs_stack_table__size(t), 1);
	a[0] = 0x7777;
	id = gs_stack_table__intern(t, NO_PID, a, 2);
	s = gs_stack_table__get(t, (uint32_t)id);
	GS_EXPECT(s && !s->other);
out:
	gs_stack_table__free(t);
	gs_symcache__free(cache);
}

GS_TEST_MAIN(per_process_cap_folds_into_other_stacks, same_stack_same_id,
	     different_stacks_different_ids, many_stacks, frames_symbolized, free_null,
	     forgotten_process_gives_its_ids_back)
