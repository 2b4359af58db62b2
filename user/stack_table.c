// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stack_table.c: hash-consing of user stacks with eager symbolization. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user/stack_table.h"

struct gs_stack_table {
	struct gs_symcache *symcache; /* borrowed */
	struct gs_stack *stacks;      /* by id */
	size_t nr, cap;
	uint32_t *buckets; /* id + 1; 0 = empty; open addressing */
	size_t nr_buckets;
};

static uint64_t hash_stack(pid_t pid, const uint64_t *addrs, uint32_t nr)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)pid;

	for (uint32_t i = 0; i < nr; i++) {
		h ^= addrs[i];
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	return h ^ nr;
}

static bool same_stack(const struct gs_stack *s, pid_t pid, const uint64_t *addrs, uint32_t nr)
{
	return s->pid == pid && s->nr_frames == nr && !memcmp(s->addrs, addrs, nr * sizeof(*addrs));
}

struct gs_stack_table *gs_stack_table__new(struct gs_symcache *symcache)
{
	struct gs_stack_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->symcache = symcache;
	t->nr_buckets = 1024;
	t->buckets = calloc(t->nr_buckets, sizeof(*t->buckets));
	if (!t->buckets) {
		free(t);
		return NULL;
	}
	return t;
}

static void free_stack(struct gs_stack *s)
{
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		free((char *)s->frames[i].symbol);
		free((char *)s->frames[i].module);
	}
	free(s->frames);
	free(s->addrs);
}

void gs_stack_table__free(struct gs_stack_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr; i++)
		free_stack(&t->stacks[i]);
	free(t->stacks);
	free(t->buckets);
	free(t);
}

static void insert_bucket(uint32_t *buckets, size_t nr_buckets, uint64_t hash, uint32_t id)
{
	size_t i = hash & (nr_buckets - 1);

	while (buckets[i])
		i = (i + 1) & (nr_buckets - 1);
	buckets[i] = id + 1;
}

static int grow_buckets(struct gs_stack_table *t)
{
	size_t nr_buckets = t->nr_buckets * 2;
	uint32_t *buckets = calloc(nr_buckets, sizeof(*buckets));

	if (!buckets)
		return -ENOMEM;
	for (size_t id = 0; id < t->nr; id++) {
		const struct gs_stack *s = &t->stacks[id];

		insert_bucket(buckets, nr_buckets, hash_stack(s->pid, s->addrs, s->nr_frames),
			      (uint32_t)id);
	}
	free(t->buckets);
	t->buckets = buckets;
	t->nr_buckets = nr_buckets;
	return 0;
}

static void symbolize(struct gs_stack_table *t, struct gs_stack *s)
{
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		struct gs_frame f;

		/* a return address may be one past the caller's last instruction: look up addr-1 */
		gs_symcache__resolve(t->symcache, s->pid, s->addrs[i] - 1, &f);
		f.address = s->addrs[i];
		f.offset += 1;
		f.symbol = f.symbol ? strdup(f.symbol) : NULL;
		f.module = f.module ? strdup(f.module) : NULL;
		s->frames[i] = f;
	}
}

int64_t gs_stack_table__intern(struct gs_stack_table *t, pid_t pid, const uint64_t *addrs,
			       uint32_t nr)
{
	uint64_t hash = hash_stack(pid, addrs, nr);
	struct gs_stack *s;

	for (size_t i = hash & (t->nr_buckets - 1); t->buckets[i];
	     i = (i + 1) & (t->nr_buckets - 1))
		if (same_stack(&t->stacks[t->buckets[i] - 1], pid, addrs, nr))
			return t->buckets[i] - 1;

	if ((t->nr + 1) * 2 > t->nr_buckets && grow_buckets(t))
		return -ENOMEM;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct gs_stack *grown = realloc(t->stacks, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->stacks = grown;
		t->cap = cap;
	}
	s = &t->stacks[t->nr];
	s->pid = pid;
	s->nr_frames = nr;
	s->addrs = malloc((nr ? nr : 1) * sizeof(*addrs));
	s->frames = calloc(nr ? nr : 1, sizeof(*s->frames));
	if (!s->addrs || !s->frames) {
		free(s->addrs);
		free(s->frames);
		return -ENOMEM;
	}
	memcpy(s->addrs, addrs, nr * sizeof(*addrs));
	symbolize(t, s);
	insert_bucket(t->buckets, t->nr_buckets, hash, (uint32_t)t->nr);
	return (int64_t)t->nr++;
}

const struct gs_stack *gs_stack_table__get(const struct gs_stack_table *t, uint32_t id)
{
	return id < t->nr ? &t->stacks[id] : NULL;
}

size_t gs_stack_table__size(const struct gs_stack_table *t)
{
	return t->nr;
}

void gs_frame_format(const struct gs_frame *f, char *buf, size_t len)
{
	if (f->symbol)
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", f->symbol, f->offset,
			 f->module ? f->module : "?");
	else if (f->module)
		snprintf(buf, len, "%s+0x%" PRIx64, f->module, f->offset);
	else
		snprintf(buf, len, "0x%" PRIx64, f->address);
}
