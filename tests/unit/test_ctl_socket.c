// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_ctl_socket.c: the control socket with real clients: no client holds another or the loop. */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "user/ctl_socket.h"
#include "tests/unit/harness.h"

#define BIG_REPLY (4 << 20) /* far more than a unix socket buffers */

static char dir[64], path[96];
static int answered;

/* Echoes the line; "big" gets BIG_REPLY bytes. */
static void handler(void *ctx, const struct gs_ctl_peer *peer, char *request, FILE *out)
{
	(void)ctx;
	(void)peer;
	answered++;
	if (!strcmp(request, "big")) {
		for (int i = 0; i < BIG_REPLY / 64; i++)
			fprintf(out, "%063d\n", i);
		return;
	}
	fprintf(out, "ok %s\n", request);
}

static struct gs_ctl_server *server(void)
{
	struct gs_ctl_server *s = NULL;

	snprintf(dir, sizeof(dir), "/tmp/gs-ctl-test-XXXXXX");
	if (!mkdtemp(dir))
		return NULL;
	snprintf(path, sizeof(path), "%s/ctl.sock", dir);
	answered = 0;
	if (gs_ctl_server__open(&s, path))
		return NULL;
	return s;
}

static void server_free(struct gs_ctl_server *s)
{
	gs_ctl_server__free(s);
	rmdir(dir);
}

static int client(void)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	strcpy(addr.sun_path, path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(fd);
		return -1;
	}
	return fd;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Serves s (as the daemon's loop would) while reading fd's reply until EOF, for at most 5 s.
 * Returns the bytes read, or -errno when the connection failed instead of ending.
 */
static ssize_t reply_of(struct gs_ctl_server *s, int fd, char *buf, size_t len)
{
	uint64_t deadline = mono_ms() + 5000;
	size_t used = 0;

	while (mono_ms() < deadline) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		gs_ctl_server__serve(s, handler, NULL);
		if (poll(&pfd, 1, 10) <= 0)
			continue;
		n = recv(fd, buf + used, len - 1 - used, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		used += (size_t)n;
		if (used == len - 1)
			break;
	}
	buf[used] = '\0';
	return (ssize_t)used;
}

/* Whether fd has nothing to read yet (no reply, no EOF). */
static bool nothing_yet(int fd)
{
	char c;

	return recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) < 0 && errno == EAGAIN;
}

GS_TEST(a_dripped_line_holds_no_one)
{
	struct gs_ctl_server *s = server();
	char buf[256];
	int slow, quick;

	if (!GS_EXPECT(s))
		return;
	slow = client();
	GS_EXPECT_EQ(send(slow, "sta", 3, 0), 3);
	gs_ctl_server__serve(s, handler, NULL);
	quick = client();
	GS_EXPECT_EQ(send(quick, "status\n", 7, 0), 7);
	/* the complete request is answered while the dripped one is still pending */
	GS_EXPECT_EQ(reply_of(s, quick, buf, sizeof(buf)), 10);
	GS_EXPECT_STR_EQ(buf, "ok status\n");
	GS_EXPECT(nothing_yet(slow));
	close(quick);
	gs_ctl_server__serve(s, handler, NULL); /* sees the EOF after its reply */
	GS_EXPECT_EQ(gs_ctl_server__connections(s), 1);
	GS_EXPECT_EQ(send(slow, "tus\n", 4, 0), 4);
	GS_EXPECT_EQ(reply_of(s, slow, buf, sizeof(buf)), 10);
	GS_EXPECT_STR_EQ(buf, "ok status\n");
	GS_EXPECT_EQ(answered, 2);
	close(slow);
	server_free(s);
}

GS_TEST(one_deadline_for_the_whole_line)
{
	struct gs_ctl_server *s = server();
	uint64_t deadline;
	char buf[256];
	int fd;

	if (!GS_EXPECT(s))
		return;
	fd = client();
	/* a byte at a time, each well within the deadline: the line as a whole is not */
	deadline = mono_ms() + 5000;
	for (int i = 0; nothing_yet(fd) && mono_ms() < deadline; i++) {
		GS_EXPECT_EQ(send(fd, "s", 1, MSG_NOSIGNAL), 1);
		for (int j = 0; j < 10; j++) {
			gs_ctl_server__serve(s, handler, NULL);
			usleep(10000);
		}
	}
	/* the error line, then an orderly EOF: not a reset */
	GS_EXPECT_EQ(reply_of(s, fd, buf, sizeof(buf)), 25);
	GS_EXPECT_STR_EQ(buf, "error: request timed out\n");
	GS_EXPECT_EQ(answered, 0);
	close(fd);
	server_free(s);
}

GS_TEST(silent_client_gets_the_timeout_line)
{
	struct gs_ctl_server *s = server();
	char buf[256];
	int silent, quick;

	if (!GS_EXPECT(s))
		return;
	silent = client();
	gs_ctl_server__serve(s, handler, NULL);
	GS_EXPECT(gs_ctl_server__timeout_ms(s) > 0 &&
		  gs_ctl_server__timeout_ms(s) <= GS_CTL_REQUEST_MS);
	quick = client();
	GS_EXPECT_EQ(send(quick, "status\n", 7, 0), 7);
	GS_EXPECT_EQ(reply_of(s, quick, buf, sizeof(buf)), 10);
	GS_EXPECT(nothing_yet(silent));
	GS_EXPECT_EQ(reply_of(s, silent, buf, sizeof(buf)), 25);
	GS_EXPECT_STR_EQ(buf, "error: request timed out\n");
	close(silent);
	close(quick);
	server_free(s);
}

