// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* links.c: attach uprobes with a bpf_cookie and keep the links, by the process they watch. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "user/links.h"

struct scoped_link {
	struct bpf_link *link;
	pid_t pid; /* -1: every process mapping the file */
};

/* links of exited processes being detached in the background */
struct release {
	pthread_t thread;
	struct bpf_link **links;
	size_t nr;
	struct release *next;
};

struct gs_links {
	struct scoped_link *links;
	size_t nr, cap;
	struct release *releases;
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
	struct bpf_link **links;
	size_t nr;
	atomic_size_t next;
};

static void *detach_some(void *arg)
{
	struct detach_work *w = arg;
	size_t i;

	while ((i = atomic_fetch_add(&w->next, 1)) < w->nr)
		bpf_link__destroy(w->links[i]);
	return NULL;
}

static void detach_all(struct bpf_link **links, size_t nr)
{
	pthread_t threads[MAX_DETACH_THREADS];
	struct detach_work w = { .links = links, .nr = nr };
	size_t started = 0;

	atomic_init(&w.next, 0);
	while (started < MAX_DETACH_THREADS && started < nr &&
	       !pthread_create(&threads[started], NULL, detach_some, &w))
		started++;
	detach_some(&w); /* also the way it all gets done if no thread could start */
	while (started)
		pthread_join(threads[--started], NULL);
}

static void *release_thread(void *arg)
{
	struct release *r = arg;

	detach_all(r->links, r->nr);
	return NULL;
}

/* Joins the background detaches that are done (all of them when wait). */
static void reap_releases(struct gs_links *links, bool wait)
{
	for (struct release **p = &links->releases; *p;) {
		struct release *r = *p;

		if (!wait && pthread_tryjoin_np(r->thread, NULL)) {
			p = &r->next;
			continue;
		}
		if (wait)
			pthread_join(r->thread, NULL);
		*p = r->next;
		free(r->links);
		free(r);
	}
}

void gs_links__free(struct gs_links *links)
{
	struct bpf_link **all;

	if (!links)
		return;
	reap_releases(links, true);
	all = malloc((links->nr ? links->nr : 1) * sizeof(*all));
	if (all) {
		for (size_t i = 0; i < links->nr; i++)
			all[i] = links->links[i].link;
		detach_all(all, links->nr);
	} else {
		for (size_t i = 0; i < links->nr; i++)
			bpf_link__destroy(links->links[i].link);
	}
	free(all);
	free(links->links);
	free(links);
}

void gs_links__release_pid(struct gs_links *links, pid_t pid)
{
	struct release *r;
	size_t kept = 0, nr = 0;

	reap_releases(links, false);
	for (size_t i = 0; i < links->nr; i++)
		nr += links->links[i].pid == pid;
	if (pid <= 0 || !nr)
		return;
	r = calloc(1, sizeof(*r));
	if (r)
		r->links = malloc(nr * sizeof(*r->links));
	for (size_t i = 0; i < links->nr; i++) {
		struct scoped_link *l = &links->links[i];

		if (l->pid != pid)
			links->links[kept++] = *l;
		else if (r && r->links)
			r->links[r->nr++] = l->link;
		else
			bpf_link__destroy(l->link);
	}
	links->nr = kept;
	if (!r || !r->links) {
		free(r);
		return;
	}
	if (pthread_create(&r->thread, NULL, release_thread, r)) {
		detach_all(r->links, r->nr); /* no thread: here, and it costs a grace period */
		free(r->links);
		free(r);
		return;
	}
	r->next = links->releases;
	links->releases = r;
}

size_t gs_links__count_pid(const struct gs_links *links, pid_t pid)
{
	size_t n = 0;

	for (size_t i = 0; i < links->nr; i++)
		n += links->links[i].pid == pid;
	return n;
}

static int add(struct gs_links *links, struct bpf_link *link, pid_t pid)
{
	if (!link)
		return -errno;
	links->links[links->nr++] = (struct scoped_link){ link, pid };
	return 0;
}

static int grow(struct gs_links *links)
{
	size_t cap;
	struct scoped_link *grown;

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
	int err = grow(links);

	if (err)
		return err;
	return add(links, bpf_program__attach_usdt(prog, pid, path, provider, name, &opts), pid);
}

int gs_links__attach_uprobe(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			    const char *path, uint64_t off, bool retprobe, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
	int err = grow(links);

	if (err)
		return err;
	return add(links, bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &opts),
		   pid);
}

size_t gs_links__count(const struct gs_links *links)
{
	return links->nr;
}
