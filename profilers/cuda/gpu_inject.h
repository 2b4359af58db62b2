/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_inject.h: --inject, the CUPTI injection library loaded into a process already running. */
#ifndef GS_GPU_INJECT_H
#define GS_GPU_INJECT_H

#include <sys/types.h>

/*
 * Stops one thread of pid with ptrace, makes it call dlopen(path, RTLD_NOW) and the
 * library's InitializeInjection(), puts its registers back and lets it go. Nothing is ever
 * unloaded. Risks (README): the thread runs dlopen wherever it was stopped; if it held a lock
 * dlopen needs (the loader's, or malloc's), the process deadlocks. Returns 0, -EBUSY when
 * CUPTI refused (another subscriber), or -errno; logged.
 */
int gs_gpu_inject(pid_t pid, const char *path);

#endif /* GS_GPU_INJECT_H */
