// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_alloc_table.c: the allocation tracker against a plain array under random churn. */
#include <stdint.h>
#include "tests/unit/harness.h"
#include "user/alloc_table.h"

#define DEV_BASE  0x7f2a00000000ULL /* device pointers look like this and are 512-aligned */
#define DEV_ALIGN 512

static struct gs_alloc alloc_of(uint64_t ptr, uint64_t size, uint32_t stack_id)
{
	return (struct gs_alloc){
		.ptr = ptr, .size = size, .ts_ns = ptr ^ size, .stack_id = stack_id, .api = 3
	};
}

static bool insert(struct gs_alloc_table *t, uint64_t ptr, uint64_t size, uint32_t stack_id)
{
	struct gs_alloc a = alloc_of(ptr, size, stack_id);
	bool replaced = true;

	GS_EXPECT_EQ(gs_alloc_table__insert(t, &a, &replaced), 0);
	return replaced;
}

GS_TEST(insert_remove_contains)
{
	struct gs_alloc_table *t = gs_alloc_table__new();
	struct gs_alloc out;

	if (!GS_EXPECT(t))
		return;
	GS_EXPECT_EQ(gs_alloc_table__count(t), 0);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 0);
	GS_EXPECT(!gs_alloc_table__contains(t, DEV_BASE));

	GS_EXPECT(!insert(t, DEV_BASE, 1 << 20, 7));
	GS_EXPECT(!insert(t, DEV_BASE + DEV_ALIGN, 4096, 8));
	GS_EXPECT(!insert(t, 0, 16, 9)); /* ptr 0 is a key like any other */
	GS_EXPECT_EQ(gs_alloc_table__count(t), 3);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), (1 << 20) + 4096 + 16);
	GS_EXPECT(gs_alloc_table__contains(t, DEV_BASE));
	GS_EXPECT(gs_alloc_table__contains(t, DEV_BASE + DEV_ALIGN));
	GS_EXPECT(gs_alloc_table__contains(t, 0));
	GS_EXPECT(!gs_alloc_table__contains(t, DEV_BASE + 2 * DEV_ALIGN));

	memset(&out, 0xa5, sizeof(out));
	if (GS_EXPECT(gs_alloc_table__remove(t, DEV_BASE, &out))) {
		GS_EXPECT_EQ(out.ptr, DEV_BASE);
		GS_EXPECT_EQ(out.size, 1 << 20);
		GS_EXPECT_EQ(out.ts_ns, DEV_BASE ^ (1 << 20));
		GS_EXPECT_EQ(out.stack_id, 7);
		GS_EXPECT_EQ(out.api, 3);
	}
	GS_EXPECT(!gs_alloc_table__contains(t, DEV_BASE));
	GS_EXPECT_EQ(gs_alloc_table__count(t), 2);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 4096 + 16);

	/* unknown and already removed pointers; out is left alone */
	memset(&out, 0xa5, sizeof(out));
	GS_EXPECT(!gs_alloc_table__remove(t, DEV_BASE, &out));
	GS_EXPECT(!gs_alloc_table__remove(t, DEV_BASE + 99 * DEV_ALIGN, NULL));
	GS_EXPECT_EQ(out.ptr, 0xa5a5a5a5a5a5a5a5ULL);
	GS_EXPECT_EQ(gs_alloc_table__count(t), 2);

	GS_EXPECT(gs_alloc_table__remove(t, 0, NULL));
	GS_EXPECT(gs_alloc_table__remove(t, DEV_BASE + DEV_ALIGN, NULL));
	GS_EXPECT_EQ(gs_alloc_table__count(t), 0);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 0);
	gs_alloc_table__free(t);
	gs_alloc_table__free(NULL);
}

GS_TEST(insert_existing_replaces)
{
	struct gs_alloc_table *t = gs_alloc_table__new();
	struct gs_alloc out;

	if (!GS_EXPECT(t))
		return;
	GS_EXPECT(!insert(t, DEV_BASE, 1000, 1));
	GS_EXPECT(!insert(t, DEV_BASE + DEV_ALIGN, 24, 2));
	/* the free of DEV_BASE was missed: the new entry replaces the old */
	GS_EXPECT(insert(t, DEV_BASE, 300, 5));
	GS_EXPECT_EQ(gs_alloc_table__count(t), 2);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 324);
	if (GS_EXPECT(gs_alloc_table__remove(t, DEV_BASE, &out))) {
		GS_EXPECT_EQ(out.size, 300);
		GS_EXPECT_EQ(out.stack_id, 5);
	}
	GS_EXPECT(!gs_alloc_table__contains(t, DEV_BASE));
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 24);
	gs_alloc_table__free(t);
}

/* Visits every slot; returns the entries seen and adds their sizes to *bytes. */
static size_t walk(const struct gs_alloc_table *t, uint64_t *bytes)
{
	size_t n = 0;

	*bytes = 0;
	for (size_t i = 0; i < gs_alloc_table__slots(t); i++) {
		const struct gs_alloc *a = gs_alloc_table__at(t, i);

		if (a) {
			n++;
			*bytes += a->size;
		}
	}
	return n;
}

