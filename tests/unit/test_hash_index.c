// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_hash_index.c: the open-addressing index of user/, and the pid index built on it. */
#include <errno.h>
#include <stdlib.h>
#include "tests/unit/harness.h"
#include "user/addr_map.h"
#include "user/hash_index.h"
#include "user/pid_index.h"

#define N 5000

static bool key_is(const void *ctx, size_t pos)
{
	const uint32_t *want = ctx;

	return pos < N && *want == (uint32_t)(pos * 7);
}

GS_TEST(empty_index_finds_nothing)
{
	struct gs_hash_index x = { 0 };
	size_t pos = 99;

	GS_EXPECT(!gs_hash_index__find(&x, gs_hash_u64(1), NULL, NULL, &pos));
	GS_EXPECT(!gs_hash_index__remove(&x, gs_hash_u64(1), 0));
	GS_EXPECT(!gs_hash_index__move(&x, gs_hash_u64(1), 0, 1));
	GS_EXPECT_EQ(pos, 99);
	gs_hash_index__release(&x);
}

GS_TEST(equal_hashes_are_told_apart_by_match)
{
	struct gs_hash_index x = { 0 };
	uint32_t k;
	size_t pos;

	/* one hash for three keys: only match tells them apart */
	for (size_t i = 0; i < 3; i++)
		GS_EXPECT_EQ(gs_hash_index__add(&x, 42, i), 0);
	for (size_t i = 0; i < 3; i++) {
		k = (uint32_t)(i * 7);
		GS_EXPECT(gs_hash_index__find(&x, 42, key_is, &k, &pos));
		GS_EXPECT_EQ(pos, i);
	}
	k = 8;
	GS_EXPECT(!gs_hash_index__find(&x, 42, key_is, &k, &pos));
	GS_EXPECT(gs_hash_index__remove(&x, 42, 1));
	k = 7;
	GS_EXPECT(!gs_hash_index__find(&x, 42, key_is, &k, &pos));
	k = 14;
	GS_EXPECT(gs_hash_index__find(&x, 42, key_is, &k, &pos));
	GS_EXPECT_EQ(pos, 2);
	GS_EXPECT_EQ(x.nr, 2);
	gs_hash_index__release(&x);
}

/* hashes sharing their low bits all start at one slot: deletion must keep the run whole */
GS_TEST(one_long_probe_run_survives_deletions)
{
	struct gs_hash_index x = { 0 };
	size_t pos;

	for (size_t i = 0; i < 200; i++)
		GS_EXPECT_EQ(gs_hash_index__add(&x, (uint64_t)i << 40, i), 0);
	for (size_t i = 0; i < 200; i += 3)
		GS_EXPECT(gs_hash_index__remove(&x, (uint64_t)i << 40, i));
	for (size_t i = 0; i < 200; i++) {
		bool found = gs_hash_index__find(&x, (uint64_t)i << 40, NULL, NULL, &pos);

		GS_EXPECT_EQ(found, i % 3 != 0);
		if (found)
			GS_EXPECT_EQ(pos, i);
	}
	gs_hash_index__release(&x);
}

GS_TEST(clear_keeps_the_slots)
{
	struct gs_hash_index x = { 0 };
	size_t cap, pos;

	for (size_t i = 0; i < 100; i++)
		gs_hash_index__add(&x, gs_hash_u64(i), i);
	cap = x.cap;
	gs_hash_index__clear(&x);
	GS_EXPECT_EQ(x.nr, 0);
	GS_EXPECT_EQ(x.cap, cap);
	GS_EXPECT(!gs_hash_index__find(&x, gs_hash_u64(5), NULL, NULL, &pos));
	GS_EXPECT_EQ(gs_hash_index__add(&x, gs_hash_u64(5), 77), 0);
	GS_EXPECT(gs_hash_index__find(&x, gs_hash_u64(5), NULL, NULL, &pos));
	GS_EXPECT_EQ(pos, 77);
	GS_EXPECT_EQ(x.cap, cap);
	gs_hash_index__release(&x);
}

GS_TEST(hash_of_one_value_is_a_bijection_on_a_sample)
{
	/* distinct inputs, distinct outputs: pid_index relies on it to skip key compares */
	static uint64_t seen[N];

	for (size_t i = 0; i < N; i++) {
		seen[i] = gs_hash_u64(i);
		for (size_t j = 0; j < i; j++)
			if (seen[j] == seen[i])
				GS_EXPECT(false);
	}
	GS_EXPECT(gs_hash_combine(1, 2) != gs_hash_combine(2, 1));
}

