// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gpu_correlate.c: per-thread recent API entries, per-process set of launched ids. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cuda/gpu_correlate.h"
#include "user/addr_map.h"

/*
 * A thread's last API entries: nested calls (a runtime call and the driver calls inside it)
 * each report one, and the slice of the outer call returns last. Older ones are overwritten.
 */
#define RECENT 8
/* Launched ids as a bitmap from the first id seen; ids are handed out in order per process. */
#define MAX_ID_SPAN (1u << 28) /* 32 MiB of bitmap at most per process */
#define BITMAP_KEY  0	       /* tids are never 0 */
#define BASE_SLACK  4096       /* ids below the first one seen that are still tracked */

struct api_entry {
	uint64_t ts_ns;
	uint32_t correlation, domain;
};

struct recent {
	struct api_entry e[RECENT];
	unsigned int next;
};

struct launched {
	uint32_t base; /* first id the bitmap covers */
	uint32_t nr_words;
	uint64_t *words;
};

struct gs_gpu_correlate {
	struct gs_addr_map *threads;  /* (pid, tid) -> struct recent * */
	struct gs_addr_map *launched; /* (pid, BITMAP_KEY) -> struct launched * */
};

struct gs_gpu_correlate *gs_gpu_correlate__new(void)
{
	struct gs_gpu_correlate *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->threads = gs_addr_map__new();
	c->launched = gs_addr_map__new();
	if (!c->threads || !c->launched) {
		gs_gpu_correlate__free(c);
		errno = ENOMEM;
		return NULL;
	}
	return c;
}

static void free_recent(uint64_t v)
{
	free((void *)(uintptr_t)v);
}

static void free_launched(uint64_t v)
{
	struct launched *l = (void *)(uintptr_t)v;

	if (l)
		free(l->words);
	free(l);
}

void gs_gpu_correlate__free(struct gs_gpu_correlate *c)
{
	if (!c)
		return;
	if (c->threads)
		gs_addr_map__for_each_value(c->threads, free_recent);
	if (c->launched)
		gs_addr_map__for_each_value(c->launched, free_launched);
	gs_addr_map__free(c->threads);
	gs_addr_map__free(c->launched);
	free(c);
}

int gs_gpu_correlate__api(struct gs_gpu_correlate *c, pid_t pid, pid_t tid, uint64_t ts_ns,
			  uint32_t correlation, uint32_t domain)
{
	struct recent *r;
	uint64_t v;

	if (gs_addr_map__get(c->threads, pid, (uint64_t)tid, &v)) {
		r = (void *)(uintptr_t)v;
	} else {
		r = calloc(1, sizeof(*r));
		if (!r || gs_addr_map__set(c->threads, pid, (uint64_t)tid, (uintptr_t)r)) {
			free(r);
			return -ENOMEM;
		}
	}
	r->e[r->next] = (struct api_entry){ ts_ns, correlation, domain };
	r->next = (r->next + 1) % RECENT;
	return 0;
}

/* Marks id launched in pid's bitmap, grown as ids go up. */
static void mark_launched(struct gs_gpu_correlate *c, pid_t pid, uint32_t id)
{
	struct launched *l;
	uint64_t v, *grown;
	uint32_t bit, words;

	if (gs_addr_map__get(c->launched, pid, BITMAP_KEY, &v)) {
		l = (void *)(uintptr_t)v;
	} else {
		l = calloc(1, sizeof(*l));
		if (!l || gs_addr_map__set(c->launched, pid, BITMAP_KEY, (uintptr_t)l)) {
			free(l);
			return;
		}
		/* slices return innermost first: an outer call's smaller id may come after */
		l->base = (id > BASE_SLACK ? id - BASE_SLACK : 0) & ~63u;
	}
	if (id < l->base || id - l->base >= MAX_ID_SPAN)
		return; /* the GPU record will count as not linked */
	bit = id - l->base;
	if (bit / 64 >= l->nr_words) {
		words = l->nr_words ? l->nr_words : 64;
		while (bit / 64 >= words)
			words *= 2;
		grown = realloc(l->words, words * sizeof(*grown));
		if (!grown)
			return;
		memset(grown + l->nr_words, 0, (words - l->nr_words) * sizeof(*grown));
		l->words = grown;
		l->nr_words = words;
	}
	l->words[bit / 64] |= 1ULL << (bit % 64);
}

uint32_t gs_gpu_correlate__slice(struct gs_gpu_correlate *c, pid_t pid, pid_t tid,
				 uint64_t entry_ns, uint64_t exit_ns, uint32_t domain)
{
	const struct api_entry *best = NULL, *any = NULL;
	struct recent *r;
	uint64_t v;

	if (!gs_addr_map__get(c->threads, pid, (uint64_t)tid, &v))
		return 0;
	r = (void *)(uintptr_t)v;
	for (unsigned int i = 0; i < RECENT; i++) {
		const struct api_entry *e = &r->e[i];

		if (!e->correlation || e->ts_ns < entry_ns || e->ts_ns > exit_ns)
			continue;
		if (!any || e->ts_ns < any->ts_ns)
			any = e;
		if (e->domain == domain && (!best || e->ts_ns < best->ts_ns))
			best = e;
	}
	if (!best)
		best = any;
	if (!best)
		return 0;
	mark_launched(c, pid, best->correlation);
	return best->correlation;
}

bool gs_gpu_correlate__launched(const struct gs_gpu_correlate *c, pid_t pid, uint32_t correlation)
{
	const struct launched *l;
	uint32_t bit;
	uint64_t v;

	if (!gs_addr_map__get(c->launched, pid, BITMAP_KEY, &v))
		return false;
	l = (const void *)(uintptr_t)v;
	if (correlation < l->base)
		return false;
	bit = correlation - l->base;
	return bit / 64 < l->nr_words && (l->words[bit / 64] >> (bit % 64) & 1);
}

void gs_gpu_correlate__forget_pid(struct gs_gpu_correlate *c, pid_t pid)
{
	gs_addr_map__forget_pid(c->threads, pid, free_recent);
	gs_addr_map__forget_pid(c->launched, pid, free_launched);
}
