/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* unwind.h: user stacks from a captured stack slice and the CFI of the mapped files (libdw). */
#ifndef GS_UNWIND_H
#define GS_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

struct gs_unwinder;
struct gs_maps;
struct gs_symcache;

/* Caller frees with gs_unwinder__free(). NULL with errno set. */
struct gs_unwinder *gs_unwinder__new(void);
void gs_unwinder__free(struct gs_unwinder *u);

/*
 * Unwinds the stack st captured in process pid, whose maps are read for this call and not
 * kept (tools and tests; a session unwinds with its symcache's snapshot): writes at most max_ips addresses to ips,
 * innermost first, the first being st's ip (at a uretprobe, the return address in the
 * caller; at a uprobe, the probed function's first instruction); the others are return
 * addresses. Each step uses the .eh_frame (else .debug_frame) CFI of the file mapped at the
 * address, cached per file (device and inode) across processes, and falls back to a frame
 * pointer step where there is none (anonymous JIT code). Stack memory is read only from
 * st->data. Returns the number of addresses written (at least 1 when max_ips > 0), or a
 * negative errno: -EINVAL for a malformed st.
 */
int gs_unwinder__unwind(struct gs_unwinder *u, pid_t pid, const struct gs_ustack *st, uint64_t *ips,
			size_t max_ips);
/*
 * The same with the caller's snapshot of the process's mappings (e.g. gs_symcache__maps(),
 * which outlives the process), never re-read here: for records of a process that may have
 * exited by the time they are read.
 */
int gs_unwinder__unwind_maps(struct gs_unwinder *u, const struct gs_maps *maps,
			     const struct gs_ustack *st, uint64_t *ips, size_t max_ips);
/*
 * Lets the unwinder name JIT code through cache's perf maps (borrowed; NULL turns it off),
 * for the one JIT frame whose layout is known without CFI or a frame pointer: CPython
 * 3.12+'s perf trampolines ("py::" symbols, python -X perf) in builds without frame
 * pointers. When unwinding with gs_unwinder__unwind_maps(), maps must be cache's snapshot.
 */
void gs_unwinder__set_symcache(struct gs_unwinder *u, struct gs_symcache *cache);

/* Counters since gs_unwinder__new(), for diagnostics and tests. */
struct gs_unwind_stats {
	uint64_t stacks;     /* gs_unwinder__unwind() calls */
	uint64_t cfi_steps;  /* frames found through CFI */
	uint64_t fp_steps;   /* frames found through the frame-pointer fallback */
	uint64_t py_steps;   /* frames found through CPython's perf trampoline layout */
	uint64_t files;	     /* distinct files whose CFI was loaded */
	uint64_t maps_reads; /* /proc/PID/maps read by gs_unwinder__unwind() */
};
void gs_unwinder__stats(const struct gs_unwinder *u, struct gs_unwind_stats *out);

#endif /* GS_UNWIND_H */
