// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* links.c: attach uprobes with a bpf_cookie and keep the links, by the process they watch. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "user/array.h"
#include "user/links.h"
#include "user/uprobe_multi.h"

/* a libbpf link (perf-event uprobe, USDT) or the descriptor of a multi-uprobe link */
struct scoped_link {
	struct bpf_link *link;
	int fd;
	pid_t pid; /* -1: every process mapping the file */
};

/* a uprobe asked for between gs_links__batch_begin() and gs_links__batch_end() */
struct pending {
	struct bpf_program *prog;
	char *path;
	uint64_t off, cookie;
	pid_t pid;
	bool retprobe;
	bool done;
};

/* links of exited processes being detached in the background */
struct release {
	pthread_t thread;
	struct scoped_link *links;
	size_t nr;
	struct release *next;
};

struct gs_links {
	struct scoped_link *links;
	size_t nr, cap;
	struct release *releases;
	struct pending *pending;
	size_t nr_pending, cap_pending;
	bool batching;
};

struct gs_links *gs_links__new(void)
{
	return calloc(1, sizeof(struct gs_links));
}

static bool is_multi(const struct bpf_program *prog)
{
	return (int)bpf_program__expected_attach_type(prog) == GS_BPF_TRACE_UPROBE_MULTI;
}

int gs_links__prepare(struct bpf_object *obj)
{
	struct bpf_program *prog;

	if (!gs_has_uprobe_multi())
		return 0;
	bpf_object__for_each_program(prog, obj)
	{
		const char *sec = bpf_program__section_name(prog);
		int err;

		/* SEC("usdt") programs stay libbpf's: it attaches them itself */
		if (strcmp(sec, "uprobe") && strcmp(sec, "uretprobe"))
			continue;
		err = bpf_program__set_expected_attach_type(
			prog, (enum bpf_attach_type)GS_BPF_TRACE_UPROBE_MULTI);
		if (err)
			return err;
	}
	return 0;
}

static void detach_one(struct scoped_link *l)
{
	if (l->link)
		bpf_link__destroy(l->link);
	else
		close(l->fd);
}

/*
 * Detaching waits for a grace period: a perf-event uprobe each (perf_event_detach_bpf_prog,
 * ~80 ms here), a multi-uprobe link once for all its probes (bpf_uprobe_unregister). One
 * after another, a hundred per-probe links take seconds; closed from many threads at once,
 * the waits share grace periods.
 */
#define MAX_DETACH_THREADS 64

struct detach_work {
	struct scoped_link *links;
	size_t nr;
	atomic_size_t next;
};

static void *detach_some(void *arg)
{
	struct detach_work *w = arg;
	size_t i;

	while ((i = atomic_fetch_add(&w->next, 1)) < w->nr)
		detach_one(&w->links[i]);
	return NULL;
}

