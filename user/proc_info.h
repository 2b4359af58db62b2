/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_info.h: small facts about a process from /proc: thread names, the executable, whole files. */
#ifndef GS_PROC_INFO_H
#define GS_PROC_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The comm of thread tid of pid (tid == pid: the process); "?" when it is gone. */
void gs_read_comm(pid_t pid, pid_t tid, char *buf, size_t len);
/*
 * The whole text of a file that has no size (procfs): NUL-terminated, its length in *len
 * when given. Caller frees; NULL with errno set.
 */
char *gs_read_text_file(const char *path, size_t *len);
/* The path /proc/PID/exe points to, without a " (deleted)" suffix; false when unreadable. */
bool gs_read_exe_path(pid_t pid, char *buf, size_t len);

#endif /* GS_PROC_INFO_H */
