// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* names.c: process labels kept to each file's end, thread tracks named at first sight. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "profilers/timeline/names.h"
#include "stitch/chrome_trace.h"
#include "user/addr_map.h"
#include "user/array.h"

/* the process's key in named: no thread has tid 0 */
#define PROCESS_KEY 0

struct gs_timeline_names {
	/* (pid, tid): 1 once the thread's track is named; (pid, 0): its process's index + 1 */
	struct gs_addr_map *named;
	struct gs_timeline_proc *procs;
	size_t nr, cap;
};

struct gs_timeline_names *gs_timeline_names__new(void)
{
	struct gs_timeline_names *n = calloc(1, sizeof(*n));

	if (n && !(n->named = gs_addr_map__new())) {
		free(n);
		return NULL;
	}
	return n;
}

void gs_timeline_names__free(struct gs_timeline_names *n)
{
	if (!n)
		return;
	gs_addr_map__free(n->named);
	free(n->procs);
	free(n);
}

static struct gs_timeline_proc *proc_of(const struct gs_timeline_names *n, pid_t pid)
{
	uint64_t v;

	if (!gs_addr_map__get(n->named, pid, PROCESS_KEY, &v) || !v || v > n->nr)
		return NULL;
	return &n->procs[v - 1];
}

bool gs_timeline_names__process_wanted(const struct gs_timeline_names *n, pid_t pid)
{
	const struct gs_timeline_proc *p = proc_of(n, pid);

	return !p || p->stale;
}

int gs_timeline_names__set_process(struct gs_timeline_names *n, pid_t pid, size_t output,
				   const char *label)
{
	struct gs_timeline_proc *p = proc_of(n, pid);

	if (!p) {
		if (GS_ARRAY_RESERVE(n->procs, n->nr, n->cap, 16) ||
		    gs_addr_map__set(n->named, pid, PROCESS_KEY, n->nr + 1))
			return -ENOMEM;
		p = &n->procs[n->nr++];
	}
	p->pid = pid;
	p->output = output;
	p->stale = false;
	snprintf(p->label, sizeof(p->label), "%s", label);
	return 0;
}

bool gs_timeline_names__thread_wanted(struct gs_timeline_names *n, pid_t pid, pid_t tid)
{
	uint64_t seen;

	if (tid == PROCESS_KEY || gs_addr_map__get(n->named, pid, (uint64_t)tid, &seen))
		return false;
	/* out of memory: named again at its next event rather than never */
	gs_addr_map__set(n->named, pid, (uint64_t)tid, 1);
	return true;
}

int gs_timeline_names__thread_named(struct gs_timeline_names *n, pid_t pid, pid_t tid)
{
	return tid == PROCESS_KEY ? 0 : gs_addr_map__set(n->named, pid, (uint64_t)tid, 1);
}

void gs_timeline_names__gone(struct gs_timeline_names *n, pid_t pid, bool exec, bool keep)
{
	struct gs_timeline_proc *p = proc_of(n, pid);
	uint64_t index = p ? (uint64_t)(p - n->procs) + 1 : 0;

	if (!exec && keep)
		return;
	gs_addr_map__forget_pid(n->named, pid, NULL);
	if (!exec || !p)
		return; /* a reuse of pid is another process: a label of its own */
	p->stale = true;
	if (gs_addr_map__set(n->named, pid, PROCESS_KEY, index))
		p->stale = false; /* out of memory: its first label stays */
}

size_t gs_timeline_names__nr(const struct gs_timeline_names *n)
{
	return n->nr;
}

const struct gs_timeline_proc *gs_timeline_names__get(const struct gs_timeline_names *n, size_t i)
{
	return i < n->nr ? &n->procs[i] : NULL;
}

void gs_timeline_names__write(const struct gs_timeline_names *n, size_t output,
			      struct gs_chrome_trace *t)
{
	for (size_t i = 0; i < n->nr; i++)
		if (n->procs[i].output == output)
			gs_chrome_trace__process_name(t, n->procs[i].pid, n->procs[i].label);
}
