/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* stack_table.h: interned, symbolized user stacks; an id names one (pid, frames) pair. */
#ifndef GS_STACK_TABLE_H
#define GS_STACK_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "user/symcache.h"

struct gs_stack_table;

/*
 * Distinct stacks kept per process (each costs its symbolized frames): past it, a process's
 * new stacks all get one id, its "[other stacks]" entry, so a flood of call sites (JIT code,
 * a hostile loop) costs bounded memory and what it allocates is still counted.
 */
#define GS_STACK_TABLE_MAX_PER_PROCESS 10000
#define GS_STACK_OTHER_NAME	       "[other stacks]"

struct gs_stack {
	pid_t pid;
	uint32_t nr_frames;
	uint64_t *addrs;
	struct gs_frame *frames; /* owned copies of the symbolized frames */
	int other;		 /* the process's "[other stacks]": one marker frame */
};

struct gs_stack_table *gs_stack_table__new(struct gs_symcache *symcache);
void gs_stack_table__free(struct gs_stack_table *t);

/*
 * Returns the id of this stack, symbolizing it the first time it is seen (while the process
 * still lives). addrs are return addresses. Returns a negative errno on allocation failure.
 */
int64_t gs_stack_table__intern(struct gs_stack_table *t, pid_t pid, const uint64_t *addrs,
			       uint32_t nr);
/*
 * Drops the stacks of pid (it exited, and nothing refers to its stack ids any more): their
 * ids are reused. A long-lived session sees thousands of processes come and go.
 */
void gs_stack_table__forget(struct gs_stack_table *t, pid_t pid);
/* Stacks kept per process from now on (0: GS_STACK_TABLE_MAX_PER_PROCESS). */
void gs_stack_table__set_max_per_process(struct gs_stack_table *t, size_t max);
/* How many interns were answered with an "[other stacks]" id, all processes together. */
uint64_t gs_stack_table__folded(const struct gs_stack_table *t);
/* Borrowed; NULL for an unknown or forgotten id. */
/*
 * Before output: waits (bounded) for debug files fetched by debuginfod
 * (gs_symcache__await_debuginfo()) and names the frames that had no name for want of
 * them. Frames handed out by __get() before may change. Returns 0 or -ENOMEM.
 */
int gs_stack_table__resymbolize(struct gs_stack_table *t);
const struct gs_stack *gs_stack_table__get(const struct gs_stack_table *t, uint32_t id);
size_t gs_stack_table__size(const struct gs_stack_table *t);

/*
 * "symbol+0xoff (module)", "module+0xoff" or "0xaddr": one frame for people; a Python frame
 * is "qualname (file:line)", as py-spy names it.
 */
void gs_frame_format(const struct gs_frame *f, char *buf, size_t len);

struct gs_json;
/*
 * One frame as a JSON object: symbol, module, offset, address; a Python frame also has
 * "kind": "python", file and line (-1: none), a marker frame "kind": "marker".
 */
void gs_frame_json(struct gs_json *j, const struct gs_frame *f);

#endif /* GS_STACK_TABLE_H */
