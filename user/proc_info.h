/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_info.h: small facts about a process from /proc: thread names, the executable, whole files. */
#ifndef GS_PROC_INFO_H
#define GS_PROC_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The comm of thread tid of pid (tid == pid: the process); "?" when it is gone. */
void gs_read_comm(pid_t pid, pid_t tid, char *buf, size_t len);
/* No /proc text we parse comes near this (a process with 100k mappings: ~10 MiB). */
#define GS_TEXT_FILE_MAX (64u << 20)
/*
 * The whole text of a file that has no size (procfs): NUL-terminated, its length in *len
 * when given. Caller frees; NULL with errno set (EFBIG past GS_TEXT_FILE_MAX bytes).
 */
char *gs_read_text_file(const char *path, size_t *len);
/* PF_KTHREAD of include/linux/sched.h, in the flags field of /proc/PID/stat */
#define GS_PF_KTHREAD 0x00200000u
/* Whether pid is a kernel thread (no user space: nothing to probe); false when unreadable. */
bool gs_is_kernel_thread(pid_t pid);
/* The path /proc/PID/exe points to, without a " (deleted)" suffix; false when unreadable. */
bool gs_read_exe_path(pid_t pid, char *buf, size_t len);

#endif /* GS_PROC_INFO_H */
