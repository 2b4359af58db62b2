/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ctl_socket.h: the daemon's unix control socket: one request line in, a reply out. */
#ifndef GS_CTL_SOCKET_H
#define GS_CTL_SOCKET_H

#include <poll.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * Any local user may connect, so nothing a client does may hold the daemon: sockets are
 * non-blocking and polled with the daemon's other descriptors, and each connection has
 * deadlines of its own. A request line gets GS_CTL_REQUEST_MS in all, however it is dripped;
 * a reply GS_CTL_REPLY_MS to be read. A late or overlong request is answered with an error
 * line ("error: request timed out", "error: request too long (...)"), then closed.
 */
#define GS_CTL_LINE_MAX	  1024 /* bytes in a request line, its newline included */
#define GS_CTL_REQUEST_MS 500
#define GS_CTL_REPLY_MS	  5000
/* connections at once; one non-root uid gets at most GS_CTL_CONNS_PER_UID of them */
#define GS_CTL_CONNS_MAX     64
#define GS_CTL_CONNS_PER_UID 4
/* descriptors gs_ctl_server__pollfds() may fill: the listener and every connection */
#define GS_CTL_POLLFDS_MAX (1 + GS_CTL_CONNS_MAX)

struct gs_ctl_server;

/* Who is asking, from SO_PEERCRED (the kernel's word, not the client's). */
struct gs_ctl_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/*
 * Writes the reply to out (a memory stream: the server sends it without blocking). request
 * is the line without its newline, at most GS_CTL_LINE_MAX - 1 bytes, with no NUL.
 */
typedef void (*gs_ctl_handler_fn)(void *ctx, const struct gs_ctl_peer *peer, char *request,
				  FILE *out);

/*
 * Listens on path (a stale socket there is replaced; any other file is an error, and a
 * symlink is never followed). Anyone may connect; the handler decides per request.
 * Returns 0 or -errno (logged); gs_ctl_server__free() unlinks the socket.
 */
int gs_ctl_server__open(struct gs_ctl_server **out, const char *path);
/*
 * Fills fds (room for GS_CTL_POLLFDS_MAX) with what to poll now: the listener and each
 * connection, for reading or writing as its state needs. Returns how many it filled.
 */
size_t gs_ctl_server__pollfds(const struct gs_ctl_server *s, struct pollfd *fds);
/* Milliseconds until the next connection deadline (0: one is due), -1 when none is pending. */
int gs_ctl_server__timeout_ms(const struct gs_ctl_server *s);
/*
 * Accepts what waits, reads what arrived, answers complete requests, sends what the peers
 * will take and closes what is done or late. Never blocks. Returns the requests answered.
 */
int gs_ctl_server__serve(struct gs_ctl_server *s, gs_ctl_handler_fn handler, void *ctx);
/* Connections open now (for tests and status). */
size_t gs_ctl_server__connections(const struct gs_ctl_server *s);
void gs_ctl_server__free(struct gs_ctl_server *s);

/*
 * Client side: sends request (one line) to the daemon at path and copies its reply to out,
 * waiting at most timeout_ms in all. Returns 0 or -errno (logged).
 */
int gs_ctl_request(const char *path, const char *request, FILE *out, int timeout_ms);

#endif /* GS_CTL_SOCKET_H */
