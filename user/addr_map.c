// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* addr_map.c: entries in an array, found through a gs_hash_index; removal swaps in the last. */
#include <errno.h>
#include <stdlib.h>
#include "user/addr_map.h"
#include "user/array.h"
#include "user/hash_index.h"

struct entry {
	uint64_t key, value;
	pid_t pid;
};

struct gs_addr_map {
	struct entry *entries;
	size_t nr, cap;
	struct gs_hash_index index;
};

struct lookup {
	const struct gs_addr_map *m;
	pid_t pid;
	uint64_t key;
};

static uint64_t hash(pid_t pid, uint64_t key)
{
	return gs_hash_combine(gs_hash_u64(key), (uint32_t)pid);
}

static bool same(const void *ctx, size_t pos)
{
	const struct lookup *l = ctx;

	return l->m->entries[pos].pid == l->pid && l->m->entries[pos].key == l->key;
}

static bool find(const struct gs_addr_map *m, pid_t pid, uint64_t key, size_t *pos)
{
	struct lookup l = { .m = m, .pid = pid, .key = key };

	return gs_hash_index__find(&m->index, hash(pid, key), same, &l, pos);
}

struct gs_addr_map *gs_addr_map__new(void)
{
	return calloc(1, sizeof(struct gs_addr_map));
}

void gs_addr_map__free(struct gs_addr_map *m)
{
	if (!m)
		return;
	free(m->entries);
	gs_hash_index__release(&m->index);
	free(m);
}

int gs_addr_map__set(struct gs_addr_map *m, pid_t pid, uint64_t key, uint64_t value)
{
	size_t pos;

	if (find(m, pid, key, &pos)) {
		m->entries[pos].value = value;
		return 0;
	}
	if (GS_ARRAY_RESERVE(m->entries, m->nr, m->cap, 64) ||
	    gs_hash_index__add(&m->index, hash(pid, key), m->nr))
		return -ENOMEM;
	m->entries[m->nr++] = (struct entry){ .key = key, .value = value, .pid = pid };
	return 0;
}

bool gs_addr_map__get(const struct gs_addr_map *m, pid_t pid, uint64_t key, uint64_t *value)
{
	size_t pos;

	if (!find(m, pid, key, &pos))
		return false;
	*value = m->entries[pos].value;
	return true;
}

/* Backwards, so that the entry moved into a hole was looked at already. Cannot fail. */
void gs_addr_map__forget_pid(struct gs_addr_map *m, pid_t pid, void (*drop)(uint64_t value))
{
	for (size_t i = m->nr; i-- > 0;) {
		const struct entry *e = &m->entries[i], *last = &m->entries[m->nr - 1];

		if (e->pid != pid)
			continue;
		if (drop)
			drop(e->value);
		gs_hash_index__remove(&m->index, hash(e->pid, e->key), i);
		if (i != m->nr - 1) {
			gs_hash_index__move(&m->index, hash(last->pid, last->key), m->nr - 1, i);
			m->entries[i] = *last;
		}
		m->nr--;
	}
}

void gs_addr_map__for_each_value(struct gs_addr_map *m, void (*drop)(uint64_t value))
{
	for (size_t i = 0; i < m->nr; i++)
		drop(m->entries[i].value);
}

size_t gs_addr_map__count(const struct gs_addr_map *m)
{
	return m->nr;
}
