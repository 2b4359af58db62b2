/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* probe_quota.h: how many of its own files each user may have probed in its processes. */
#ifndef GS_PROBE_QUOTA_H
#define GS_PROBE_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Under -a and in the daemon, a file its owner can change is probed only in the process
 * that maps it (see gs_is_trusted_file()). Each such (process, file) costs a set of uprobes
 * until the process exits, and detaching one uprobe waits for a grace period (about 0.1 s
 * here, one at a time): without a bound, one user mapping thousands of copies of a
 * CUDA-named library would make root hold thousands of probes and take hours to stop. This
 * counts them per owner; 32 covers 8 ranks each mapping a runtime, a driver and PyTorch's
 * libraries of their own (a virtual environment's), where each process's probes are given
 * back when it exits.
 */
#define GS_PROBE_QUOTA_PER_USER 32

struct gs_probe_quota;

/* Caller frees with gs_probe_quota__free(); NULL on allocation failure. */
struct gs_probe_quota *gs_probe_quota__new(size_t per_user);
void gs_probe_quota__free(struct gs_probe_quota *q);
/*
 * Takes one of uid's slots for file (dev, inode) probed in pid; true if taken (or already
 * held), false when uid holds per_user slots already.
 */
bool gs_probe_quota__take(struct gs_probe_quota *q, uid_t uid, pid_t pid, uint64_t dev,
			  uint64_t inode);
/* Gives back every slot held for pid (it exited, and its probes went with it). */
void gs_probe_quota__release_pid(struct gs_probe_quota *q, pid_t pid);
/* Slots uid holds now. */
size_t gs_probe_quota__held(const struct gs_probe_quota *q, uid_t uid);

#endif /* GS_PROBE_QUOTA_H */
