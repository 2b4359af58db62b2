/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* stop_set.h: answering the processes bpf/proc.bpf.c stopped, and finding those never answered. */
#ifndef GS_STOP_SET_H
#define GS_STOP_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Field 22 (start time, clock ticks after boot) of a /proc/PID/stat text; -EINVAL if none. */
int gs_parse_stat_start(const char *buf, size_t len, uint64_t *start);
/* The same from /proc/PID/stat; async-signal-safe (the watchdog uses it). */
int gs_proc_start(pid_t pid, uint64_t *start);

/*
 * SIGCONT to pid, through a pidfd and only if its start time is start: a process that got
 * the pid since is never signalled. Async-signal-safe. 0, or -errno.
 */
int gs_resume_process(pid_t pid, uint64_t start);

/*
 * Answers pid's stop (its record came): takes it out of the stopped set, then resumes it,
 * unless it is gone, not ours, or someone else stopped it meanwhile. true if it was resumed.
 */
bool gs_stop_set__answer(int map_fd, pid_t pid, uint64_t start);

#define GS_STOP_SWEEP_MAX 64
/*
 * Resumes what the set holds. With prev (an array of GS_STOP_SWEEP_MAX pids, *nr_prev of them,
 * those seen at the last sweep), only the entries seen then too: a stop whose record is
 * on its way is not answered early; prev is then set to what is left. Without it, every
 * entry (gpusnoop closes, or died). Async-signal-safe without prev. Returns how many resumed.
 */
size_t gs_stop_set__sweep(int map_fd, uint32_t *prev, size_t *nr_prev);

struct gs_file_key;
/* The (kernel dev_t, inode) of pid's executable, the key of bpf/proc.bpf.c's probed_files. */
int gs_exe_file_key(pid_t pid, struct gs_file_key *key);

#endif /* GS_STOP_SET_H */
