/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ctl_socket.h: the daemon's unix control socket: one request line in, a reply out. */
#ifndef GS_CTL_SOCKET_H
#define GS_CTL_SOCKET_H

#include <stdio.h>
#include <sys/types.h>

struct gs_ctl_server;

/* Who is asking, from SO_PEERCRED (the kernel's word, not the client's). */
struct gs_ctl_peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
};

/* Writes the reply to out; the connection is closed after it returns. */
typedef void (*gs_ctl_handler_fn)(void *ctx, const struct gs_ctl_peer *peer, char *request,
				  FILE *out);

/*
 * Listens on path (a stale socket there is replaced; any other file is an error, and a
 * symlink is never followed). Anyone may connect; the handler decides per request.
 * Returns 0 or -errno (logged); gs_ctl_server__free() unlinks the socket.
 */
int gs_ctl_server__open(struct gs_ctl_server **out, const char *path);
/* The listening fd, for poll(). */
int gs_ctl_server__fd(const struct gs_ctl_server *s);
/* Answers every connection waiting now; never blocks on accept. Returns how many. */
int gs_ctl_server__serve(struct gs_ctl_server *s, gs_ctl_handler_fn handler, void *ctx);
void gs_ctl_server__free(struct gs_ctl_server *s);

/*
 * Client side: sends request (one line) to the daemon at path and copies its reply to out.
 * Returns 0 or -errno (logged).
 */
int gs_ctl_request(const char *path, const char *request, FILE *out);

#endif /* GS_CTL_SOCKET_H */
