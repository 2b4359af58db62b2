/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* names.h: the timeline's process and thread names, each process named once per file. */
#ifndef GS_TIMELINE_NAMES_H
#define GS_TIMELINE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct gs_chrome_trace;

/*
 * A thread's name is written when its track first appears (its comm then, or the name NVTX
 * gave it). A process's name is kept, not written: a process is relabeled after an exec
 * (its comm and rank change) and its last samples come after its exit, so each file names it
 * once, at the file's end, with its last label (Perfetto keeps one name per pid, and so does
 * Holistic Trace Analysis).
 */
struct gs_timeline_proc {
	pid_t pid;
	size_t output; /* the file it is named in */
	bool stale;    /* exec'd: relabeled at its next event */
	char label[64];
};

struct gs_timeline_names;

/* NULL on allocation failure; free with gs_timeline_names__free(). */
struct gs_timeline_names *gs_timeline_names__new(void);
void gs_timeline_names__free(struct gs_timeline_names *n);
/* Whether pid's process has no label yet, or one from before its exec. */
bool gs_timeline_names__process_wanted(const struct gs_timeline_names *n, pid_t pid);
/* Labels pid's process, named in output; replaces an older label. Returns 0 or -ENOMEM. */
int gs_timeline_names__set_process(struct gs_timeline_names *n, pid_t pid, size_t output,
				   const char *label);
/* Whether tid's track is still unnamed; marks it named (0, or -ENOMEM: say it is named). */
bool gs_timeline_names__thread_wanted(struct gs_timeline_names *n, pid_t pid, pid_t tid);
/* tid's track took a name of its own (NVTX): the track is named. Returns 0 or -ENOMEM. */
int gs_timeline_names__thread_named(struct gs_timeline_names *n, pid_t pid, pid_t tid);
/*
 * pid's image is gone. exec: its threads are named anew and its process relabeled in place.
 * An exit with keep keeps both (late events of it still come); without, pid is forgotten
 * and a reuse of it is named anew.
 */
void gs_timeline_names__gone(struct gs_timeline_names *n, pid_t pid, bool exec, bool keep);
/* The processes labeled so far, in order of their first event: [0, nr). */
size_t gs_timeline_names__nr(const struct gs_timeline_names *n);
const struct gs_timeline_proc *gs_timeline_names__get(const struct gs_timeline_names *n, size_t i);
/* Writes the process_name of each process named in output, at once (timeless events). */
void gs_timeline_names__write(const struct gs_timeline_names *n, size_t output,
			      struct gs_chrome_trace *t);

#endif /* GS_TIMELINE_NAMES_H */
