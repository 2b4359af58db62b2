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

/*
 * GET /debug/pprof/profile serves the profile last published (404 before the first);
 * ?seconds=N (1 to GS_PPROF_MAX_SECONDS) asks the main loop for a new one, N seconds long,
 * one client at a time (others get 429), and waits for it at most N + GS_PPROF_WAIT_EXTRA_S
 * seconds in its own thread: scrapes go on meanwhile.
 */
#define GS_PPROF_MAX_SECONDS  60
#define GS_PPROF_MAX_TEXT     "60"
#define GS_PPROF_WAIT_EXTRA_S 60
/* Replaces the latest profile (gzip pprof, copied), and answers a waiting client with it. */
int gs_metrics_server__publish_profile(struct gs_metrics_server *s, const void *data, size_t len);
/* The profile a client asked for failed: it gets an error. */
void gs_metrics_server__fail_profile(struct gs_metrics_server *s);
/* Seconds a waiting client asked a profile for, handed out once; 0: none asked. */
unsigned int gs_metrics_server__take_profile_request(struct gs_metrics_server *s);
void gs_metrics_server__free(struct gs_metrics_server *s);

#endif /* GS_METRICS_SERVER_H */
