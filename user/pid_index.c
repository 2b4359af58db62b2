// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* pid_index.c: pid -> array position, a gs_hash_index keyed by the pid's bijective hash. */
#include <errno.h>
#include "user/pid_index.h"

/* a bijection of the pid: equal hashes are equal pids, so lookups need no key compare */
static uint64_t pid_hash(pid_t pid)
{
	return gs_hash_u64((uint32_t)pid);
}

bool gs_pid_index__get(const struct gs_pid_index *x, pid_t pid, size_t *pos)
{
	return gs_hash_index__find(&x->h, pid_hash(pid), NULL, NULL, pos);
}

int gs_pid_index__set(struct gs_pid_index *x, pid_t pid, size_t pos)
{
	size_t old;

	if (!gs_pid_index__get(x, pid, &old))
		return gs_hash_index__add(&x->h, pid_hash(pid), pos);
	return gs_hash_index__move(&x->h, pid_hash(pid), old, pos) ? 0 : -ENOMEM;
}

void gs_pid_index__remove(struct gs_pid_index *x, pid_t pid)
{
	size_t pos;

	if (gs_pid_index__get(x, pid, &pos))
		gs_hash_index__remove(&x->h, pid_hash(pid), pos);
}

void gs_pid_index__release(struct gs_pid_index *x)
{
	gs_hash_index__release(&x->h);
}
