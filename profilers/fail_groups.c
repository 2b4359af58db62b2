// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fail_groups.c: hashed, capped failure groups; the rest folded into "[other failures]". */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include "profilers/fail_groups.h"
#include "user/array.h"

static uint64_t hash_key(uint32_t stack_id, uint16_t api, int32_t ret)
{
	return gs_hash_combine(gs_hash_u64(((uint64_t)stack_id << 32) | (uint32_t)ret), api);
}

struct key {
	const struct gs_fail_groups *g;
	uint32_t stack_id;
	uint16_t api;
	int32_t ret;
};

static bool same_key(const void *ctx, size_t pos)
{
	const struct key *k = ctx;
	const struct gs_fail_group *x = &k->g->items[pos];

	return x->stack_id == k->stack_id && x->api == k->api && x->ret == k->ret;
}

/* The group of this key, NULL when there is none yet. */
static struct gs_fail_group *find(const struct gs_fail_groups *g, uint32_t stack_id, uint16_t api,
				  int32_t ret)
{
	struct key k = { .g = g, .stack_id = stack_id, .api = api, .ret = ret };
	size_t pos;

	if (!gs_hash_index__find(&g->index, hash_key(stack_id, api, ret), same_key, &k, &pos))
		return NULL;
	return &g->items[pos];
}

static struct gs_fail_group *create(struct gs_fail_groups *g, uint32_t stack_id, uint16_t api,
				    int32_t ret)
{
	struct gs_fail_group *x;

	if (GS_ARRAY_RESERVE(g->items, g->nr, g->cap, 4) ||
	    gs_hash_index__add(&g->index, hash_key(stack_id, api, ret), g->nr))
		return NULL;
	x = &g->items[g->nr++];
	*x = (struct gs_fail_group){ .stack_id = stack_id, .api = api, .ret = ret };
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
	/* the same slots, refilled: nothing to allocate, so nothing can fail */
	gs_hash_index__clear(&g->index);
	for (size_t i = 0; i < g->nr; i++) {
		const struct gs_fail_group *x = &g->items[i];

		gs_hash_index__add(&g->index, hash_key(x->stack_id, x->api, x->ret), i);
	}
}

void gs_fail_groups__release(struct gs_fail_groups *g)
{
	free(g->items);
	gs_hash_index__release(&g->index);
	*g = (struct gs_fail_groups){ .max = g->max };
}
