/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* pid_index.h: where a process's entry sits in an array, found by pid in constant time. */
#ifndef GS_PID_INDEX_H
#define GS_PID_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "user/hash_index.h"

/*
 * Per-process tables keep their entries in an array, for iteration in a stable order, and
 * find them through this index (user/hash_index.h): a host's thousands of processes cost no
 * linear search per event. Zero-initialised it is empty.
 */
struct gs_pid_index {
	struct gs_hash_index h;
};

/* The array position recorded for pid; false when there is none. */
bool gs_pid_index__get(const struct gs_pid_index *x, pid_t pid, size_t *pos);
/* Records pid at pos (inserts, or moves it). Returns 0 or -ENOMEM (x unchanged). */
int gs_pid_index__set(struct gs_pid_index *x, pid_t pid, size_t pos);
/* Forgets pid; nothing when it is absent. */
void gs_pid_index__remove(struct gs_pid_index *x, pid_t pid);
void gs_pid_index__release(struct gs_pid_index *x);

#endif /* GS_PID_INDEX_H */