GS_TEST(iterate_and_clear)
{
	struct gs_alloc_table *t = gs_alloc_table__new();
	uint64_t bytes, want = 0;
	size_t seen;

	if (!GS_EXPECT(t))
		return;
	/* enough to grow past the initial slots */
	for (uint64_t i = 0; i < 1000; i++) {
		insert(t, DEV_BASE + i * DEV_ALIGN, i + 1, (uint32_t)i);
		want += i + 1;
	}
	GS_EXPECT_EQ(gs_alloc_table__count(t), 1000);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), want);
	GS_EXPECT(gs_alloc_table__slots(t) >= 1000);
	seen = walk(t, &bytes);
	GS_EXPECT_EQ(seen, 1000);
	GS_EXPECT_EQ(bytes, want);
	GS_EXPECT(gs_alloc_table__at(t, gs_alloc_table__slots(t)) == NULL);
	GS_EXPECT(gs_alloc_table__at(t, SIZE_MAX) == NULL);

	gs_alloc_table__clear(t);
	GS_EXPECT_EQ(gs_alloc_table__count(t), 0);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 0);
	GS_EXPECT_EQ(walk(t, &bytes), 0);
	GS_EXPECT(!gs_alloc_table__contains(t, DEV_BASE));
	/* usable after clear */
	GS_EXPECT(!insert(t, DEV_BASE, 5, 0));
	GS_EXPECT_EQ(gs_alloc_table__count(t), 1);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 5);
	gs_alloc_table__free(t);
}

/* xorshift64*: fixed seed, same sequence on every run */
static uint64_t next_rand(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

#define STRESS_PTRS 50000
#define STRESS_OPS  200000

/* Spread over a wide range like a real device heap, with runs of neighbours; one-to-one. */
static uint64_t stress_ptr(size_t idx)
{
	return DEV_BASE + (uint64_t)idx * DEV_ALIGN * ((idx & 1) ? 1 : 4099);
}

GS_TEST(random_stress)
{
	struct gs_alloc_table *t = gs_alloc_table__new();
	static uint64_t sizes[STRESS_PTRS]; /* reference: 0 = not allocated */
	uint64_t state = 0x9e3779b97f4a7c15ULL, ref_bytes = 0, bytes;
	size_t ref_count = 0, bad = 0;

	if (!GS_EXPECT(t))
		return;
	memset(sizes, 0, sizeof(sizes));
	for (int op = 0; op < STRESS_OPS && bad < 10; op++) {
		uint64_t r = next_rand(&state);
		size_t idx = (size_t)(r % STRESS_PTRS);
		uint64_t ptr = stress_ptr(idx);
		unsigned int kind = (unsigned int)((r >> 32) % 8);
		struct gs_alloc out;
		bool ok = true;

		if (kind < 4) {
			uint64_t size = ((r >> 40) % (64 << 20)) + 1;
			bool replaced = insert(t, ptr, size, (uint32_t)op);

			ok &= GS_EXPECT_EQ(replaced, sizes[idx] != 0);
			if (sizes[idx]) {
				ref_bytes -= sizes[idx];
				ref_count--;
			}
			sizes[idx] = size;
			ref_bytes += size;
			ref_count++;
		} else if (kind < 7) {
			bool found = gs_alloc_table__remove(t, ptr, &out);

			ok &= GS_EXPECT_EQ(found, sizes[idx] != 0);
			if (found && sizes[idx])
				ok &= GS_EXPECT_EQ(out.ptr, ptr) &&
				      GS_EXPECT_EQ(out.size, sizes[idx]);
			if (sizes[idx]) {
				ref_bytes -= sizes[idx];
				ref_count--;
				sizes[idx] = 0;
			}
		} else {
			ok &= GS_EXPECT_EQ(gs_alloc_table__contains(t, ptr), sizes[idx] != 0);
		}
		ok &= GS_EXPECT_EQ(gs_alloc_table__count(t), ref_count);
		ok &= GS_EXPECT_EQ(gs_alloc_table__bytes(t), ref_bytes);
		if (!ok) {
			printf("  at operation %d, pointer %#llx\n", op, (unsigned long long)ptr);
			bad++;
		}
	}
	GS_EXPECT(ref_count > 1000);

	/* every entry found, and lookups agree with the reference for all pointers */
	for (size_t idx = 0; idx < STRESS_PTRS && bad < 10; idx++)
		if (!GS_EXPECT_EQ(gs_alloc_table__contains(t, stress_ptr(idx)), sizes[idx] != 0))
			bad++;
	GS_EXPECT_EQ(walk(t, &bytes), ref_count);
	GS_EXPECT_EQ(bytes, ref_bytes);

	/* drain: every remaining entry comes out exactly once */
	for (size_t idx = 0; idx < STRESS_PTRS && bad < 10; idx++)
		if (sizes[idx] && !GS_EXPECT(gs_alloc_table__remove(t, stress_ptr(idx), NULL)))
			bad++;
	GS_EXPECT_EQ(gs_alloc_table__count(t), 0);
	GS_EXPECT_EQ(gs_alloc_table__bytes(t), 0);
	GS_EXPECT_EQ(walk(t, &bytes), 0);
	gs_alloc_table__free(t);
}

GS_TEST_MAIN(insert_remove_contains, insert_existing_replaces, iterate_and_clear, random_stress)
