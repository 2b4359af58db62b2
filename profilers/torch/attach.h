/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* attach.h: find PyTorch's libraries in a process and attach its best memory probes. */
#ifndef GS_TORCH_ATTACH_H
#define GS_TORCH_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

struct torch_bpf;
struct gs_links;
struct gs_symcache;
struct gs_probe_quota;
struct gs_maps;
struct gs_torch_attach;

/*
 * Borrows all four (quota: the tracker's count of users' own files probed per process);
 * free with gs_torch_attach__free(). NULL on allocation failure.
 */
struct gs_torch_attach *gs_torch_attach__new(struct torch_bpf *skel, struct gs_links *links,
					     struct gs_symcache *symcache,
					     struct gs_probe_quota *quota);
void gs_torch_attach__free(struct gs_torch_attach *ta);

/*
 * Attaches to the PyTorch libraries maps holds that are not probed yet for scope (a pid,
 * or -1 for every process): CPU tensors and OOM hooks in libc10, the best tensor source
 * for libc10_cuda (USDT, else reportMemoryUsageToProfiler, else .symtab symbols), and
 * __cxa_throw in libstdc++. Logs the source in use. Returns true if maps has libc10.
 */
bool gs_torch_attach__scan(struct gs_torch_attach *ta, const struct gs_maps *maps, pid_t scope);
/* Forgets what was attached for a pid that is gone (its probes went with it). */
void gs_torch_attach__forget(struct gs_torch_attach *ta, pid_t scope);

#endif /* GS_TORCH_ATTACH_H */
