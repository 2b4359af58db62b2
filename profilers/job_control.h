/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* job_control.h: commands whose job control would see gpusnoop's stops (interactive shells). */
#ifndef GS_JOB_CONTROL_H
#define GS_JOB_CONTROL_H

#include <stdbool.h>

/*
 * argv runs an interactive shell: a known shell with -i (alone or among short options), or
 * with neither -c nor a script operand while stdin_tty. Its job control waits with
 * WUNTRACED, so every stop of its children (bpf/proc.bpf.c) would read as a stopped job.
 */
bool gs_is_interactive_shell(char *const *argv, bool stdin_tty);

#endif /* GS_JOB_CONTROL_H */
