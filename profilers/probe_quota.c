// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* probe_quota.c: per-user count of files probed per process, given back at process exit. */
#include <stdlib.h>
#include "profilers/probe_quota.h"

struct slot {
	uid_t uid;
	pid_t pid;
	uint64_t dev, inode;
};

struct gs_probe_quota {
	size_t per_user;
	struct slot *slots; /* a few per process of a user with files of its own: a list will do */
	size_t nr, cap;
};

struct gs_probe_quota *gs_probe_quota__new(size_t per_user)
{
	struct gs_probe_quota *q = calloc(1, sizeof(*q));

	if (q)
		q->per_user = per_user;
	return q;
}

void gs_probe_quota__free(struct gs_probe_quota *q)
{
	if (!q)
		return;
	free(q->slots);
	free(q);
}

size_t gs_probe_quota__held(const struct gs_probe_quota *q, uid_t uid)
{
	size_t n = 0;

	for (size_t i = 0; i < q->nr; i++)
		n += q->slots[i].uid == uid;
	return n;
}

bool gs_probe_quota__take(struct gs_probe_quota *q, uid_t uid, pid_t pid, uint64_t dev,
			  uint64_t inode)
{
	for (size_t i = 0; i < q->nr; i++) {
		const struct slot *s = &q->slots[i];

		if (s->pid == pid && s->dev == dev && s->inode == inode)
			return true;
	}
	if (gs_probe_quota__held(q, uid) >= q->per_user)
		return false;
	if (q->nr == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 16;
		struct slot *grown = realloc(q->slots, cap * sizeof(*grown));

		if (!grown)
			return false;
		q->slots = grown;
		q->cap = cap;
	}
	q->slots[q->nr++] = (struct slot){ uid, pid, dev, inode };
	return true;
}

void gs_probe_quota__release_pid(struct gs_probe_quota *q, pid_t pid)
{
	for (size_t i = 0; i < q->nr;) {
		if (q->slots[i].pid == pid)
			q->slots[i] = q->slots[--q->nr];
		else
			i++;
	}
}
