/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* metrics_server.h: serves Prometheus text exposition over HTTP (libmicrohttpd). */
#ifndef GS_METRICS_SERVER_H
#define GS_METRICS_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define GS_METRICS_ALLOW_MAX 16

struct gs_metrics_server;

/* A client address prefix: IPv4 is held as IPv4-mapped IPv6 (::ffff:a.b.c.d, bits + 96). */
struct gs_net_prefix {
	uint8_t addr[16];
	uint8_t bits; /* 0..128 */
};

/* Whether the client address sa (AF_INET or AF_INET6, mapped or not) falls in p. */
bool gs_net_prefix__match(const struct gs_net_prefix *p, const struct sockaddr *sa);

/*
 * Listens on host:port (a numeric address or a name; port 0 picks a free one) and serves
 * GET /metrics from its own thread with the text last published. The exposition names every
 * followed process (pid, comm), so whoever can connect learns them: with nr_allow > 0 only
 * clients whose address matches one of allow are answered, others are refused at accept.
 * Returns 0 or -errno (logged); the caller frees with gs_metrics_server__free().
 */
int gs_metrics_server__start(struct gs_metrics_server **out, const char *host, uint16_t port,
			     const struct gs_net_prefix *allow, size_t nr_allow);
/* The port it listens on (useful after asking for port 0). */
uint16_t gs_metrics_server__port(const struct gs_metrics_server *s);
/* Replaces the text served (copied). Returns 0 or -ENOMEM, keeping the old text. */
int gs_metrics_server__publish(struct gs_metrics_server *s, const char *text, size_t len);
void gs_metrics_server__free(struct gs_metrics_server *s);

#endif /* GS_METRICS_SERVER_H */
