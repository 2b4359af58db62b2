/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* debuginfod_client.h: debug files fetched by build id from a debuginfod server, off-thread. */
#ifndef GS_DEBUGINFOD_CLIENT_H
#define GS_DEBUGINFOD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_debuginfod;

/* Is debuginfod wanted: DEBUGINFOD_URLS set and not empty, as perf and gdb decide. */
bool gs_debuginfod_enabled(void);

/*
 * A client with its worker thread, elfutils' libdebuginfod loaded with dlopen() (never
 * linked). NULL with errno set when it is not wanted (gs_debuginfod_enabled()), or the
 * library or thread is missing: the caller says so once. Fetched files go to the
 * library's cache ($DEBUGINFOD_CACHE_PATH, else the XDG cache). Free with __free().
 */
struct gs_debuginfod *gs_debuginfod__new(void);
/* Stops a fetch in progress, joins the worker and closes fetched files not taken. */
void gs_debuginfod__free(struct gs_debuginfod *d);

/*
 * Queues a fetch of the debug file of build id hex (lowercase hex); never blocks on the
 * network. A build id already asked for is not asked again. 0, -EINVAL, or -ENOSPC when
 * the queue is full (GS_DEBUGINFOD_MAX files a session).
 */
int gs_debuginfod__request(struct gs_debuginfod *d, const char *hex);
#define GS_DEBUGINFOD_MAX 256

/*
 * Takes a finished fetch: copies its build id to hex (2 * 64 + 1 bytes) and returns its
 * fd (the caller closes it), or -errno of a failed fetch; -EAGAIN when none is finished
 * and not yet taken.
 */
int gs_debuginfod__take(struct gs_debuginfod *d, char *hex);
/* Whether a fetch finished since the last __take() call found none (cheap, lock-free). */
bool gs_debuginfod__has_news(struct gs_debuginfod *d);

/*
 * Waits for the queued fetches, from the session's wait budget (DEBUGINFOD_TIMEOUT
 * seconds, default GS_DEBUGINFOD_WAIT_S, spent across calls): output is never held
 * longer in all. Returns the number of fetches still pending.
 */
size_t gs_debuginfod__wait(struct gs_debuginfod *d);
#define GS_DEBUGINFOD_WAIT_S 5

#endif /* GS_DEBUGINFOD_CLIENT_H */
