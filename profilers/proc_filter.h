/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_filter.h: --comm REGEX and --cgroup PATH: which processes' records a session keeps. */
#ifndef GS_PROC_FILTER_H
#define GS_PROC_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * The processes whose comm matches a POSIX extended regular expression and/or that live in a
 * cgroup directory or below it (cgroup v2, or a v1 hierarchy: the one mounted where the path
 * is). Decisions are cached per pid until gs_proc_filter__forget() (exit, exec), so a
 * process started later is judged by its first record: -a picks up new matching processes.
 */
struct gs_proc_filter;

/*
 * Compiles comm_re (NULL: any comm) and locates cgroup (NULL: any) through
 * /proc/self/mountinfo. Returns 0 or -EINVAL (logged: a bad expression or not a cgroup
 * directory), -ENOMEM. Free with gs_proc_filter__free().
 */
int gs_proc_filter__new(struct gs_proc_filter **out, const char *comm_re, const char *cgroup);
void gs_proc_filter__free(struct gs_proc_filter *f);
/* Whether pid's records are kept; a process gone before it was judged is not. */
bool gs_proc_filter__match(struct gs_proc_filter *f, pid_t pid);
/* pid exited or replaced its image: judged again at its next record. */
void gs_proc_filter__forget(struct gs_proc_filter *f, pid_t pid);

/*
 * For tests. The hierarchy and path within it of dir (a canonical path), from mountinfo's
 * text: key "" for cgroup v2, else one of the v1 hierarchy's controllers ("memory",
 * "name=systemd"). Returns 0 or -ENOENT when no cgroup mount holds dir.
 */
int gs_cgroup_locate(const char *mountinfo, const char *dir, char *key, size_t key_len, char *rel,
		     size_t rel_len);
/* Whether a /proc/PID/cgroup text puts the process in key's hierarchy at rel or below. */
bool gs_cgroup_contains(const char *proc_cgroup, const char *key, const char *rel);

#endif /* GS_PROC_FILTER_H */
