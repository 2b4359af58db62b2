// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* debuginfod_client.c: libdebuginfod (dlopen'ed) fetching debug files in one worker thread. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/clock.h"
#include "user/debuginfod_client.h"

/*
 * elfutils' <elfutils/debuginfod.h>, declared here: the library is loaded at first need,
 * so that neither the build nor a static binary depends on it (or on its libcurl).
 */
typedef struct debuginfod_client debuginfod_client;
typedef int (*debuginfod_progressfn_t)(debuginfod_client *c, long a, long b);

struct lib {
	void *handle;
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int id_len,
			      char **path);
	void (*set_progressfn)(debuginfod_client *c, debuginfod_progressfn_t fn);
	void (*end)(debuginfod_client *c);
};

enum req_state { REQ_QUEUED, REQ_FETCHING, REQ_DONE, REQ_TAKEN };

struct request {
	char hex[2 * 64 + 1];
	enum req_state state;
	int fd; /* REQ_DONE: the file, or -errno */
};

struct gs_debuginfod {
	struct lib lib;
	pthread_t worker;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a request queued, one done, or stop */
	struct request reqs[GS_DEBUGINFOD_MAX];
	size_t nr_reqs;
	size_t pending; /* queued or fetching */
	atomic_bool stop;
	atomic_bool news;
	uint64_t wait_left_ns;
};

bool gs_debuginfod_enabled(void)
{
	const char *urls = getenv("DEBUGINFOD_URLS");

	return urls && urls[strspn(urls, " \t")];
}

static int load_lib(struct lib *lib)
{
	lib->handle = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib->handle)
		return -ENOENT;
	lib->begin = dlsym(lib->handle, "debuginfod_begin");
	lib->find_debuginfo = dlsym(lib->handle, "debuginfod_find_debuginfo");
	lib->set_progressfn = dlsym(lib->handle, "debuginfod_set_progressfn");
	lib->end = dlsym(lib->handle, "debuginfod_end");
	if (!lib->begin || !lib->find_debuginfo || !lib->set_progressfn || !lib->end) {
		dlclose(lib->handle);
		lib->handle = NULL;
		return -ENOSYS;
	}
	return 0;
}

/*
 * The worker's own state, for progress(): the callback has only the client, and its user
 * data would need a library function in hand. The worker thread is the only one calling it.
 */
static __thread struct gs_debuginfod *worker_self;

/* Called by libcurl's transfer loop (about once a second at least): nonzero cancels. */
static int progress(debuginfod_client *c, long a, long b)
{
	(void)c;
	(void)a;
	(void)b;
	return worker_self && atomic_load(&worker_self->stop);
}

static struct request *next_queued(struct gs_debuginfod *d)
{
	for (size_t i = 0; i < d->nr_reqs; i++)
		if (d->reqs[i].state == REQ_QUEUED)
			return &d->reqs[i];
	return NULL;
}

static void fetch_one(struct gs_debuginfod *d, debuginfod_client *c, struct request *r)
{
	char hex[sizeof(r->hex)], *path = NULL;
	int fd;

	memcpy(hex, r->hex, sizeof(hex));
	pthread_mutex_unlock(&d->lock);
	/* id_len 0: the id is a hex string */
	fd = c ? d->lib.find_debuginfo(c, (const unsigned char *)hex, 0, &path) : -ENOTCONN;
	free(path);
	pthread_mutex_lock(&d->lock);
	r->fd = fd;
	r->state = REQ_DONE;
	d->pending--;
	atomic_store(&d->news, true);
	pthread_cond_broadcast(&d->cond);
}

static void *worker_main(void *arg)
{
	struct gs_debuginfod *d = arg;
	debuginfod_client *c = d->lib.begin();

	worker_self = d;
	if (c)
		d->lib.set_progressfn(c, progress);
	pthread_mutex_lock(&d->lock);
	while (!atomic_load(&d->stop)) {
		struct request *r = next_queued(d);

		if (!r) {
			pthread_cond_wait(&d->cond, &d->lock);
			continue;
		}
		r->state = REQ_FETCHING;
		fetch_one(d, c, r);
	}
	pthread_mutex_unlock(&d->lock);
	if (c)
		d->lib.end(c);
	return NULL;
}

