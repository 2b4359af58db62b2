/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* profile_schedule.h: `schedule every P profile W ...` entries: parsing, and the profiles run. */
#ifndef GS_DAEMON_PROFILE_SCHEDULE_H
#define GS_DAEMON_PROFILE_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

struct gs_daemon;
struct gs_daemon_config;

/* on-demand profiles (GET /debug/pprof/profile?seconds=N): N within these */
#define GS_DAEMON_HTTP_PROFILE_MIN_S 1
#define GS_DAEMON_HTTP_PROFILE_MAX_S 60
/* the latest profile served over HTTP is at most this big (a bigger one is not served) */
#define GS_DAEMON_PROFILE_SERVE_MAX (32U << 20)

/*
 * "every 10m profile 30s [hz=99] [processes=all|cuda] [keep=N] [keep-bytes=SIZE]", split by
 * config.c's schedule parser into its n words w (value whole, for messages): adds one
 * schedule to c (which has room), or says why in msg and returns -EINVAL.
 */
int gs_daemon_parse_profile_schedule(struct gs_daemon_config *c, const char *value, char *const *w,
				     size_t n, char *msg, size_t msg_len);
/*
 * Starts `gpusnoop profile` for secs at hz (every process, or with cuda_only those the daemon
 * follows), writing OUTPUT_DIR/gpusnoop-KIND-all-TIME.pb.gz; schedule as for recordings (-1:
 * one-off, GS_DAEMON_HTTP_SCHEDULE: asked over HTTP). Returns 0, -ENOENT when cuda_only and
 * no CUDA process runs, or -errno (logged).
 */
int gs_daemon__start_profile(struct gs_daemon *d, double secs, unsigned int hz, bool cuda_only,
			     const char *kind, int schedule);
/* A profile child finished and its file is in place at path: serve it as the latest. */
void gs_daemon__profile_done(struct gs_daemon *d, const char *path, int schedule);
/* After a reload: the new metrics server serves the latest profile too. */
void gs_daemon__republish_profile(struct gs_daemon *d);
/* A profile child failed: an HTTP client waiting for it gets the error. */
void gs_daemon__profile_failed(struct gs_daemon *d, int schedule);
/* Kills the profile children that overran their window by far (from tick()). */
void gs_daemon__watch_profiles(struct gs_daemon *d, uint64_t now_ns);
/* Starts the profile an HTTP client asked for, if one did (from tick()). */
void gs_daemon__serve_profile_requests(struct gs_daemon *d);

#endif /* GS_DAEMON_PROFILE_SCHEDULE_H */
