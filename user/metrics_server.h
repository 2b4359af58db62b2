/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* metrics_server.h: serves Prometheus text exposition over HTTP (libmicrohttpd). */
#ifndef GS_METRICS_SERVER_H
#define GS_METRICS_SERVER_H

#include <stddef.h>
#include <stdint.h>

struct gs_metrics_server;

/*
 * Listens on host:port (a numeric address or a name; port 0 picks a free one) and serves
 * GET /metrics from its own thread with the text last published. Returns 0 or -errno
 * (logged); the caller frees with gs_metrics_server__free().
 */
int gs_metrics_server__start(struct gs_metrics_server **out, const char *host, uint16_t port);
/* The port it listens on (useful after asking for port 0). */
uint16_t gs_metrics_server__port(const struct gs_metrics_server *s);
/* Replaces the text served (copied). Returns 0 or -ENOMEM, keeping the old text. */
int gs_metrics_server__publish(struct gs_metrics_server *s, const char *text, size_t len);
void gs_metrics_server__free(struct gs_metrics_server *s);

#endif /* GS_METRICS_SERVER_H */
