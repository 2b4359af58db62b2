// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ctl_socket.c: unix stream socket with SO_PEERCRED, one request per connection, never blocking. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "user/ctl_socket.h"
#include "user/log.h"

/*
 * After its reply a connection is shut for writing and its input discarded for this long,
 * so that a close with unread bytes (which a unix socket turns into ECONNRESET at the peer)
 * never hides the reply from a client that is still sending.
 */
#define LINGER_MS 500
/* root keeps this many connections for itself however many other users hold */
#define CONNS_ROOT_RESERVED 8
/* accepted per serve call: a flood of connects cannot keep the loop from its events */
#define ACCEPTS_PER_SERVE 64
#define NS_PER_MS	  1000000ULL

enum conn_state {
	CONN_READ,   /* gathering the request line */
	CONN_WRITE,  /* sending the reply */
	CONN_LINGER, /* replied and shut for writing: discarding input until EOF */
};

struct conn {
	int fd;
	enum conn_state state;
	struct gs_ctl_peer peer;
	uint64_t deadline_ns;		/* of the current state; CLOCK_MONOTONIC */
	char line[GS_CTL_LINE_MAX + 1]; /* the line, its newline, and a NUL in place of it */
	size_t used;
	char *reply;
	size_t reply_len, reply_off;
};

