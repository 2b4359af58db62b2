/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_correlate.h: CUPTI correlation ids tied to the CPU call slices that made them. */
#ifndef GS_GPU_CORRELATE_H
#define GS_GPU_CORRELATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The injection library reports each CUDA API call's correlation id at its entry, on the
 * calling thread (GS_EV_GPU_API); the uprobe slice of that call, which returns later on the
 * same thread, spans that moment. A slice takes the id of the first entry of its domain
 * (runtime or driver API) inside it, or of any domain when none; ids given to slices are
 * remembered per process, so that a GPU record can say whether its launch was seen.
 */
struct gs_gpu_correlate;

struct gs_gpu_correlate *gs_gpu_correlate__new(void);
void gs_gpu_correlate__free(struct gs_gpu_correlate *c);
/* An API entry of pid/tid at ts_ns. Returns 0 or -ENOMEM. */
int gs_gpu_correlate__api(struct gs_gpu_correlate *c, pid_t pid, pid_t tid, uint64_t ts_ns,
			  uint32_t correlation, uint32_t domain);
/* The id of the call slice [entry_ns, exit_ns] of pid/tid, or 0; remembered as launched. */
uint32_t gs_gpu_correlate__slice(struct gs_gpu_correlate *c, pid_t pid, pid_t tid,
				 uint64_t entry_ns, uint64_t exit_ns, uint32_t domain);
/* Whether a slice of pid took this id. */
bool gs_gpu_correlate__launched(const struct gs_gpu_correlate *c, pid_t pid, uint32_t correlation);
/* Drops what is kept for pid (it exited or replaced its image). */
void gs_gpu_correlate__forget_pid(struct gs_gpu_correlate *c, pid_t pid);

#endif /* GS_GPU_CORRELATE_H */