static void detach_all(struct scoped_link *links, size_t nr)
{
	pthread_t threads[MAX_DETACH_THREADS];
	struct detach_work w = { .links = links, .nr = nr };
	size_t started = 0;

	atomic_init(&w.next, 0);
	/* the caller's thread takes one share: no thread at all for a single link */
	while (started + 1 < MAX_DETACH_THREADS && started + 1 < nr &&
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

static void drop_pending(struct gs_links *links)
{
	for (size_t i = 0; i < links->nr_pending; i++)
		free(links->pending[i].path);
	links->nr_pending = 0;
}

void gs_links__free(struct gs_links *links)
{
	if (!links)
		return;
	reap_releases(links, true);
	detach_all(links->links, links->nr);
	drop_pending(links);
	free(links->pending);
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
			r->links[r->nr++] = *l;
		else
			detach_one(l);
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

static int add(struct gs_links *links, struct bpf_link *link, int fd, pid_t pid)
{
	int err = GS_ARRAY_RESERVE(links->links, links->nr, links->cap, 64);

	if (err) {
		if (link)
			bpf_link__destroy(link);
		else
			close(fd);
		return err;
	}
	links->links[links->nr++] = (struct scoped_link){ .link = link, .fd = fd, .pid = pid };
	return 0;
}

int gs_links__attach_usdt(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			  const char *path, const char *provider, const char *name, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_usdt_opts, opts, .usdt_cookie = cookie);
	struct bpf_link *link = bpf_program__attach_usdt(prog, pid, path, provider, name, &opts);

	return link ? add(links, link, -1, pid) : -errno;
}

static int attach_multi(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			const char *path, const uint64_t *offs, const uint64_t *cookies, size_t nr,
			bool retprobe)
{
	int fd = gs_uprobe_multi__attach(bpf_program__fd(prog), path, offs, cookies, nr, pid,
					 retprobe);

	return fd < 0 ? fd : add(links, NULL, fd, pid);
}

static int queue(struct gs_links *links, struct bpf_program *prog, pid_t pid, const char *path,
		 uint64_t off, bool retprobe, uint64_t cookie)
{
	struct pending *p;

	if (GS_ARRAY_RESERVE(links->pending, links->nr_pending, links->cap_pending, 64))
		return -ENOMEM;
	p = &links->pending[links->nr_pending];
	*p = (struct pending){ .prog = prog,
			       .pid = pid,
			       .off = off,
			       .cookie = cookie,
			       .retprobe = retprobe,
			       .path = strdup(path) };
	if (!p->path)
		return -ENOMEM;
	links->nr_pending++;
	return 0;
}

int gs_links__attach_uprobe(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			    const char *path, uint64_t off, bool retprobe, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
	struct bpf_link *link;

	if (is_multi(prog) && links->batching)
		return queue(links, prog, pid, path, off, retprobe, cookie);
	if (is_multi(prog))
		return attach_multi(links, prog, pid, path, &off, &cookie, 1, retprobe);
	link = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &opts);
	return link ? add(links, link, -1, pid) : -errno;
}

void gs_links__batch_begin(struct gs_links *links)
{
	links->batching = true;
}

static bool same_link(const struct pending *a, const struct pending *b)
{
	return a->prog == b->prog && a->pid == b->pid && a->retprobe == b->retprobe &&
	       !strcmp(a->path, b->path);
}

/* One link for pending[first] and every later pending probe that can share it. */
static int attach_group(struct gs_links *links, size_t first, uint64_t *offs, uint64_t *cookies)
{
	struct pending *lead = &links->pending[first];
	size_t nr = 0;

	for (size_t i = first; i < links->nr_pending; i++) {
		struct pending *p = &links->pending[i];

		if (p->done || !same_link(lead, p))
			continue;
		offs[nr] = p->off;
		cookies[nr++] = p->cookie;
		p->done = true;
	}
	return attach_multi(links, lead->prog, lead->pid, lead->path, offs, cookies, nr,
			    lead->retprobe);
}

int gs_links__batch_end(struct gs_links *links)
{
	size_t n = links->nr_pending;
	uint64_t *offs = malloc((n ? n : 1) * sizeof(*offs));
	uint64_t *cookies = malloc((n ? n : 1) * sizeof(*cookies));
	int first_err = offs && cookies ? 0 : -ENOMEM;

	links->batching = false;
	/* return probes first: an entry seen without its return would look like nesting */
	for (int pass = 0; pass < 2 && !first_err; pass++) {
		for (size_t i = 0; i < n; i++) {
			struct pending *p = &links->pending[i];
			int err;

			if (p->done || p->retprobe != (pass == 0))
				continue;
			err = attach_group(links, i, offs, cookies);
			if (err && !first_err)
				first_err = err;
		}
	}
	drop_pending(links);
	free(offs);
	free(cookies);
	return first_err;
}

size_t gs_links__count(const struct gs_links *links)
{
	return links->nr;
}
