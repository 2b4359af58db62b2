// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* probe_quota.c: per-user count of files probed per process, given back at process exit. */
#include <stdlib.h>
#include "profilers/probe_quota.h"
#include "user/array.h"
#include "user/pid_index.h"

/* one file probed in a process, counted against the uid that took it */
struct file_slot {
	uid_t uid;
	uint64_t dev, inode;
};

/* a process's probed files of their owners: a few at most, a list will do */
struct proc_files {
	pid_t pid;
	struct file_slot *files;
	size_t nr, cap;
};

struct gs_probe_quota {
	size_t per_user;
	struct proc_files *procs;
	size_t nr, cap;
	struct gs_pid_index index; /* pid -> position in procs: exits cost no search */
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
	for (size_t i = 0; i < q->nr; i++)
		free(q->procs[i].files);
	free(q->procs);
	gs_pid_index__release(&q->index);
	free(q);
}

size_t gs_probe_quota__held(const struct gs_probe_quota *q, uid_t uid)
{
	size_t n = 0;

	for (size_t i = 0; i < q->nr; i++)
		for (size_t j = 0; j < q->procs[i].nr; j++)
			n += q->procs[i].files[j].uid == uid;
	return n;
}

static struct proc_files *find_proc(const struct gs_probe_quota *q, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&q->index, pid, &pos) ? &q->procs[pos] : NULL;
}

static struct proc_files *add_proc(struct gs_probe_quota *q, pid_t pid)
{
	if (GS_ARRAY_RESERVE(q->procs, q->nr, q->cap, 16) ||
	    gs_pid_index__set(&q->index, pid, q->nr))
		return NULL;
	q->procs[q->nr] = (struct proc_files){ .pid = pid };
	return &q->procs[q->nr++];
}

bool gs_probe_quota__take(struct gs_probe_quota *q, uid_t uid, pid_t pid, uint64_t dev,
			  uint64_t inode)
{
	struct proc_files *p = find_proc(q, pid);

	for (size_t i = 0; p && i < p->nr; i++)
		if (p->files[i].dev == dev && p->files[i].inode == inode)
			return true;
	if (gs_probe_quota__held(q, uid) >= q->per_user)
		return false;
	if (!p)
		p = add_proc(q, pid);
	if (!p || GS_ARRAY_RESERVE(p->files, p->nr, p->cap, 4))
		return false;
	p->files[p->nr++] = (struct file_slot){ uid, dev, inode };
	return true;
}

void gs_probe_quota__release_pid(struct gs_probe_quota *q, pid_t pid)
{
	size_t pos;

	if (!gs_pid_index__get(&q->index, pid, &pos))
		return;
	free(q->procs[pos].files);
	gs_pid_index__remove(&q->index, pid);
	/* the last entry fills the hole; its index entry follows (it exists: no allocation) */
	q->procs[pos] = q->procs[--q->nr];
	if (pos < q->nr)
		gs_pid_index__set(&q->index, q->procs[pos].pid, pos);
}