struct gs_ctl_server {
	int fd;
	char *path;
	struct conn conns[GS_CTL_CONNS_MAX];
	size_t nr_conns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int fill_addr(struct sockaddr_un *addr, const char *path)
{
	memset(addr, 0, sizeof(*addr));
	addr->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(addr->sun_path)) {
		gs_err("control socket %s: path too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(addr->sun_path, path);
	return 0;
}

/* Removes a socket left by an earlier daemon; refuses to touch anything else. */
static int remove_stale(const char *path)
{
	struct stat st;

	if (lstat(path, &st)) {
		if (errno == ENOENT)
			return 0;
		gs_err("control socket %s: %s", path, strerror(errno));
		return -errno;
	}
	if (!S_ISSOCK(st.st_mode)) {
		gs_err("control socket %s: exists and is not a socket", path);
		return -EEXIST;
	}
	if (unlink(path)) {
		gs_err("control socket %s: %s", path, strerror(errno));
		return -errno;
	}
	return 0;
}

int gs_ctl_server__open(struct gs_ctl_server **out, const char *path)
{
	struct sockaddr_un addr;
	struct gs_ctl_server *s;
	int err;

	err = fill_addr(&addr, path);
	if (err)
		return err;
	err = remove_stale(path);
	if (err)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	s->path = strdup(path);
	if (s->fd < 0 || !s->path) {
		err = s->path ? -errno : -ENOMEM;
		goto out_err;
	}
	if (bind(s->fd, (struct sockaddr *)&addr, sizeof(addr)) || listen(s->fd, 64)) {
		err = -errno;
		goto out_err;
	}
	/* non-owners may connect: each request is checked against SO_PEERCRED */
	if (chmod(path, 0666)) {
		err = -errno;
		goto out_err;
	}
	*out = s;
	return 0;
out_err:
	gs_err("control socket %s: %s", path, strerror(-err));
	gs_ctl_server__free(s);
	return err;
}

size_t gs_ctl_server__pollfds(const struct gs_ctl_server *s, struct pollfd *fds)
{
	size_t n = 0;

	fds[n++] = (struct pollfd){ .fd = s->fd, .events = POLLIN };
	for (size_t i = 0; i < s->nr_conns; i++) {
		const struct conn *c = &s->conns[i];

		fds[n++] = (struct pollfd){ .fd = c->fd,
					    .events = c->state == CONN_WRITE ? POLLOUT : POLLIN };
	}
	return n;
}

int gs_ctl_server__timeout_ms(const struct gs_ctl_server *s)
{
	uint64_t now = now_ns(), first = UINT64_MAX;

	for (size_t i = 0; i < s->nr_conns; i++)
		if (s->conns[i].deadline_ns < first)
			first = s->conns[i].deadline_ns;
	if (first == UINT64_MAX)
		return -1;
	if (first <= now)
		return 0;
	/* rounded up: waking a little early would only find nothing due */
	return (int)((first - now + NS_PER_MS - 1) / NS_PER_MS);
}

size_t gs_ctl_server__connections(const struct gs_ctl_server *s)
{
	return s->nr_conns;
}

static void conn_close(struct gs_ctl_server *s, struct conn *c)
{
	close(c->fd);
	free(c->reply);
	*c = s->conns[--s->nr_conns];
}

/* Sends what the peer takes now; never raises SIGPIPE. Returns -errno on a dead peer. */
static int conn_send(struct conn *c)
{
	while (c->reply_off < c->reply_len) {
		ssize_t n = send(c->fd, c->reply + c->reply_off, c->reply_len - c->reply_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		c->reply_off += (size_t)n;
	}
	return 0;
}

/* The reply is complete once sent: shut for writing, then discard input until EOF. */
static void conn_replied(struct conn *c)
{
	shutdown(c->fd, SHUT_WR);
	c->state = CONN_LINGER;
	c->deadline_ns = now_ns() + LINGER_MS * NS_PER_MS;
}

/* Queues reply (taking ownership) and sends what fits now. */
static void conn_reply(struct conn *c, char *reply, size_t len)
{
	c->reply = reply;
	c->reply_len = len;
	c->reply_off = 0;
	c->state = CONN_WRITE;
	c->deadline_ns = now_ns() + GS_CTL_REPLY_MS * NS_PER_MS;
}

static void conn_error(struct conn *c, const char *text)
{
	char *copy = strdup(text);

	if (!copy) /* nothing to say: the peer sees EOF */
		conn_replied(c);
	else
		conn_reply(c, copy, strlen(copy));
}

static void conn_answer(struct conn *c, gs_ctl_handler_fn handler, void *ctx)
{
	char *reply = NULL;
	size_t len = 0;
	FILE *out;

	c->line[c->used] = '\0';
	out = open_memstream(&reply, &len);
	if (!out) {
		conn_error(c, "error: out of memory\n");
		return;
	}
	handler(ctx, &c->peer, c->line, out);
	if (fclose(out)) {
		free(reply);
		conn_error(c, "error: out of memory\n");
		return;
	}
	conn_reply(c, reply, len);
}

/* Reads what arrived. Returns true when the request is complete (and answered). */
static bool conn_read(struct conn *c, gs_ctl_handler_fn handler, void *ctx, bool *gone)
{
	for (;;) {
		ssize_t n =
			recv(c->fd, c->line + c->used, sizeof(c->line) - 1 - c->used, MSG_DONTWAIT);
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*gone = errno != EAGAIN && errno != EWOULDBLOCK;
			return false;
		}
		if (n == 0) {
			/* EOF right after a line without its newline is a request too */
			if (!c->used) {
				*gone = true;
				return false;
			}
			conn_answer(c, handler, ctx);
			return true;
		}
		nl = memchr(c->line + c->used, '\n', (size_t)n);
		c->used += (size_t)n;
		if (nl)
			c->used = (size_t)(nl - c->line);
		if (memchr(c->line, '\0', c->used)) {
			conn_error(c, "error: request is not text\n");
			return false;
		}
		if (nl) {
			conn_answer(c, handler, ctx);
			return true;
		}
		if (c->used == GS_CTL_LINE_MAX) { /* and no newline in it */
			char msg[64];

			snprintf(msg, sizeof(msg), "error: request too long (at most %d bytes)\n",
				 GS_CTL_LINE_MAX - 1);
			conn_error(c, msg);
			return false;
		}
	}
}

/* Discards input of a connection that has its reply. Returns true once the peer is done. */
static bool conn_drain(struct conn *c)
{
	char buf[4096];

	/* bounded: a peer sending without end is cut off by the deadline, not served forever */
	for (int i = 0; i < 16; i++) {
		ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno != EAGAIN && errno != EWOULDBLOCK;
		if (n == 0)
			return true;
	}
	return false;
}

static int uid_conns(const struct gs_ctl_server *s, uid_t uid)
{
	int n = 0;

	for (size_t i = 0; i < s->nr_conns; i++)
		n += s->conns[i].peer.uid == uid;
	return n;
}

/*
 * Whether one more connection of peer fits: each non-root uid gets a few, and root always
 * finds a slot free of them, so no user can lock root (or another user) out by holding many.
 */
static bool has_room(const struct gs_ctl_server *s, const struct gs_ctl_peer *peer)
{
	if (s->nr_conns == GS_CTL_CONNS_MAX)
		return false;
	if (peer->uid == 0)
		return true;
	return s->nr_conns < GS_CTL_CONNS_MAX - CONNS_ROOT_RESERVED &&
	       uid_conns(s, peer->uid) < GS_CTL_CONNS_PER_UID;
}

/* Refuses a connection with one line, sent without waiting; the peer may miss it if full. */
static void refuse(int fd, const char *text)
{
	char buf[1024];

	send(fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	/* what it sent already: unread bytes at close would reset the connection */
	for (int i = 0; i < 4 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0; i++)
		;
	close(fd);
}

static void accept_new(struct gs_ctl_server *s)
{
	for (int i = 0; i < ACCEPTS_PER_SERVE; i++) {
		int fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ucred cred;
		socklen_t cred_len = sizeof(cred);
		struct gs_ctl_peer peer;
		struct conn *c;

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				gs_warn("control socket: accept: %s", strerror(errno));
			return;
		}
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len)) {
			gs_warn("control socket: no peer credentials: %s", strerror(errno));
			close(fd);
			continue;
		}
		peer = (struct gs_ctl_peer){ .pid = cred.pid, .uid = cred.uid, .gid = cred.gid };
		if (!has_room(s, &peer)) {
			gs_dbg("control socket: uid %u turned away: busy", peer.uid);
			refuse(fd, "error: busy\n");
			continue;
		}
		c = &s->conns[s->nr_conns++];
		*c = (struct conn){
			.fd = fd,
			.state = CONN_READ,
			.peer = peer,
			.deadline_ns = now_ns() + GS_CTL_REQUEST_MS * NS_PER_MS,
		};
	}
}