static uint64_t wait_budget_ns(void)
{
	const char *env = getenv("DEBUGINFOD_TIMEOUT");
	char *end;
	long s = env ? strtol(env, &end, 10) : -1;

	if (!env || end == env || *end || s < 0 || s > 300)
		s = GS_DEBUGINFOD_WAIT_S;
	return (uint64_t)s * 1000000000ULL;
}

struct gs_debuginfod *gs_debuginfod__new(void)
{
	struct gs_debuginfod *d;
	pthread_condattr_t attr;
	sigset_t all, old;
	int err;

	if (!gs_debuginfod_enabled()) {
		errno = ENOTCONN;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	err = load_lib(&d->lib);
	if (err)
		goto out_free;
	d->wait_left_ns = wait_budget_ns();
	pthread_mutex_init(&d->lock, NULL);
	/* timed waits count on the monotonic clock, as the wait budget does */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&d->cond, &attr);
	pthread_condattr_destroy(&attr);
	/* signals go to the threads that wait for them, never to the worker */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = -pthread_create(&d->worker, NULL, worker_main, d);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		goto out_close;
	return d;

out_close:
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	dlclose(d->lib.handle);
out_free:
	free(d);
	errno = -err;
	return NULL;
}

void gs_debuginfod__free(struct gs_debuginfod *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	atomic_store(&d->stop, true);
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->worker, NULL);
	for (size_t i = 0; i < d->nr_reqs; i++)
		if (d->reqs[i].state == REQ_DONE && d->reqs[i].fd >= 0)
			close(d->reqs[i].fd);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	/* the library stays loaded: libcurl's atexit handlers may still refer to it */
	free(d);
}

static bool valid_hex(const char *hex)
{
	size_t n = strspn(hex, "0123456789abcdef");

	return n >= 4 && n % 2 == 0 && n <= 2 * 64 && !hex[n];
}

int gs_debuginfod__request(struct gs_debuginfod *d, const char *hex)
{
	int err = 0;

	if (!valid_hex(hex))
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nr_reqs; i++)
		if (!strcmp(d->reqs[i].hex, hex))
			goto out_unlock;
	if (d->nr_reqs == GS_DEBUGINFOD_MAX) {
		err = -ENOSPC;
		goto out_unlock;
	}
	strcpy(d->reqs[d->nr_reqs].hex, hex); /* bounded by valid_hex() */
	d->reqs[d->nr_reqs].state = REQ_QUEUED;
	d->reqs[d->nr_reqs].fd = -1;
	d->nr_reqs++;
	d->pending++;
	pthread_cond_broadcast(&d->cond);
out_unlock:
	pthread_mutex_unlock(&d->lock);
	return err;
}

bool gs_debuginfod__has_news(struct gs_debuginfod *d)
{
	return d && atomic_load(&d->news);
}

int gs_debuginfod__take(struct gs_debuginfod *d, char *hex)
{
	int fd = -EAGAIN;

	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->nr_reqs; i++) {
		struct request *r = &d->reqs[i];

		if (r->state != REQ_DONE)
			continue;
		memcpy(hex, r->hex, sizeof(r->hex));
		fd = r->fd;
		r->state = REQ_TAKEN;
		r->fd = -1;
		break;
	}
	if (fd == -EAGAIN)
		atomic_store(&d->news, false);
	pthread_mutex_unlock(&d->lock);
	return fd;
}

size_t gs_debuginfod__wait(struct gs_debuginfod *d)
{
	uint64_t start = gs_clock_ns(CLOCK_MONOTONIC), deadline = start + d->wait_left_ns;
	struct timespec ts = { .tv_sec = (time_t)(deadline / 1000000000ULL),
			       .tv_nsec = (long)(deadline % 1000000000ULL) };
	uint64_t spent;
	size_t pending;

	pthread_mutex_lock(&d->lock);
	while (d->pending && gs_clock_ns(CLOCK_MONOTONIC) < deadline)
		if (pthread_cond_timedwait(&d->cond, &d->lock, &ts) == ETIMEDOUT)
			break;
	pending = d->pending;
	pthread_mutex_unlock(&d->lock);
	spent = gs_clock_ns(CLOCK_MONOTONIC) - start;
	d->wait_left_ns -= spent < d->wait_left_ns ? spent : d->wait_left_ns;
	return pending;
}
