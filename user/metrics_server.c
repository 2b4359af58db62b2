// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * metrics_server.c: a /metrics endpoint on libmicrohttpd, fed snapshots by the main loop, and
 * /debug/pprof/profile: the latest CPU profile, or (?seconds=N) one the main loop runs for it.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include "user/log.h"
#include "user/metrics_server.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"
/* the most of a /debug/pprof/symbol request read (addresses, "0x1f+0x2e...") */
#define GS_PPROF_SYMBOL_MAX (4U << 20)

/*
 * The main loop publishes whole snapshots; the server thread only copies the latest under
 * the lock, so a scrape never sees a half-written exposition.
 */
struct gs_metrics_server {
	struct MHD_Daemon *mhd;
	pthread_mutex_t lock;
	char *text;
	size_t len;
	uint16_t port;
	struct gs_net_prefix allow[GS_METRICS_ALLOW_MAX];
	size_t nr_allow; /* 0: anyone who reaches the address */
	/* pprof: one client at a time may ask for a profile; it waits on cond for the result */
	pthread_cond_t cond;
	void *profile; /* the latest, gzip pprof */
	size_t profile_len;
	uint64_t profile_gen, fail_gen; /* bumped by each publish, each failure */
	unsigned int want_secs;		/* a client waits for a profile this long; 0: none */
	bool asked;			/* want_secs was handed to the main loop */
	bool stopping;
};

bool gs_net_prefix__match(const struct gs_net_prefix *p, const struct sockaddr *sa)
{
	uint8_t addr[16] = { [10] = 0xff, [11] = 0xff };
	unsigned int whole = p->bits / 8, rest = p->bits % 8;

	if (sa->sa_family == AF_INET)
		memcpy(addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(addr, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
	else
		return false;
	if (p->bits > 128 || memcmp(addr, p->addr, whole))
		return false;
	return !rest || !((addr[whole] ^ p->addr[whole]) & (0xff00 >> rest));
}

/* libmicrohttpd asks before it reads a byte of the request: unlisted clients get nothing. */
static enum MHD_Result allowed(void *cls, const struct sockaddr *addr, socklen_t len)
{
	struct gs_metrics_server *s = cls;

	(void)len;
	for (size_t i = 0; i < s->nr_allow; i++)
		if (gs_net_prefix__match(&s->allow[i], addr))
			return MHD_YES;
	return s->nr_allow ? MHD_NO : MHD_YES;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int status, const char *body,
			     size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, (void *)body, mode);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE,
				status == MHD_HTTP_OK ? CONTENT_TYPE : "text/plain");
	ret = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result reply_profile(struct MHD_Connection *conn, void *data, size_t len)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, data, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(data);
		return MHD_NO;
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(resp, "Content-Disposition", "attachment; filename=\"profile\"");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

/* Under the lock: waits (bounded) until the main loop published or failed the asked profile. */
static bool wait_profile(struct gs_metrics_server *s, unsigned int secs)
{
	uint64_t gen = s->profile_gen, fails = s->fail_gen;
	struct timespec deadline;

	clock_gettime(CLOCK_REALTIME, &deadline);
	/* the profiler's start (BPF verification) and its pprof file come on top of secs */
	deadline.tv_sec += (time_t)secs + GS_PPROF_WAIT_EXTRA_S;
	s->want_secs = secs;
	s->asked = false;
	while (s->profile_gen == gen && s->fail_gen == fails && !s->stopping)
		if (pthread_cond_timedwait(&s->cond, &s->lock, &deadline) == ETIMEDOUT)
			break;
	s->want_secs = 0;
	return s->profile_gen != gen;
}

/* GET /debug/pprof/profile: the latest profile; ?seconds=N: a new one, N seconds long. */
static enum MHD_Result handle_profile(struct gs_metrics_server *s, struct MHD_Connection *conn)
{
	static const char none[] = "no profile yet: ask for one with ?seconds=N\n";
	static const char busy[] = "a profile is already running: try again later\n";
	static const char failed[] = "the profile failed (see the daemon's log)\n";
	static const char bad[] = "seconds: a whole number from 1 to " GS_PPROF_MAX_TEXT "\n";
	const char *arg = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "seconds");
	unsigned long secs = 0;
	void *copy = NULL;
	size_t len = 0;
	char *end;

	if (arg) {
		errno = 0;
		secs = strtoul(arg, &end, 10);
		if (errno || *end || end == arg || arg[0] == '-' || secs < 1 ||
		    secs > GS_PPROF_MAX_SECONDS)
			return reply(conn, MHD_HTTP_BAD_REQUEST, bad, sizeof(bad) - 1,
				     MHD_RESPMEM_PERSISTENT);
	}
	pthread_mutex_lock(&s->lock);
	if (secs && s->want_secs) {
		pthread_mutex_unlock(&s->lock);
		return reply(conn, MHD_HTTP_TOO_MANY_REQUESTS, busy, sizeof(busy) - 1,
			     MHD_RESPMEM_PERSISTENT);
	}
	if ((!secs || wait_profile(s, (unsigned int)secs)) && s->profile) {
		copy = malloc(s->profile_len);
		len = s->profile_len;
		if (copy)
			memcpy(copy, s->profile, len);
	}
	pthread_mutex_unlock(&s->lock);
	if (copy)
		return reply_profile(conn, copy, len);
	if (!secs)
		return reply(conn, MHD_HTTP_NOT_FOUND, none, sizeof(none) - 1,
			     MHD_RESPMEM_PERSISTENT);
	return reply(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, failed, sizeof(failed) - 1,
		     MHD_RESPMEM_PERSISTENT);
}

