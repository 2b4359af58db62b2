/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* tracker.h: a session: its BPF objects, targets, and the events dispatched to a command. */
#ifndef GS_TRACKER_H
#define GS_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

struct bpf_map;
struct bpf_object;
struct gs_symcache;
struct gs_tracker;
struct gs_bpf_objects;
struct gs_proc_tree_entry;
struct gs_proc_filter;

/* --stacks: how user stacks are unwound */
enum gs_stack_mode {
	GS_STACKS_FP = 0, /* frame pointers, by the kernel at the probe (bpf_get_stack) */
	GS_STACKS_DWARF,  /* a copied stack slice, unwound here with the files' CFI */
	GS_STACKS_NONE,	  /* none walked (record, leaks --stacks none): no frames, no Python */
};

struct gs_tracker_opts {
	const pid_t *pids; /* -p */
	size_t nr_pids;
	bool all;      /* -a */
	bool children; /* the targets' new processes too, at any depth (-- CMD; -p --children) */
	char *const *argv; /* -- CMD ARGS */
	/* CMD's stdout goes to gpusnoop's stderr: gpusnoop's stdout carries one document (a
	 * trace, a profile) that CMD's prints would corrupt */
	bool command_stdout_to_stderr;
	size_t ringbuf_bytes;
	uint32_t families; /* GS_FAM_BIT()s of the APIs to probe; 0: no CUDA probes at all */
	uint32_t counted_families; /* of those, the ones only counted: no stacks, no Python */
	bool free_returns;	   /* report every free's return, not only failures */
	bool oom_kills;		   /* report the kernel OOM killer's victims among the targets */
	bool torch;		   /* PyTorch tensor memory and OOMs where libc10 is loaded */
	bool gpu;		   /* GPU activity where the CUPTI injection library is loaded */
	enum gs_stack_mode stacks;
	/* --stack-sample N: one event in N per call site has its stack, the others their call
	 * site alone (a one-frame stack); 0 or 1: every event its stack */
	unsigned stack_sample;
	bool python; /* Python frames merged into the stacks of CPython processes */
	/* a tree's process stops at every exec, its image probed or not (its rank is read there) */
	bool stop_every_exec;
	/* --comm/--cgroup: the records of processes it does not keep are not handed on */
	struct gs_proc_filter *filter;
};

/* What the tracker hands to a subcommand. Records are borrowed for the call. */
struct gs_tracker_ops {
	void *ctx;
	void (*mem_alloc)(void *ctx, const struct gs_mem_alloc *e);
	void (*mem_free)(void *ctx, const struct gs_mem_free *e);
	void (*mem_free_ret)(void *ctx, const struct gs_mem_free_ret *e);
	void (*cuda_call)(void *ctx, const struct gs_cuda_call *e);
	void (*cpu_sample)(void *ctx, const struct gs_cpu_sample *e);
	/* the kernel OOM killer chose target pid (before it is gone); needs opts.oom_kills */
	void (*oom_kill)(void *ctx, pid_t pid);
	void (*torch_mem)(void *ctx, const struct gs_torch_mem *e);
	void (*torch_oom)(void *ctx, const struct gs_torch_oom *e);
	/* a GS_EV_GPU_* record (size: as it came, checked by gs_event_decode()); needs opts.gpu */
	void (*gpu_event)(void *ctx, const struct gs_event_hdr *hdr, size_t size);
	/* a target exited, or replaced its image with exec (its CUDA memory is gone either way) */
	void (*proc_gone)(void *ctx, pid_t pid, bool exec);
};

/* Checks privileges and BTF, loads the BPF objects. Returns 0 or -errno (already logged). */
int gs_tracker__open(struct gs_tracker **out, const struct gs_tracker_opts *opts,
		     const struct gs_tracker_ops *ops);
/*
 * The session's BPF objects (borrowed, valid until gs_tracker__free()): code that loads
 * another one there (gs_bpf_objects__cpu()) has its records arrive through gs_tracker__poll().
 */
struct gs_bpf_objects *gs_tracker__objects(struct gs_tracker *t);
/* Resolves targets (spawning the command) and attaches. Returns 0 or -errno (logged). */
int gs_tracker__start(struct gs_tracker *t);
/* Drains events for at most timeout_ms; returns the number handled or -errno. */
int gs_tracker__poll(struct gs_tracker *t, int timeout_ms);
/*
 * Reads every record written until now, turn by turn (a turn's budget bounds gs_tracker__poll):
 * the final drain after a stop. Records written meanwhile end it. Returns 0 or -errno.
 */
int gs_tracker__drain_all(struct gs_tracker *t);
/*
 * A descriptor that polls readable when records wait (above the wake-up threshold), for a
 * caller that polls it with descriptors of its own, then drains with gs_tracker__poll(t, 0).
 */
int gs_tracker__fd(const struct gs_tracker *t);
/* True when the targets' new processes are followed too (-- CMD, -p --children). */
bool gs_tracker__children(const struct gs_tracker *t);
/* True once every -p/-- target is gone (never in -a mode). */
bool gs_tracker__done(const struct gs_tracker *t);
/* True once some target had CUDA (or PyTorch) probes attached. */
bool gs_tracker__saw_cuda(const struct gs_tracker *t);
/* Loss counters summed over CPUs, indexed by enum gs_stat. */
void gs_tracker__stats(const struct gs_tracker *t, uint64_t out[GS_STAT__MAX]);
uint64_t gs_tracker__dropped(const struct gs_tracker *t);
/*
 * -a: the users whose records were dropped for being over their share of the ring buffer,
 * at most max of them, into uids[] and drops[] (records, ever). Returns how many.
 */
size_t gs_tracker__uid_drops(const struct gs_tracker *t, uint32_t *uids, uint64_t *drops,
			     size_t max);
struct gs_symcache *gs_tracker__symcache(struct gs_tracker *t);
/* The spawned command's pid, 0 without one; its exit status once it was reaped. */
pid_t gs_tracker__child(const struct gs_tracker *t);
int gs_tracker__child_status(const struct gs_tracker *t);
/*
 * --stacks dwarf: for a record whose hdr has GS_EV_F_USTACK, unwinds the GS_EV_USTACK slice
 * that came before it into frames (innermost first, at most GS_MAX_STACK). Returns the
 * number of frames, or 0
 * when there is no such slice (keep the record's frame-pointer frames then). The memory
 * records of the tracker's own ops arrive with their frames already replaced.
 */
size_t gs_tracker__unwind(struct gs_tracker *t, const struct gs_event_hdr *hdr, __u64 *frames,
			  size_t max_frames);
/* pid's parent and ranks (borrowed until the next poll); NULL when pid was no -p/-- target. */
const struct gs_proc_tree_entry *gs_tracker__proc(const struct gs_tracker *t, pid_t pid);
/* Comm of pid as last read (borrowed), "?" when unknown. */
const char *gs_tracker__comm(struct gs_tracker *t, pid_t pid);
void gs_tracker__free(struct gs_tracker *t);

#endif /* GS_TRACKER_H */
