/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_attach.h: the GPU activity probes, where a process loaded the CUPTI injection library. */
#ifndef GS_GPU_ATTACH_H
#define GS_GPU_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

struct gs_tracker;
struct gs_links;
struct gs_maps;
struct gs_gpu_attach;

/*
 * Opens and loads bpf/gpu.bpf.c on the tracker's ring buffer, targets and loss counters
 * (gs_tracker__share_maps()). Borrows links. Returns NULL with errno set (logged).
 */
struct gs_gpu_attach *gs_gpu_attach__open(struct gs_tracker *t, struct gs_links *links, bool all);
void gs_gpu_attach__free(struct gs_gpu_attach *ga);
/*
 * Attaches the USDT probes of every libgpusnoop-cupti.so maps (NULL: none) holds, not probed yet
 * for scope (a pid, or -1 for every process). Returns true if maps has one.
 */
bool gs_gpu_attach__scan(struct gs_gpu_attach *ga, const struct gs_maps *maps, pid_t scope);
/* Forgets what was attached for a pid that is gone (its probes went with it). */
void gs_gpu_attach__forget(struct gs_gpu_attach *ga, pid_t scope);

#endif /* GS_GPU_ATTACH_H */
