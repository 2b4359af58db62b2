/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* call_counts.h: launches and syncs counted in the kernel (bpf/gs_call_counts.bpf.h), read. */
#ifndef GS_CALL_COUNTS_H
#define GS_CALL_COUNTS_H

#include <stdint.h>
#include <sys/types.h>

struct gs_bpf_objects;

/* One process's counts, summed over the CPUs. */
struct gs_call_totals {
	pid_t pid;
	uint64_t launches, syncs, sync_ns;
};

/*
 * Calls fn once per process the kernel counted calls of (GS_MAX_TARGETS at most), with its
 * totals. Nothing when the CUDA object is not loaded. Returns 0 or -errno.
 */
int gs_call_counts__each(struct gs_bpf_objects *o,
			 void (*fn)(void *ctx, const struct gs_call_totals *t), void *ctx);

/* Forgets pid's counts (it exited: a later process with its pid starts from 0). */
void gs_call_counts__forget(struct gs_bpf_objects *o, pid_t pid);

#endif /* GS_CALL_COUNTS_H */
