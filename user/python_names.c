// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_names.c: interning of (process, code object, line) under ids that never repeat. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/python_names.h"

#define MAX_IDS 0xfffffff0u /* below the marker */

struct entry {
	struct gs_py_name name;
	uint32_t gen;
};

struct gs_py_names {
	struct entry **by_id; /* NULL once forgotten */
	size_t nr, cap;
	uint32_t *buckets; /* id + 1, open addressing; 0 = empty */
	size_t nr_buckets, nr_used;
};

static uint64_t hash_key(pid_t pid, uint64_t code, uint32_t gen, int line)
{
	uint64_t h = code * 0x9e3779b97f4a7c15ULL;

	h ^= ((uint64_t)(uint32_t)pid << 32 | gen) * 0xc2b2ae3d27d4eb4fULL;
	h ^= (uint64_t)(uint32_t)line * 0x165667b19e3779f9ULL;
	return h ^ (h >> 31);
}

struct gs_py_names *gs_py_names__new(void)
{
	return calloc(1, sizeof(struct gs_py_names));
}

static void free_entry(struct entry *e)
{
	if (!e)
		return;
	free(e->name.qualname);
	free(e->name.file);
	free(e);
}

void gs_py_names__free(struct gs_py_names *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->nr; i++)
		free_entry(n->by_id[i]);
	free(n->by_id);
	free(n->buckets);
	free(n);
}

static int rehash(struct gs_py_names *n, size_t nr_buckets)
{
	uint32_t *buckets = calloc(nr_buckets, sizeof(*buckets));

	if (!buckets)
		return -ENOMEM;
	n->nr_used = 0;
	for (size_t id = 0; id < n->nr; id++) {
		const struct entry *e = n->by_id[id];
		size_t i;

		if (!e)
			continue;
		i = hash_key(e->name.pid, e->name.code, e->gen, e->name.line) & (nr_buckets - 1);
		while (buckets[i])
			i = (i + 1) & (nr_buckets - 1);
		buckets[i] = (uint32_t)id + 1;
		n->nr_used++;
	}
	free(n->buckets);
	n->buckets = buckets;
	n->nr_buckets = nr_buckets;
	return 0;
}

static bool same(const struct entry *e, pid_t pid, uint64_t code, uint32_t gen, int line)
{
	return e && e->name.pid == pid && e->name.code == code && e->gen == gen &&
	       e->name.line == line;
}

static struct entry *new_entry(pid_t pid, uint64_t code, uint32_t gen, const char *qualname,
			       const char *file, int line)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->name = (struct gs_py_name){ .pid = pid, .code = code, .line = line };
	e->gen = gen;
	e->name.qualname = strdup(qualname);
	e->name.file = strdup(file);
	if (!e->name.qualname || !e->name.file) {
		free_entry(e);
		return NULL;
	}
	return e;
}

uint64_t gs_py_names__intern(struct gs_py_names *n, pid_t pid, uint64_t code, uint32_t gen,
			     const char *qualname, const char *file, int line)
{
	size_t i;
	struct entry *e;

	if ((n->nr_used + 1) * 2 > n->nr_buckets &&
	    rehash(n, n->nr_buckets ? n->nr_buckets * 2 : 1024))
		return 0;
	i = hash_key(pid, code, gen, line) & (n->nr_buckets - 1);
	for (; n->buckets[i]; i = (i + 1) & (n->nr_buckets - 1))
		if (same(n->by_id[n->buckets[i] - 1], pid, code, gen, line))
			return GS_PY_ADDR_TAG | (n->buckets[i] - 1);
	if (n->nr >= MAX_IDS)
		return 0;
	if (n->nr == n->cap) {
		size_t cap = n->cap ? n->cap * 2 : 256;
		struct entry **grown = realloc(n->by_id, cap * sizeof(*grown));

		if (!grown)
			return 0;
		n->by_id = grown;
		n->cap = cap;
	}
	e = new_entry(pid, code, gen, qualname, file, line);
	if (!e)
		return 0;
	n->by_id[n->nr] = e;
	n->buckets[i] = (uint32_t)n->nr + 1;
	n->nr_used++;
	return GS_PY_ADDR_TAG | n->nr++;
}

uint64_t gs_py_names__marker(struct gs_py_names *n, pid_t pid)
{
	/* no code object lives at address 0: the key is the marker's alone */
	uint64_t addr =
		n ? gs_py_names__intern(n, pid, 0, UINT32_MAX, "[native frames missing]", "", -1)
		  : 0;

	if (addr)
		n->by_id[addr & ~GS_PY_ADDR_TAG]->name.marker = true;
	return addr;
}

const struct gs_py_name *gs_py_names__get(const struct gs_py_names *n, pid_t pid, uint64_t addr)
{
	uint64_t id = addr & ~GS_PY_ADDR_TAG;

	if (!n || !gs_py_is_addr(addr) || id >= n->nr || !n->by_id[id] ||
	    n->by_id[id]->name.pid != pid)
		return NULL;
	return &n->by_id[id]->name;
}

void gs_py_names__forget(struct gs_py_names *n, pid_t pid)
{
	bool any = false;

	if (!n)
		return;
	for (size_t id = 0; id < n->nr; id++) {
		if (n->by_id[id] && n->by_id[id]->name.pid == pid) {
			free_entry(n->by_id[id]);
			n->by_id[id] = NULL;
			any = true;
		}
	}
	/* a failed rehash keeps stale buckets: lookups skip NULL entries */
	if (any)
		rehash(n, n->nr_buckets);
}