/* the pid index against a plain array model: inserts, moves, removals, regrowth */
GS_TEST(pid_index_follows_a_model)
{
	static long model[N]; /* pid -> pos, -1: absent */
	struct gs_pid_index x = { 0 };
	unsigned int seed = 7;
	size_t pos;

	for (size_t i = 0; i < N; i++)
		model[i] = -1;
	for (int step = 0; step < 40000; step++) {
		pid_t pid = (pid_t)(rand_r(&seed) % N);
		int op = rand_r(&seed) % 3;

		if (op < 2) {
			size_t p = (size_t)rand_r(&seed) % 100000;

			GS_EXPECT_EQ(gs_pid_index__set(&x, pid, p), 0);
			model[pid] = (long)p;
		} else {
			gs_pid_index__remove(&x, pid);
			model[pid] = -1;
		}
	}
	for (pid_t pid = 0; pid < N; pid++) {
		bool found = gs_pid_index__get(&x, pid, &pos);

		GS_EXPECT_EQ(found, model[pid] >= 0);
		if (found)
			GS_EXPECT_EQ((long)pos, model[pid]);
	}
	/* pids are full ints: negative and huge ones are keys like any other */
	GS_EXPECT_EQ(gs_pid_index__set(&x, -5, 3), 0);
	GS_EXPECT_EQ(gs_pid_index__set(&x, 0x7fffffff, 4), 0);
	GS_EXPECT(gs_pid_index__get(&x, -5, &pos) && pos == 3);
	GS_EXPECT(gs_pid_index__get(&x, 0x7fffffff, &pos) && pos == 4);
	GS_EXPECT_EQ(gs_pid_index__set(&x, 1, (size_t)UINT32_MAX), -ENOMEM);
	gs_pid_index__release(&x);
	GS_EXPECT(!gs_pid_index__get(&x, -5, &pos));
}

static uint64_t dropped;

static void drop(uint64_t value)
{
	dropped += value;
}

/* (pid, key) pairs of several processes; one forgotten, the others all still found */
GS_TEST(addr_map_forgets_one_pid_and_keeps_the_rest)
{
	struct gs_addr_map *m = gs_addr_map__new();
	uint64_t v, want_dropped = 0;
	bool ok = true;

	GS_EXPECT(m != NULL);
	for (uint64_t k = 0; k < 3000; k++)
		for (pid_t pid = 1; pid <= 3; pid++)
			if (gs_addr_map__set(m, pid, k << 12, k * 10 + (uint64_t)pid))
				ok = false;
	GS_EXPECT_EQ(gs_addr_map__set(m, 2, 5 << 12, 7), 0); /* replaces */
	GS_EXPECT_EQ(gs_addr_map__count(m), 9000);
	for (uint64_t k = 0; k < 3000; k++)
		want_dropped += k == 5 ? 7 : k * 10 + 2;
	dropped = 0;
	gs_addr_map__forget_pid(m, 2, drop);
	GS_EXPECT_EQ(dropped, want_dropped);
	GS_EXPECT_EQ(gs_addr_map__count(m), 6000);
	for (uint64_t k = 0; k < 3000; k++) {
		if (gs_addr_map__get(m, 2, k << 12, &v))
			ok = false;
		for (pid_t pid = 1; pid <= 3; pid += 2)
			if (!gs_addr_map__get(m, pid, k << 12, &v) || v != k * 10 + (uint64_t)pid)
				ok = false;
	}
	GS_EXPECT(ok);
	gs_addr_map__forget_pid(m, 1, NULL);
	gs_addr_map__forget_pid(m, 3, NULL);
	GS_EXPECT_EQ(gs_addr_map__count(m), 0);
	gs_addr_map__free(m);
}

GS_TEST_MAIN(empty_index_finds_nothing, equal_hashes_are_told_apart_by_match,
	     one_long_probe_run_survives_deletions, clear_keeps_the_slots,
	     hash_of_one_value_is_a_bijection_on_a_sample, pid_index_follows_a_model,
	     addr_map_forgets_one_pid_and_keeps_the_rest)
