// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* addr_map.c: open addressing with linear probing; removal rebuilds (rare: at exit/exec). */
#include <errno.h>
#include <stdlib.h>
#include "user/addr_map.h"

struct slot {
	uint64_t key, value;
	pid_t pid;
	bool used;
};

struct gs_addr_map {
	struct slot *slots;
	size_t nr_slots, count;
};

static size_t hash(pid_t pid, uint64_t key, size_t nr_slots)
{
	uint64_t h = (key ^ ((uint64_t)(uint32_t)pid << 32)) * 0x9E3779B97F4A7C15ULL;

	return (size_t)(h >> 20) & (nr_slots - 1);
}

struct gs_addr_map *gs_addr_map__new(void)
{
	struct gs_addr_map *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->nr_slots = 64;
	m->slots = calloc(m->nr_slots, sizeof(*m->slots));
	if (!m->slots) {
		free(m);
		return NULL;
	}
	return m;
}

void gs_addr_map__free(struct gs_addr_map *m)
{
	if (!m)
		return;
	free(m->slots);
	free(m);
}

static struct slot *find(const struct gs_addr_map *m, pid_t pid, uint64_t key)
{
	size_t i = hash(pid, key, m->nr_slots);

	while (m->slots[i].used && (m->slots[i].pid != pid || m->slots[i].key != key))
		i = (i + 1) & (m->nr_slots - 1);
	return &m->slots[i];
}

static int rehash(struct gs_addr_map *m, size_t nr_slots)
{
	struct slot *old = m->slots;
	size_t old_nr = m->nr_slots;

	m->slots = calloc(nr_slots, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return -ENOMEM;
	}
	m->nr_slots = nr_slots;
	for (size_t i = 0; i < old_nr; i++)
		if (old[i].used)
			*find(m, old[i].pid, old[i].key) = old[i];
	free(old);
	return 0;
}

int gs_addr_map__set(struct gs_addr_map *m, pid_t pid, uint64_t key, uint64_t value)
{
	struct slot *s;

	if ((m->count + 1) * 2 > m->nr_slots && rehash(m, m->nr_slots * 2))
		return -ENOMEM;
	s = find(m, pid, key);
	if (!s->used)
		m->count++;
	*s = (struct slot){ .key = key, .value = value, .pid = pid, .used = true };
	return 0;
}

bool gs_addr_map__get(const struct gs_addr_map *m, pid_t pid, uint64_t key, uint64_t *value)
{
	const struct slot *s = find(m, pid, key);

	if (!s->used)
		return false;
	*value = s->value;
	return true;
}

void gs_addr_map__forget_pid(struct gs_addr_map *m, pid_t pid, void (*drop)(uint64_t value))
{
	bool any = false;

	for (size_t i = 0; i < m->nr_slots; i++) {
		if (m->slots[i].used && m->slots[i].pid == pid) {
			if (drop)
				drop(m->slots[i].value);
			m->slots[i].used = false;
			m->count--;
			any = true;
		}
	}
	/* probe runs now have holes: re-insert the survivors so lookups do not stop early
	 * (out of memory here leaves the holes, and displaced entries unfindable) */
	if (any)
		rehash(m, m->nr_slots);
}

void gs_addr_map__for_each_value(struct gs_addr_map *m, void (*drop)(uint64_t value))
{
	for (size_t i = 0; i < m->nr_slots; i++)
		if (m->slots[i].used)
			drop(m->slots[i].value);
}

size_t gs_addr_map__count(const struct gs_addr_map *m)
{
	return m->count;
}
