/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* links.h: the uprobe links a session owns, by the process they watch. */
#ifndef GS_LINKS_H
#define GS_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct bpf_object;
struct bpf_program;
struct gs_links;

/*
 * Before obj is loaded: where the kernel has multi-uprobe links, its SEC("uprobe") and
 * SEC("uretprobe") programs are loaded for them (one link, one detach grace period, for
 * many probes); elsewhere they stay per-probe perf-event uprobes. Returns 0 or -errno.
 */
int gs_links__prepare(struct bpf_object *obj);

struct gs_links *gs_links__new(void);
/* Detaches everything; accepts NULL. */
void gs_links__free(struct gs_links *links);

/*
 * Attaches prog at file offset off of path (pid -1: every process mapping the file).
 * Returns 0 or -errno; logs nothing, the caller knows the context.
 */
int gs_links__attach_uprobe(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			    const char *path, uint64_t off, bool retprobe, uint64_t cookie);
/*
 * Between these two, uprobes of prepared programs are collected, and gs_links__batch_end()
 * attaches them with one link per program, pid, path and direction (path must name the
 * same file until then). Returns 0 or the first -errno; logs nothing.
 */
void gs_links__batch_begin(struct gs_links *links);
int gs_links__batch_end(struct gs_links *links);
/* Attaches prog to the USDT probe provider:name in path (its semaphore is bumped by libbpf). */
int gs_links__attach_usdt(struct gs_links *links, struct bpf_program *prog, pid_t pid,
			  const char *path, const char *provider, const char *name,
			  uint64_t cookie);
/* How many links (a multi-uprobe link holds many probes). */
size_t gs_links__count(const struct gs_links *links);
/* How many links watch pid alone. */
size_t gs_links__count_pid(const struct gs_links *links, pid_t pid);
/*
 * Detaches the links that watch pid alone (an exited process), in the background: a detach
 * waits for a grace period, which the caller's event loop should not. gs_links__free()
 * waits for what is still under way.
 */
void gs_links__release_pid(struct gs_links *links, pid_t pid);

#endif /* GS_LINKS_H */
