// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* flight_recorder.c: one ring of recent events per process, trimmed by age and count. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/daemon/flight_recorder.h"
#include "user/pid_index.h"
#include "user/array.h"

struct ring {
	pid_t pid;
	struct gs_flight_event *events;
	size_t cap, head, count; /* events[(head + i) % cap], i < count, oldest first */
};

struct gs_flight_recorder {
	uint64_t window_ns;
	size_t max_events;
	struct ring *rings;
	size_t nr_rings, cap_rings;
	struct gs_pid_index index; /* pid -> position in rings: one look-up per event */
};

struct gs_flight_recorder *gs_flight_recorder__new(uint64_t window_ns, size_t max_events)
{
	struct gs_flight_recorder *fr;

	if (!max_events) {
		errno = EINVAL;
		return NULL;
	}
	fr = calloc(1, sizeof(*fr));
	if (!fr)
		return NULL;
	fr->window_ns = window_ns;
	fr->max_events = max_events;
	return fr;
}

static struct ring *find_ring(const struct gs_flight_recorder *fr, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&fr->index, pid, &pos) ? &fr->rings[pos] : NULL;
}

static struct ring *new_ring(struct gs_flight_recorder *fr, pid_t pid)
{
	struct ring *r;

	if (GS_ARRAY_RESERVE(fr->rings, fr->nr_rings, fr->cap_rings, 16) ||
	    gs_pid_index__set(&fr->index, pid, fr->nr_rings))
		return NULL;
	r = &fr->rings[fr->nr_rings++];
	*r = (struct ring){ .pid = pid };
	return r;
}

static const struct gs_flight_event *at(const struct ring *r, size_t i)
{
	return &r->events[(r->head + i) % r->cap];
}

static void drop_oldest(struct ring *r)
{
	r->head = (r->head + 1) % r->cap;
	r->count--;
}

/* Grows a full ring (up to max_events) so a busy process keeps its whole window. */
static int grow(struct ring *r, size_t max_events)
{
	size_t cap = r->cap ? r->cap * 2 : 64;
	struct gs_flight_event *events;

	if (cap > max_events)
		cap = max_events;
	events = malloc(cap * sizeof(*events));
	if (!events)
		return -ENOMEM;
	for (size_t i = 0; i < r->count; i++)
		events[i] = *at(r, i);
	free(r->events);
	r->events = events;
	r->cap = cap;
	r->head = 0;
	return 0;
}

int gs_flight_recorder__add(struct gs_flight_recorder *fr, pid_t pid,
			    const struct gs_flight_event *e)
{
	struct ring *r = find_ring(fr, pid);

	if (!r && !(r = new_ring(fr, pid)))
		return -ENOMEM;
	while (r->count && at(r, 0)->ts_ns + fr->window_ns < e->ts_ns)
		drop_oldest(r);
	if (r->count == r->cap) {
		if (r->cap < fr->max_events) {
			int err = grow(r, fr->max_events);

			if (err)
				return err;
		} else {
			drop_oldest(r);
		}
	}
	r->events[(r->head + r->count) % r->cap] = *e;
	r->count++;
	return 0;
}

void gs_flight_recorder__each(const struct gs_flight_recorder *fr, pid_t pid, uint64_t now_ns,
			      void (*fn)(void *ctx, const struct gs_flight_event *e), void *ctx)
{
	const struct ring *r = find_ring(fr, pid);

	for (size_t i = 0; r && i < r->count; i++) {
		const struct gs_flight_event *e = at(r, i);

		if (e->ts_ns + fr->window_ns >= now_ns)
			fn(ctx, e);
	}
}

void gs_flight_recorder__forget(struct gs_flight_recorder *fr, pid_t pid)
{
	struct ring *r = find_ring(fr, pid);
	size_t pos;

	if (!r)
		return;
	free(r->events);
	pos = (size_t)(r - fr->rings);
	gs_pid_index__remove(&fr->index, pid);
	/* the last ring fills the hole; its index entry exists, so moving it allocates nothing */
	*r = fr->rings[--fr->nr_rings];
	if (pos < fr->nr_rings)
		gs_pid_index__set(&fr->index, r->pid, pos);
}

void gs_flight_recorder__free(struct gs_flight_recorder *fr)
{
	if (!fr)
		return;
	for (size_t i = 0; i < fr->nr_rings; i++)
		free(fr->rings[i].events);
	free(fr->rings);
	gs_pid_index__release(&fr->index);
	free(fr);
}
