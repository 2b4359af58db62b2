/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* daemon_config.h: the `gpusnoop daemon` settings, from defaults, a config file and flags. */
#ifndef GS_DAEMON_CONFIG_H
#define GS_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define GS_DAEMON_PATH_MAX 256

struct gs_daemon_config {
	char output_dir[GS_DAEMON_PATH_MAX];
	char socket_path[GS_DAEMON_PATH_MAX];
	char metrics_host[64]; /* empty: no metrics endpoint */
	uint16_t metrics_port;
	uint64_t output_max_bytes; /* reports beyond this total are removed, oldest first */
	bool oom_reports;	   /* write a report when a process runs out of GPU memory */
	double trigger_interval_s; /* at most one report per process per interval */
	size_t top;		   /* stacks per process in a report; 0: all */
};

void gs_daemon_config__defaults(struct gs_daemon_config *c);
/*
 * Applies a config file read from f (named path in messages) on top of c. One setting a
 * line, "key value", '#' starts a comment. On a bad line logs "path:line: why" and
 * returns -EINVAL, leaving c partly applied (callers parse into a copy).
 */
int gs_daemon_config__parse(struct gs_daemon_config *c, FILE *f, const char *path);
/* Applies one "key value" setting (flags use the same keys); msg gets why on -EINVAL. */
int gs_daemon_config__set(struct gs_daemon_config *c, const char *key, const char *value, char *msg,
			  size_t msg_len);

#endif /* GS_DAEMON_CONFIG_H */
