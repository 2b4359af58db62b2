/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* snapshot.h: PyTorch's memory snapshot (what torch.cuda._memory_viz reads), made from outside. */
#ifndef GS_TORCH_SNAPSHOT_H
#define GS_TORCH_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "user/pid_index.h"

struct gs_stack_table;
struct gs_torch_proc;

/* PyTorch's _record_memory_history(max_entries=...) default */
#define GS_SNAP_DEFAULT_ENTRIES 100000
#define GS_SNAP_MAX_ENTRIES	(1u << 24)

enum gs_snap_action {
	GS_SNAP_ALLOC = 1,
	GS_SNAP_FREE, /* written as free_requested and free_completed */
	GS_SNAP_SEGMENT_ALLOC,
	GS_SNAP_SEGMENT_FREE,
	GS_SNAP_OOM,
	GS_SNAP_SNAPSHOT, /* a snapshot was written here (every device) */
	/* a page of an expandable segment (cuMemMap/cuMemUnmap), as PyTorch writes them */
	GS_SNAP_SEGMENT_MAP,
	GS_SNAP_SEGMENT_UNMAP,
};

#define GS_SNAP_F_STACK	  0x1 /* stack_id names the call's stack */
#define GS_SNAP_F_UNKNOWN 0x2 /* a free of a block allocated before we attached */

/* one TraceEntry */
struct gs_snap_entry {
	uint64_t ts_ns; /* CLOCK_MONOTONIC */
	uint64_t addr;
	uint64_t size;	    /* the block's (rounded) size; an OOM's request */
	uint64_t requested; /* what was asked for; 0: size */
	uint64_t stream;
	uint32_t stack_id;
	uint16_t dev; /* GS_TORCH_DEV_KEY; GS_TORCH_DEV_UNKNOWN */
	uint8_t action;
	uint8_t flags;
};

/* the last max_entries trace entries of one process, oldest overwritten first */
struct gs_snap_proc {
	pid_t pid;
	struct gs_snap_entry *ring;
	size_t head;	  /* next slot written once full */
	size_t nr;	  /* valid entries, <= max_entries */
	size_t cap;	  /* slots mapped (max_entries), 0 before the first entry */
	uint64_t dropped; /* entries overwritten */
};

struct gs_torch_snap {
	size_t max_entries;
	struct gs_snap_proc **procs;
	size_t nr_procs, cap_procs;
	struct gs_pid_index index;
};

void gs_torch_snap__init(struct gs_torch_snap *s, size_t max_entries);
void gs_torch_snap__release(struct gs_torch_snap *s);
/* Appends an entry to pid's ring (made on first use). Returns 0 or -ENOMEM. */
int gs_torch_snap__record(struct gs_torch_snap *s, pid_t pid, const struct gs_snap_entry *e);
/* pid exited (its ring goes) or exec'd (the ring is emptied) */
void gs_torch_snap__proc_gone(struct gs_torch_snap *s, pid_t pid, bool exec);
struct gs_snap_proc *gs_torch_snap__find(const struct gs_torch_snap *s, pid_t pid);

/*
 * Writes pid's snapshot as a pickle to f: segments and blocks from tp (its PyTorch state, may
 * be NULL), device_traces from the ring (may be NULL), frames from stacks; now_ns is when
 * (CLOCK_MONOTONIC). A "snapshot" entry marks the moment in the ring. Returns 0 or -errno.
 */
int gs_torch_snap__write(struct gs_torch_snap *s, pid_t pid, const struct gs_torch_proc *tp,
			 const struct gs_stack_table *stacks, uint64_t now_ns, FILE *f);

#endif /* GS_TORCH_SNAPSHOT_H */