/*
 * /debug/pprof/symbol: `go tool pprof` posts the addresses of frames a profile left unnamed
 * when it fetched it from a /debug/pprof/ path, and gives up on an error. The profile has
 * every name gpusnoop could find: the answer names nothing more (the body is read, not kept).
 */
static enum MHD_Result handle_symbol(struct MHD_Connection *conn, const char *method,
				     size_t *upload_data_size, void **req_cls)
{
	static const char count[] = "num_symbols: 0\n";
	/* the bytes read so far, plus one (0: the request's first call), in the pointer itself */
	uintptr_t seen = (uintptr_t)*req_cls;

	if (strcmp(method, MHD_HTTP_METHOD_POST))
		return reply(conn, MHD_HTTP_OK, count, sizeof(count) - 1, MHD_RESPMEM_PERSISTENT);
	if (!seen) {
		*req_cls = (void *)(uintptr_t)1;
		return MHD_YES;
	}
	if (*upload_data_size) {
		/* a client that sends without end is cut off, not read forever */
		if (seen - 1 + *upload_data_size > GS_PPROF_SYMBOL_MAX)
			return MHD_NO;
		*req_cls = (void *)(seen + *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	return reply(conn, MHD_HTTP_OK, "", 0, MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **req_cls)
{
	static const char not_found[] = "not found: try /metrics or /debug/pprof/profile\n";
	static const char bad_method[] = "only GET\n";
	struct gs_metrics_server *s = cls;
	enum MHD_Result ret;
	char *copy;
	size_t len;

	if (!strcmp(url, "/debug/pprof/symbol"))
		return handle_symbol(conn, method, upload_data_size, req_cls);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, bad_method, sizeof(bad_method) - 1,
			     MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/debug/pprof/profile"))
		return handle_profile(s, conn);
	if (strcmp(url, "/metrics"))
		return reply(conn, MHD_HTTP_NOT_FOUND, not_found, sizeof(not_found) - 1,
			     MHD_RESPMEM_PERSISTENT);
	pthread_mutex_lock(&s->lock);
	len = s->len;
	copy = malloc(len + 1);
	if (copy)
		memcpy(copy, s->text ? s->text : "", len);
	pthread_mutex_unlock(&s->lock);
	if (!copy)
		return MHD_NO;
	ret = reply(conn, MHD_HTTP_OK, copy, len, MHD_RESPMEM_MUST_FREE);
	if (ret != MHD_YES)
		free(copy);
	return ret;
}

int gs_metrics_server__start(struct gs_metrics_server **out, const char *host, uint16_t port,
			     const struct gs_net_prefix *allow, size_t nr_allow)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct gs_metrics_server *s;
	struct addrinfo *ai;
	char service[8];
	/* a thread a client: one waiting for its profile holds up no scrape */
	unsigned int flags =
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG;
	const union MHD_DaemonInfo *info;
	int err;

	if (nr_allow > GS_METRICS_ALLOW_MAX)
		return -EINVAL;
	snprintf(service, sizeof(service), "%u", port);
	err = getaddrinfo(host, service, &hints, &ai);
	if (err) {
		gs_err("metrics address %s: %s", host, gai_strerror(err));
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		freeaddrinfo(ai);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (nr_allow)
		memcpy(s->allow, allow, nr_allow * sizeof(*allow));
	s->nr_allow = nr_allow;
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* select() takes no descriptor past 1024, and uprobe links can use that many */
	if (MHD_is_feature_supported(MHD_FEATURE_POLL) == MHD_YES)
		flags |= MHD_USE_POLL;
	/* port 0 here: MHD_OPTION_SOCK_ADDR carries the real one */
	s->mhd = MHD_start_daemon(flags, 0, allowed, s, handle, s, MHD_OPTION_SOCK_ADDR,
				  ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT, 64U,
				  MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!s->mhd) {
		err = errno ? -errno : -EADDRINUSE;
		gs_err("metrics endpoint %s:%u: cannot listen: %s", host, port, strerror(-err));
		gs_metrics_server__free(s);
		return err;
	}
	info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : port;
	*out = s;
	return 0;
}

uint16_t gs_metrics_server__port(const struct gs_metrics_server *s)
{
	return s->port;
}

int gs_metrics_server__publish(struct gs_metrics_server *s, const char *text, size_t len)
{
	char *copy = malloc(len + 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, text, len);
	copy[len] = '\0';
	pthread_mutex_lock(&s->lock);
	free(s->text);
	s->text = copy;
	s->len = len;
	pthread_mutex_unlock(&s->lock);
	return 0;
}

int gs_metrics_server__publish_profile(struct gs_metrics_server *s, const void *data, size_t len)
{
	void *copy = malloc(len ? len : 1);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, data, len);
	pthread_mutex_lock(&s->lock);
	free(s->profile);
	s->profile = copy;
	s->profile_len = len;
	s->profile_gen++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void gs_metrics_server__fail_profile(struct gs_metrics_server *s)
{
	pthread_mutex_lock(&s->lock);
	s->fail_gen++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
}

unsigned int gs_metrics_server__take_profile_request(struct gs_metrics_server *s)
{
	unsigned int secs = 0;

	pthread_mutex_lock(&s->lock);
	if (s->want_secs && !s->asked) {
		secs = s->want_secs;
		s->asked = true;
	}
	pthread_mutex_unlock(&s->lock);
	return secs;
}

void gs_metrics_server__free(struct gs_metrics_server *s)
{
	if (!s)
		return;
	/* a client waiting for a profile gives up now: stopping joins its thread */
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->mhd)
		MHD_stop_daemon(s->mhd);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s->text);
	free(s->profile);
	free(s);
}
