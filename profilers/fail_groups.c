// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fail_groups.c: hashed, capped failure groups; the rest folded into "[other failures]". */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/fail_groups.h"
#include "user/array.h"

static uint64_t hash_key(uint32_t stack_id, uint16_t api, int32_t ret)
{
	uint64_t h = ((uint64_t)stack_id << 32) ^ ((uint64_t)api << 16) ^ (uint32_t)ret;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static bool same_key(const struct gs_fail_group *x, uint32_t stack_id, uint16_t api, int32_t ret)
{
	return x->stack_id == stack_id && x->api == api && x->ret == ret;
}

static void insert_bucket(uint32_t *buckets, size_t nr_buckets, uint64_t hash, size_t pos)
{
	size_t i = hash & (nr_buckets - 1);

	while (buckets[i])
		i = (i + 1) & (nr_buckets - 1);
	buckets[i] = (uint32_t)pos + 1;
}

static int rehash(struct gs_fail_groups *g, size_t nr_buckets)
{
	uint32_t *buckets = calloc(nr_buckets, sizeof(*buckets));

	if (!buckets)
		return -ENOMEM;
	for (size_t i = 0; i < g->nr; i++) {
		const struct gs_fail_group *x = &g->items[i];

		insert_bucket(buckets, nr_buckets, hash_key(x->stack_id, x->api, x->ret), i);
	}
	free(g->buckets);
	g->buckets = buckets;
	g->nr_buckets = nr_buckets;
	return 0;
}

/* The group of this key, NULL when there is none yet. */
static struct gs_fail_group *find(const struct gs_fail_groups *g, uint32_t stack_id, uint16_t api,
				  int32_t ret)
{
	if (!g->nr_buckets)
		return NULL;
	for (size_t i = hash_key(stack_id, api, ret) & (g->nr_buckets - 1); g->buckets[i];
	     i = (i + 1) & (g->nr_buckets - 1))
		if (same_key(&g->items[g->buckets[i] - 1], stack_id, api, ret))
			return &g->items[g->buckets[i] - 1];
	return NULL;
}

static struct gs_fail_group *create(struct gs_fail_groups *g, uint32_t stack_id, uint16_t api,
				    int32_t ret)
{
	struct gs_fail_group *x;

	if ((g->nr + 1) * 2 > g->nr_buckets && rehash(g, g->nr_buckets ? g->nr_buckets * 2 : 16))
		return NULL;
	if (GS_ARRAY_RESERVE(g->items, g->nr, g->cap, 4))
		return NULL;
	x = &g->items[g->nr];
	*x = (struct gs_fail_group){ .stack_id = stack_id, .api = api, .ret = ret };
	insert_bucket(g->buckets, g->nr_buckets, hash_key(stack_id, api, ret), g->nr++);
	return x;
}

int gs_fail_groups__add(struct gs_fail_groups *g, uint32_t stack_id, uint16_t api, int32_t ret,
			uint64_t bytes)
{
	size_t max = g->max ? g->max : GS_FAIL_GROUPS_MAX;
	struct gs_fail_group *x;

	if (stack_id == GS_FAIL_OTHER_STACK)
		api = 0, ret = 0; /* only the folded group has this stack */
	x = find(g, stack_id, api, ret);
	if (!x) {
		/* the folded group itself is not one of the max */
		size_t kept = g->nr - (find(g, GS_FAIL_OTHER_STACK, 0, 0) ? 1 : 0);

		if (kept >= max) {
			stack_id = GS_FAIL_OTHER_STACK, api = 0, ret = 0;
			x = find(g, stack_id, api, ret);
		}
		if (!x)
			x = create(g, stack_id, api, ret);
		if (!x)
			return -ENOMEM;
	}
	if (x->stack_id == GS_FAIL_OTHER_STACK)
		g->folded++;
	x->count++;
	x->bytes_requested += bytes;
	return 0;
}

static int cmp_count(const void *a, const void *b)
{
	const struct gs_fail_group *x = a, *y = b;
	bool x_other = x->stack_id == GS_FAIL_OTHER_STACK,
	     y_other = y->stack_id == GS_FAIL_OTHER_STACK;

	if (x_other != y_other)
		return x_other ? 1 : -1;
	return x->count > y->count ? -1 : x->count < y->count;
}

void gs_fail_groups__sort(struct gs_fail_groups *g)
{
	if (!g->nr)
		return;
	qsort(g->items, g->nr, sizeof(*g->items), cmp_count);
	/* the same buckets, refilled: nothing to allocate, so nothing can fail */
	memset(g->buckets, 0, g->nr_buckets * sizeof(*g->buckets));
	for (size_t i = 0; i < g->nr; i++) {
		const struct gs_fail_group *x = &g->items[i];

		insert_bucket(g->buckets, g->nr_buckets, hash_key(x->stack_id, x->api, x->ret), i);
	}
}

void gs_fail_groups__release(struct gs_fail_groups *g)
{
	free(g->items);
	free(g->buckets);
	*g = (struct gs_fail_groups){ .max = g->max };
}