GS_TEST(a_long_line_gets_its_error_not_a_reset)
{
	struct gs_ctl_server *s = server();
	char line[3000], buf[2048];
	int fd;

	if (!GS_EXPECT(s))
		return;
	fd = client();
	memset(line, 'x', sizeof(line));
	GS_EXPECT_EQ(send(fd, line, sizeof(line), 0), (ssize_t)sizeof(line));
	GS_EXPECT_EQ(reply_of(s, fd, buf, sizeof(buf)), 45);
	GS_EXPECT_STR_EQ(buf, "error: request too long (at most 1023 bytes)\n");
	GS_EXPECT_EQ(answered, 0);
	close(fd);
	gs_ctl_server__serve(s, handler, NULL);
	GS_EXPECT_EQ(gs_ctl_server__connections(s), 0);

	/* 1023 bytes and the newline is the longest line there is */
	fd = client();
	memset(line, ' ', 1023);
	memcpy(line + 1017, "status\n", 7);
	GS_EXPECT_EQ(send(fd, line, 1024, 0), 1024);
	GS_EXPECT_EQ(reply_of(s, fd, buf, sizeof(buf)), 3 + 1023 + 1);
	GS_EXPECT_EQ(answered, 1);
	close(fd);
	server_free(s);
}

GS_TEST(a_client_that_never_reads_holds_no_one)
{
	struct gs_ctl_server *s = server();
	char buf[256];
	int lazy, quick;

	if (!GS_EXPECT(s))
		return;
	lazy = client();
	GS_EXPECT_EQ(send(lazy, "big\n", 4, 0), 4);
	gs_ctl_server__serve(s, handler, NULL); /* returns with most of the reply unsent */
	quick = client();
	GS_EXPECT_EQ(send(quick, "status\n", 7, 0), 7);
	GS_EXPECT_EQ(reply_of(s, quick, buf, sizeof(buf)), 10);
	GS_EXPECT_STR_EQ(buf, "ok status\n");
	close(quick);
	gs_ctl_server__serve(s, handler, NULL);
	GS_EXPECT_EQ(gs_ctl_server__connections(s), 1); /* the lazy one, its reply unread */
	close(lazy);
	server_free(s);
}

GS_TEST(eof_ends_a_line_and_nul_is_refused)
{
	struct gs_ctl_server *s = server();
	char buf[256];
	int fd;

	if (!GS_EXPECT(s))
		return;
	fd = client();
	GS_EXPECT_EQ(send(fd, "status", 6, 0), 6);
	shutdown(fd, SHUT_WR);
	GS_EXPECT_EQ(reply_of(s, fd, buf, sizeof(buf)), 10);
	GS_EXPECT_STR_EQ(buf, "ok status\n");
	close(fd);
	fd = client();
	GS_EXPECT_EQ(send(fd, "sta\0tus\n", 8, 0), 8);
	GS_EXPECT_EQ(reply_of(s, fd, buf, sizeof(buf)), 27);
	GS_EXPECT_STR_EQ(buf, "error: request is not text\n");
	close(fd);
	GS_EXPECT_EQ(answered, 1);
	server_free(s);
}

GS_TEST(connections_are_bounded)
{
	struct gs_ctl_server *s = server();
	int fds[GS_CTL_CONNS_MAX + 1], n = 0, busy = -1;
	/* root may hold every slot; another uid a few */
	int room = getuid() ? GS_CTL_CONNS_PER_UID : GS_CTL_CONNS_MAX;
	char buf[64];

	if (!GS_EXPECT(s))
		return;
	while (n <= GS_CTL_CONNS_MAX && busy < 0) {
		fds[n] = client();
		if (!GS_EXPECT(fds[n] >= 0))
			break;
		gs_ctl_server__serve(s, handler, NULL);
		if (!nothing_yet(fds[n]))
			busy = n;
		n++;
	}
	GS_EXPECT_EQ(busy, room);
	GS_EXPECT_EQ(gs_ctl_server__connections(s), (size_t)room);
	if (busy >= 0) {
		GS_EXPECT_EQ(recv(fds[busy], buf, sizeof(buf) - 1, 0), 12);
		buf[12] = '\0';
		GS_EXPECT_STR_EQ(buf, "error: busy\n");
	}
	for (int i = 0; i < n; i++)
		close(fds[i]);
	server_free(s);
}

GS_TEST(client_gives_up_on_a_silent_daemon)
{
	struct gs_ctl_server *s = server();
	char *reply = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&reply, &len);

	if (!GS_EXPECT(s && out))
		return;
	/* nobody serves s: the request waits in its backlog */
	GS_EXPECT_EQ(gs_ctl_request(path, "status", out, 100), -ETIMEDOUT);
	fclose(out);
	free(reply);
	server_free(s);
}

GS_TEST_MAIN(a_dripped_line_holds_no_one, one_deadline_for_the_whole_line,
	     silent_client_gets_the_timeout_line, a_long_line_gets_its_error_not_a_reset,
	     a_client_that_never_reads_holds_no_one, eof_ends_a_line_and_nul_is_refused,
	     connections_are_bounded, client_gives_up_on_a_silent_daemon)
