// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* links.c: attach uprobes with a bpf_cookie and keep the links. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "user/links.h"

struct gs_links {
	struct bpf_link **links;
	size_t nr, cap;
};

struct gs_links *gs_links__new(void)
{
	return calloc(1, sizeof(struct gs_links));
}

/*
 * Detaching a perf-event uprobe waits for an RCU tasks-trace grace period
 * (perf_event_detach_bpf_prog), ~80 ms here: one after another, a hundred probes take
 * seconds. Closed from many threads at once, the waits share grace periods.
 */
#define MAX_DETACH_THREADS 64

struct detach_work {
	struct gs_links *links;
	atomic_size_t next;
};

static void *detach_some(void *arg)
{
	struct detach_work *w = arg;
	size_t i;

	while ((i = atomic_fetch_add(&w->next, 1)) < w->links->nr)
		bpf_link__destroy(w->links->links[i]);
	return NULL;
}

void gs_links__free(struct gs_links *links)
{
	pthread_t threads[MAX_DETACH_THREADS];
	struct detach_work w = { .links = links };
	size_t started = 0;

	if (!links)
		return;
	atomic_init(&w.next, 0);
	while (started < MAX_DETACH_THREADS && started < links->nr &&
	       !pthread_create(&threads[started], NULL, detach_some, &w))
		started++;
	detach_some(&w); /* also the way it all gets done if no thread could start */
	while (started)
		pthread_join(threads[--started], NULL);
	free(links->links);
	free(links);
}

static int grow(struct gs_links *links)
{
	size_t cap;
	struct bpf_link **grown;

	if (links->nr < links->cap)
		return 0;
	cap = links->cap ? links->cap * 2 : 64;
	grown = realloc(links->links, cap * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	links->links = grown;
	links->cap = cap;
	return 0;
}

int gs_links__attach_usdt(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			  const char *path, const char *provider, const char *name, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = cookie);
	struct bpf_link *link;
	int err = grow(links);

	if (err)
		return err;
	link = bpf_program__attach_usdt(prog, pid, path, provider, name, &opts);
	if (!link)
		return -errno;
	links->links[links->nr++] = link;
	return 0;
}

int gs_links__attach_uprobe(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			    const char *path, uint64_t off, bool retprobe, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
	struct bpf_link *link;

	if (links->nr == links->cap) {
		size_t cap = links->cap ? links->cap * 2 : 64;
		struct bpf_link **grown = realloc(links->links, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		links->links = grown;
		links->cap = cap;
	}
	link = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &opts);
	if (!link)
		return -errno;
	links->links[links->nr++] = link;
	return 0;
}

size_t gs_links__count(const struct gs_links *links)
{
	return links->nr;
}