/* Moves one connection on as far as it goes now. Returns false once it is closed. */
static bool conn_step(struct gs_ctl_server *s, struct conn *c, gs_ctl_handler_fn handler, void *ctx,
		      int *served)
{
	bool gone = false;

	if (c->state == CONN_READ) {
		if (conn_read(c, handler, ctx, &gone))
			(*served)++;
		if (gone) {
			conn_close(s, c);
			return false;
		}
		/* one deadline for the whole line, however slowly it is dripped */
		if (c->state == CONN_READ && now_ns() >= c->deadline_ns)
			conn_error(c, "error: request timed out\n");
	}
	if (c->state == CONN_WRITE) {
		if (conn_send(c) || now_ns() >= c->deadline_ns) {
			/* a peer that does not read its reply in time gets no more of it */
			conn_close(s, c);
			return false;
		}
		if (c->reply_off == c->reply_len)
			conn_replied(c);
	}
	if (c->state == CONN_LINGER && (conn_drain(c) || now_ns() >= c->deadline_ns)) {
		conn_close(s, c);
		return false;
	}
	return true;
}

int gs_ctl_server__serve(struct gs_ctl_server *s, gs_ctl_handler_fn handler, void *ctx)
{
	int served = 0;

	accept_new(s);
	for (size_t i = 0; i < s->nr_conns;)
		if (conn_step(s, &s->conns[i], handler, ctx, &served))
			i++; /* a closed one's slot now holds the last: step it next */
	return served;
}

void gs_ctl_server__free(struct gs_ctl_server *s)
{
	if (!s)
		return;
	while (s->nr_conns)
		conn_close(s, &s->conns[0]);
	if (s->fd >= 0)
		close(s->fd);
	if (s->path)
		unlink(s->path);
	free(s->path);
	free(s);
}

int gs_ctl_request(const char *path, const char *request, FILE *out, int timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * NS_PER_MS;
	struct sockaddr_un addr;
	char buf[4096];
	ssize_t n;
	int fd, err;

	err = fill_addr(&addr, path);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		err = -errno;
		gs_err("cannot reach the daemon at %s: %s", path, strerror(-err));
		if (fd >= 0)
			close(fd);
		return err;
	}
	if (dprintf(fd, "%s\n", request) < 0) {
		err = -errno;
		gs_err("sending to %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	shutdown(fd, SHUT_WR);
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		uint64_t now = now_ns();
		int ready;

		ready = now < deadline ? poll(&pfd, 1, (int)((deadline - now) / NS_PER_MS) + 1) : 0;
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready == 0) {
			gs_err("no reply from the daemon at %s within %d ms", path, timeout_ms);
			close(fd);
			return -ETIMEDOUT;
		}
		n = ready < 0 ? -1 : read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		fwrite(buf, 1, (size_t)n, out);
	}
	err = n < 0 ? -errno : 0;
	if (err)
		gs_err("reading from %s: %s", path, strerror(-err));
	close(fd);
	return err;
}
