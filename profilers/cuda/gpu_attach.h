/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_attach.h: the GPU activity probes, where a process loaded the CUPTI injection library. */
#ifndef GS_GPU_ATTACH_H
#define GS_GPU_ATTACH_H

#include <stdbool.h>
#include <sys/types.h>

struct gpu_bpf;
struct gs_links;
struct gs_maps;
struct gs_gpu_attach;

/*
 * Attaches bpf/gpu.bpf.c's programs (skel: loaded by gs_bpf_objects__gpu(), which owns it)
 * through links. Borrows both. Returns NULL with errno set.
 */
struct gs_gpu_attach *gs_gpu_attach__new(struct gpu_bpf *skel, struct gs_links *links);
void gs_gpu_attach__free(struct gs_gpu_attach *ga);
/*
 * Attaches the USDT probes of every libgpusnoop-cupti.so maps (NULL: none) holds, not probed yet
 * for scope (a pid, or -1 for every process). Returns true if maps has one.
 */
bool gs_gpu_attach__scan(struct gs_gpu_attach *ga, const struct gs_maps *maps, pid_t scope);
/* Forgets what was attached for a pid that is gone (its probes went with it). */
void gs_gpu_attach__forget(struct gs_gpu_attach *ga, pid_t scope);

#endif /* GS_GPU_ATTACH_H */
