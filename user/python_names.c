// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_names.c: interning of (process, code object, line) under ids that never repeat. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "user/hash_index.h"
#include "user/python_names.h"

#define MAX_IDS 0xfffffff0u /* below the marker */

struct entry {
	struct gs_py_name name;
	uint32_t gen;
};

struct gs_py_names {
	struct entry **by_id; /* NULL once forgotten */
	size_t nr, cap;
	struct gs_hash_index index; /* ids by (pid, code, gen, line) */
};

static uint64_t hash_key(pid_t pid, uint64_t code, uint32_t gen, int line)
{
	uint64_t h = gs_hash_combine(gs_hash_u64(code), (uint64_t)(uint32_t)pid << 32 | gen);

	return gs_hash_combine(h, (uint32_t)line);
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
	gs_hash_index__release(&n->index);
	free(n);
}

struct key {
	const struct gs_py_names *n;
	pid_t pid;
	uint64_t code;
	uint32_t gen;
	int line;
};

static bool same(const void *ctx, size_t id)
{
	const struct key *k = ctx;
	const struct entry *e = k->n->by_id[id];

	return e && e->name.pid == k->pid && e->name.code == k->code && e->gen == k->gen &&
	       e->name.line == k->line;
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
	struct key k = { .n = n, .pid = pid, .code = code, .gen = gen, .line = line };
	uint64_t hash = hash_key(pid, code, gen, line);
	struct entry *e;
	size_t id;

	if (gs_hash_index__find(&n->index, hash, same, &k, &id))
		return GS_PY_ADDR_TAG | id;
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
	if (gs_hash_index__add(&n->index, hash, n->nr)) {
		free_entry(e);
		return 0;
	}
	n->by_id[n->nr] = e;
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
	if (!n)
		return;
	for (size_t id = 0; id < n->nr; id++) {
		const struct entry *e = n->by_id[id];

		if (e && e->name.pid == pid) {
			gs_hash_index__remove(
				&n->index, hash_key(pid, e->name.code, e->gen, e->name.line), id);
			free_entry(n->by_id[id]);
			n->by_id[id] = NULL;
		}
	}
}
