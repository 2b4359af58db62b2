/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gpu_inject.h: --inject, the CUPTI injection library loaded into a process already running. */
#ifndef GS_GPU_INJECT_H
#define GS_GPU_INJECT_H

#include <sys/types.h>

/*
 * Checks path as pid's root shows it (a regular file root owns, not group/other writable),
 * stops one thread of pid with ptrace, makes it call dlopen(path, RTLD_NOW) and, when the
 * file mapped is the one checked, the library's InitializeInjection(); each call returns into
 * a stub (user/remote_stub.h) that puts the thread back where it was, so a call given up on
 * after 10 s finishes later with the thread going on. Nothing is ever unloaded. Risks
 * (gpusnoop-record(8), `--inject`): the thread runs dlopen wherever it was stopped; if it held a lock dlopen needs
 * (the loader's, or malloc's), the process deadlocks. Returns 0, -EBUSY when CUPTI refused
 * (another subscriber), or -errno; logged.
 */
int gs_gpu_inject(pid_t pid, const char *path);

#endif /* GS_GPU_INJECT_H */
