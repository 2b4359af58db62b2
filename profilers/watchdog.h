/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* watchdog.h: a child that resumes what gpusnoop stopped once gpusnoop is gone, SIGKILL included. */
#ifndef GS_WATCHDOG_H
#define GS_WATCHDOG_H

#include <sys/types.h>

struct gs_watchdog {
	pid_t pid;    /* 0: none */
	int write_fd; /* its end of the pipe: closed by the kernel however gpusnoop ends */
};

/*
 * Forks the watchdog, holding stopped_fd (the stopped set) and nothing else of ours: not a
 * probe's link, so that once gpusnoop is gone no new stop can happen. Call before any probe
 * is attached. 0, or -errno (then nothing was started).
 */
int gs_watchdog__start(struct gs_watchdog *w, int stopped_fd);
/* gpusnoop ends normally: the watchdog sweeps once more (nothing, by then) and is reaped. */
void gs_watchdog__stop(struct gs_watchdog *w);

#endif /* GS_WATCHDOG_H */
