// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_pprof_http.c: /debug/pprof/profile of the metrics server: latest, on demand, one at once. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "user/metrics_server.h"
#include "tests/unit/harness.h"

/*
 * A socket to the server, every send and receive bounded: a connection the server cut off
 * may linger half-open until its listening thread next wakes, so a send into it could block.
 */
static int connect_bounded(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 10 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* GET path over HTTP/1.0 on loopback: the status, and the body into body (NUL-ended). */
static int get(uint16_t port, const char *path, char *body, size_t len)
{
	char req[256], buf[4096];
	size_t used = 0;
	int fd, status = -1;
	ssize_t n;
	char *sep;

	fd = connect_bounded(port);
	if (fd < 0)
		goto out;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		goto out;
	while (used < sizeof(buf) - 1 && (n = read(fd, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
	sep = strstr(buf, "\r\n\r\n");
	snprintf(body, len, "%s", sep ? sep + 4 : "");
out:
	if (fd >= 0)
		close(fd);
	return status;
}

/* POST len bytes of 'x' to /debug/pprof/symbol; the status, -1 when the server hung up. */
static int post_symbols(uint16_t port, size_t len)
{
	char head[128], chunk[65536], buf[512];
	int fd, status = -1;
	ssize_t n;

	memset(chunk, 'x', sizeof(chunk));
	fd = connect_bounded(port);
	if (fd < 0)
		goto out;
	snprintf(head, sizeof(head),
		 "POST /debug/pprof/symbol HTTP/1.0\r\nContent-Length: %zu\r\n\r\n", len);
	if (write(fd, head, strlen(head)) < 0)
		goto out;
	for (size_t sent = 0; sent < len; sent += (size_t)n) {
		n = send(fd, chunk, len - sent < sizeof(chunk) ? len - sent : sizeof(chunk),
			 MSG_NOSIGNAL);
		if (n <= 0)
			goto out;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	if (n <= 0 || sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
		status = -1;
out:
	if (fd >= 0)
		close(fd);
	return status;
}

GS_TEST(symbol_requests_are_answered_and_bounded)
{
	struct gs_metrics_server *s = NULL;
	char body[64];
	uint16_t port;

	if (!GS_EXPECT_EQ(gs_metrics_server__start(&s, "127.0.0.1", 0, NULL, 0), 0))
		return;
	port = gs_metrics_server__port(s);
	/* go tool pprof asks to name what is left unnamed: nothing more, and no error */
	GS_EXPECT_EQ(post_symbols(port, 1000), 200);
	GS_EXPECT_EQ(get(port, "/debug/pprof/symbol", body, sizeof(body)), 200);
	GS_EXPECT_STR_EQ(body, "num_symbols: 0\n");
	/* past 4 MiB the client is cut off */
	GS_EXPECT(post_symbols(port, 8U << 20) != 200);
	gs_metrics_server__free(s);
}

struct waiter {
	uint16_t port;
	const char *path;
	int status;
	char body[256];
};

static void *wait_for(void *arg)
{
	struct waiter *w = arg;

	w->status = get(w->port, w->path, w->body, sizeof(w->body));
	return NULL;
}

/* Waits (bounded) until a client asked the main loop for a profile; its seconds. */
static unsigned int asked(struct gs_metrics_server *s)
{
	unsigned int secs = 0;

	for (int i = 0; i < 500 && !secs; i++) {
		secs = gs_metrics_server__take_profile_request(s);
		if (!secs)
			usleep(10000);
	}
	return secs;
}

GS_TEST(latest_and_on_demand_profiles)
{
	struct gs_metrics_server *s = NULL;
	struct waiter w = { .path = "/debug/pprof/profile?seconds=7" };
	char body[256];
	pthread_t t;
	uint16_t port;

	if (!GS_EXPECT_EQ(gs_metrics_server__start(&s, "127.0.0.1", 0, NULL, 0), 0))
		return;
	port = gs_metrics_server__port(s);
	GS_EXPECT_EQ(get(port, "/debug/pprof/profile", body, sizeof(body)), 404);
	GS_EXPECT_EQ(get(port, "/debug/pprof/profile?seconds=61", body, sizeof(body)), 400);
	GS_EXPECT_EQ(get(port, "/debug/pprof/profile?seconds=1x", body, sizeof(body)), 400);
	GS_EXPECT_EQ(gs_metrics_server__take_profile_request(s), 0);
	GS_EXPECT_EQ(gs_metrics_server__publish_profile(s, "first", 5), 0);
	GS_EXPECT_EQ(get(port, "/debug/pprof/profile", body, sizeof(body)), 200);
	GS_EXPECT_STR_EQ(body, "first");
	/* on demand: the main loop is asked once, the client gets what it publishes next */
	w.port = port;
	pthread_create(&t, NULL, wait_for, &w);
	GS_EXPECT_EQ(asked(s), 7);
	GS_EXPECT_EQ(gs_metrics_server__take_profile_request(s), 0);
	/* one at a time; scrapes go on meanwhile */
	GS_EXPECT_EQ(get(port, "/debug/pprof/profile?seconds=1", body, sizeof(body)), 429);
	GS_EXPECT_EQ(gs_metrics_server__publish(s, "m 1\n", 4), 0);
	GS_EXPECT_EQ(get(port, "/metrics", body, sizeof(body)), 200);
	GS_EXPECT_STR_EQ(body, "m 1\n");
	GS_EXPECT_EQ(gs_metrics_server__publish_profile(s, "second", 6), 0);
	pthread_join(t, NULL);
	GS_EXPECT_EQ(w.status, 200);
	GS_EXPECT_STR_EQ(w.body, "second");
	/* a failed one is an error, and the latest stays served */
	pthread_create(&t, NULL, wait_for, &w);
	GS_EXPECT_EQ(asked(s), 7);
	gs_metrics_server__fail_profile(s);
	pthread_join(t, NULL);
	GS_EXPECT_EQ(w.status, 500);
	GS_EXPECT_EQ(get(port, "/debug/pprof/profile", body, sizeof(body)), 200);
	GS_EXPECT_STR_EQ(body, "second");
	/* a client still waiting when the server stops is let go */
	pthread_create(&t, NULL, wait_for, &w);
	GS_EXPECT_EQ(asked(s), 7);
	gs_metrics_server__free(s);
	pthread_join(t, NULL);
	GS_EXPECT(w.status != 200);
}

GS_TEST_MAIN(latest_and_on_demand_profiles, symbol_requests_are_answered_and_bounded)
