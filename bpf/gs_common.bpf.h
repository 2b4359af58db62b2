/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_common.bpf.h: maps and helpers every gpusnoop BPF object shares (one copy, fds reused). */
#ifndef GS_COMMON_BPF_H
#define GS_COMMON_BPF_H

#include <bpf/bpf_core_read.h>
#include "gs_event.h"
#include "gs_uregs.bpf.h"

/* Userspace sizes it before load and hands the same map to every object (bpf_map__reuse_fd). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/*
 * OOM signals only (a CUDA allocation failing with error 2, PyTorch's OOM, an OOM kill): a
 * flood on events cannot drop them. Shared like events; userspace reads it first.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} oom_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GS_MAX_UIDS);
	__type(key, __u32);
	__type(value, struct gs_uid_share);
} uid_shares SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gs_share_state);
} share_state SEC(".maps");

/* pid -> struct gs_target; consulted unless cfg_all_pids */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GS_MAX_TARGETS);
	__type(key, __u32);
	__type(value, struct gs_target);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GS_STAT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

const volatile bool cfg_all_pids = false;
/* -a: each user gets a share of events once it fills (gs_over_share()) */
const volatile bool cfg_uid_share = false;

/*
 * GS_OLD_KERNEL: the objects built for Linux 5.10 (.output/NAME.old.bpf.o, user/kernel_compat.c picks
 * them): no bpf_get_current_task_btf() (5.11), task storage (5.11), bpf_cookie (5.15), nor
 * callbacks (bpf_loop, bpf_find_vma: 5.17). Their maps, programs and globals keep the names and
 * the layout of the others', so that one skeleton opens either.
 */
#ifdef GS_OLD_KERNEL
#define gs_current_task() ((struct task_struct *)bpf_get_current_task())
#else
#define gs_current_task() bpf_get_current_task_btf()
#endif
/*
 * Wake the reader only once this many bytes wait in the ring buffer. 0 submits with flags 0,
 * the kernel's adaptive wake-up: a wake-up whenever the record is the first the reader has
 * not consumed, which for a reader that keeps up is nearly every record, each costing the
 * traced thread an irq_work and a context switch. The reader also drains on its poll
 * timeout, so a held-back record waits no longer than that.
 */
const volatile __u32 cfg_wakeup_bytes = 0;

static __always_inline void gs_count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &stat);

	if (v)
		*v += 1;
}

static __always_inline bool gs_is_target(__u32 pid)
{
	return cfg_all_pids || bpf_map_lookup_elem(&targets, &pid);
}

/* a new user's share, from .rodata: a zero on the stack would push handle_sample's call chain
 * past the verifier's 512 bytes on 6.1 */
static const struct gs_uid_share gs_no_share = {};

static __always_inline struct gs_uid_share *gs_uid_share(__u32 uid)
{
	struct gs_uid_share *s = bpf_map_lookup_elem(&uid_shares, &uid);

	if (s)
		return s;
	bpf_map_update_elem(&uid_shares, &uid, &gs_no_share, BPF_NOEXIST);
	return bpf_map_lookup_elem(&uid_shares, &uid);
}

/*
 * Under -a, a buffer more than half full is shared: from the moment it went over half, each
 * of the N users writing since may write 1/(N + 1) of the other half; past it, its records
 * are dropped (counted, per user too) until the buffer is below half again; its last eighth
 * takes only users that wrote at most a sixty-fourth. One
 * user's flood cannot take the room the others' records need, even while the reader is slow
 * or stopped, and a buffer under half is anyone's. Counts are not exact across CPUs: a
 * share, not an accounting.
 */
static __always_inline bool gs_over_share(__u64 size)
{
	struct gs_share_state *st;
	struct gs_uid_share *s;
	__u64 ring, avail;
	__u32 zero = 0;

	if (!cfg_uid_share)
		return false;
	st = bpf_map_lookup_elem(&share_state, &zero);
	if (!st)
		return false;
	ring = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE);
	avail = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	if (avail < ring / 2) {
		if (st->pressure) { /* a new period: everyone's count starts again */
			st->pressure = 0;
			st->users = 0;
			__sync_fetch_and_add(&st->epoch, 1);
		}
		return false;
	}
	if (!st->pressure)
		st->pressure = 1;
	s = gs_uid_share((__u32)bpf_get_current_uid_gid());
	if (!s)
		return false;
	if (s->epoch != st->epoch) {
		s->epoch = st->epoch;
		s->bytes = 0;
		__sync_fetch_and_add(&st->users, 1);
	}
	__sync_fetch_and_add(&s->bytes, size);
	/*
	 * One part more than users: room stays for whoever comes next. And the last eighth is
	 * kept for light users (a sixty-fourth each), however many heavy ones came before.
	 */
	if (s->bytes <= ring / 2 / (st->users + 1) &&
	    (avail < ring - ring / 8 || s->bytes <= ring / 64))
		return false;
	__sync_fetch_and_add(&s->dropped, 1);
	gs_count(GS_STAT_UID_OVER_SHARE);
	return true;
}

/* A record in the shared ring buffer; a full buffer is counted, never silent. */
static __always_inline void *gs_reserve(__u64 size)
{
	void *e;

	if (gs_over_share(size))
		return NULL;
	e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		gs_count(GS_STAT_RINGBUF_FULL);
	return e;
}

/*
 * An OOM signal's record: on oom_events, at most GS_OOM_PER_UID a second per user there (a
 * user failing in a loop cannot fill it for others), the rest on events as usual.
 */
static __always_inline void *gs_reserve_oom(__u64 size)
{
	struct gs_uid_share *s = gs_uid_share((__u32)bpf_get_current_uid_gid());
	__u64 now = bpf_ktime_get_ns();
	void *e = NULL;

	if (s && now - s->oom_window_ns > 1000000000ULL) {
		s->oom_window_ns = now;
		s->ooms = 0;
	}
	/* read, then add (a fetching atomic is Linux 5.12, and the objects for 5.10 share this):
	 * CPUs racing may put a few more there */
	if (s && s->ooms < GS_OOM_PER_UID) {
		__sync_fetch_and_add(&s->ooms, 1);
		e = bpf_ringbuf_reserve(&oom_events, size, 0);
	}
	if (e)
		return e;
	gs_count(GS_STAT_OOM_FALLBACK);
	e = gs_reserve(size);
	if (!e) /* counted as ringbuf_full or uid_over_share too: this says it was an OOM */
		gs_count(GS_STAT_OOM_LOST);
	return e;
}

/*
 * Commits a record from gs_reserve(), waking the reader as cfg_wakeup_bytes says. In -a
 * mode the first records of a process userspace does not follow yet wake it at once: it
 * must add the process to targets before the process exits, or its exit goes unseen.
 */
static __always_inline void gs_submit(void *e)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 flags = 0;

	if (cfg_wakeup_bytes)
		flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= cfg_wakeup_bytes ||
					(cfg_all_pids && !bpf_map_lookup_elem(&targets, &pid))
				? BPF_RB_FORCE_WAKEUP
				: BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(e, flags);
}

/* The kernel's frame-pointer walk: the fallback when the stack's bounds are unknown. */
static __always_inline __u16 gs_user_stack_kernel(void *ctx, __u64 *frames)
{
	long nbytes = bpf_get_stack(ctx, frames, GS_MAX_STACK * sizeof(__u64), BPF_F_USER_STACK);

	if (nbytes < 0) {
		gs_count(GS_STAT_STACK_FAILED);
		return 0;
	}
	return nbytes / sizeof(__u64);
}

struct gs_stack_vma {
	__u64 start, end;
};

/*
 * Bytes of stack read in one user read above the walk's start: a user read costs ~90 ns
 * here whatever its size up to a few KiB, one per frame was most of a stack's cost, and
 * the frames of a call chain mostly lie close above its stack pointer.
 */
#define GS_STACK_WIN_WORDS 128

/*
 * The frame-pointer walk's scalars between its bpf_loop() steps, in the thread's map value:
 * values the verifier does not know (on the stack, each it knew of the frame count made it
 * check the step again), and off the programs' stacks (6.1 counts 512 bytes for a program
 * and the calls it is in).
 */
struct gs_fp_walk_state {
	__u64 fp, lo, end;   /* the next frame; callers' frames lie above lo, below end */
	__u64 win_lo, win_n; /* the window's user address and bytes */
	__u64 tramp;	     /* the [uprobes] trampoline's address: a pending return probe */
	__u64 frame[2];	     /* the step's frame: saved %rbp, return address */
	__u32 n;	     /* frames found */
	__u32 pad;
};

/* a thread's stack walk state (task storage), its stack mapping as last found */
struct gs_stack_thread {
	struct gs_stack_vma vma;
	__u32 busy; /* win[] in use: a perf sample (an NMI) may come in the middle of a walk */
	__u32 pad;
	struct gs_fp_walk_state walk; /* the walk holding win[] */
	__u64 win[GS_STACK_WIN_WORDS];
};

/* set where the kernel has no bpf_find_vma() (user/kernel_probe.c): the verifier drops its call */
const volatile bool cfg_no_find_vma = false;

#ifdef GS_OLD_KERNEL
/* no task storage nor bpf_find_vma(): unused, kept for the skeleton */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, int);
	__type(value, struct gs_stack_thread);
} stack_vmas SEC(".maps");

static __always_inline __u64 gs_stack_end(struct task_struct *task, __u64 sp,
					  struct gs_stack_thread **t)
{
	return 0;
}
#else
/* each thread's stack mapping, as last found: bpf_find_vma() costs more than the walk */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct gs_stack_thread);
} stack_vmas SEC(".maps");

static long gs_stack_vma_cb(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct gs_stack_vma *v = data;

	v->start = BPF_CORE_READ(vma, vm_start);
	v->end = BPF_CORE_READ(vma, vm_end);
	return 0;
}

/*
 * The end of the mapping that holds sp, 0 if none. The thread's cached mapping answers
 * while sp lies inside it; a stack that grew below it or a switched stack (a coroutine, a
 * signal stack) looks the mapping up again. The bound only stops the walk early: every read
 * is a checked user read.
 */
static __always_inline __u64 gs_stack_end(struct task_struct *task, __u64 sp,
					  struct gs_stack_thread **t)
{
	struct gs_stack_vma vma = {};
	struct gs_stack_thread *c;

	/* bpf_find_vma() is Linux 5.17: before it (5.15), the kernel's walk, faults and all */
	if (cfg_no_find_vma)
		return 0;
	c = bpf_task_storage_get(&stack_vmas, task, NULL, BPF_LOCAL_STORAGE_GET_F_CREATE);
	*t = c;
	if (c && sp >= c->vma.start && sp < c->vma.end)
		return c->vma.end;
	if (bpf_find_vma(task, sp, gs_stack_vma_cb, &vma, 0) || !vma.end)
		return 0;
	if (c)
		c->vma = vma;
	return vma.end;
}
#endif /* GS_OLD_KERNEL */

/*
 * The stack from sp up in one user read into the thread's window (at most its size, not past
 * end: the pages of its mapping there have all been used); its byte count, 0 for none (the
 * window in use or the read failed). A user read costs ~90 ns here, most of it fixed, and
 * the frames of a call chain mostly lie within a KiB above its stack pointer.
 */
static __always_inline __u64 gs_stack_win_read(struct gs_stack_thread *t, __u64 sp, __u64 end)
{
	__u64 n = end - sp < sizeof(t->win) ? end - sp : sizeof(t->win);

	/* bounded again at the call: 6.1's verifier loses a bound that a spill came before */
	barrier_var(n);
	if (n > sizeof(t->win))
		return 0;
	if (bpf_probe_read_user(t->win, n, (void *)sp))
		return 0;
	return n;
}

/*
 * The lowest words of a walk's window, kept for the record of its event: what it wants from
 * user memory besides the stack (a launch's stack arguments, the word an allocation's
 * out-parameter points to) mostly lies just above sp, and each user read costs ~90 ns.
 * Copied whole, not looked for: a branch in the walk multiplies what the verifier checks.
 */
#define GS_STACK_WORDS 32

struct gs_stack_words {
	__u64 lo; /* the window's user address */
	__u64 n;  /* bytes of val[] the window holds (the rest is stale) */
	__u64 val[GS_STACK_WORDS];
};

#ifndef GS_OLD_KERNEL
/* The frame-pointer walk's pointers between its bpf_loop() steps (its scalars: t->walk) */
struct gs_fp_walk {
	__u64 *frames;
	struct gs_stack_thread *t; /* the window this walk holds */
	struct return_instance *ri;
};

/*
 * One frame of the %rbp chain: from the window when it holds the frame, else a user read.
 * A bpf_loop() step, so that the verifier checks it once: as a bounded loop inlined in
 * every program, its two ways to read a frame made it check each of 64 iterations apart
 * (400k-560k processed instructions a program, 2.5 s to load record's objects, not 0.3).
 */
static long gs_fp_walk_step(__u32 index, void *ctx)
{
	struct gs_fp_walk *w = ctx;
	struct gs_stack_thread *t = w->t;
	struct gs_fp_walk_state *s;
	__u64 fp, off;
	__u32 n;

	if (!t)
		return 1;
	s = &t->walk;
	fp = s->fp;
	n = s->n;
	if (n >= GS_MAX_STACK || fp < s->lo || fp > s->end - sizeof(s->frame) || (fp & 7))
		return 1;
	off = (fp - s->win_lo) / sizeof(__u64); /* win_lo <= lo <= fp */
	if (s->win_n >= sizeof(s->frame) && off <= (s->win_n - sizeof(s->frame)) / sizeof(__u64)) {
		s->frame[0] = t->win[off & (GS_STACK_WIN_WORDS - 1)];
		s->frame[1] = t->win[(off + 1) & (GS_STACK_WIN_WORDS - 1)];
	} else if (bpf_probe_read_user(s->frame, sizeof(s->frame), (void *)fp)) {
		return 1;
	}
	if (w->ri && s->frame[1] == s->tramp) {
		s->frame[1] = w->ri->orig_ret_vaddr;
		w->ri = w->ri->next;
	}
	w->frames[n & (GS_MAX_STACK - 1)] = s->frame[1];
	s->n = n + 1;
	s->lo = fp + sizeof(s->frame); /* callers' frames lie above */
	s->fp = s->frame[0];
	return 0;
}
#endif

/*
 * Fills frames[GS_MAX_STACK] with the user stack, innermost first; returns the frame count.
 *
 * The same walk as the kernel's (ip: regs->ip except at an entry, then the return address of
 * each frame of the %rbp chain, pending uretprobe trampolines replaced by the real return addresses), but it
 * follows a frame pointer only upwards and inside the stack's own mapping. The kernel's
 * walk reads wherever the last frame points, and the chain of any process ends in code
 * built without frame pointers (libc's __libc_start_call_main at least) with %rbp holding
 * data: the read faults, and a fault costs ~5 us, 80% of a probe hit with a stack, on
 * kernel 6.18 in a VM (measured with kernel.bpf_stats_enabled; scripts/bench/).
 */
static __always_inline __u16 gs_user_stack_from(void *ctx, __u64 *frames, __u64 ip, __u64 fp,
						__u64 lo, const bool at_entry,
						struct gs_stack_words *w)
{
	struct task_struct *task = gs_current_task();
	struct gs_stack_thread *t = NULL;
	__u64 tramp = 0, end = gs_stack_end(task, lo, &t), win_lo = lo, win_n = 0;
	struct return_instance *ri;
	__u16 n;

	/*
	 * No stack mapping (or mmap_lock busy), or the thread's window is another walk's (a
	 * sample that came in the middle of it) or missing: the kernel walks, faults and all.
	 * At a function's entry (at_entry) ip is the return address at lo, the stack's top.
	 */
	if (!end || !t || t->busy) {
		if (at_entry && bpf_probe_read_user(&ip, sizeof(ip), (void *)lo)) {
			gs_count(GS_STAT_STACK_FAILED);
			return 0;
		}
		n = gs_user_stack_kernel(ctx, frames);
		if (n)
			frames[0] = ip; /* at a function's entry the kernel's walk starts in it */
		return n;
	}
	t->busy = 1; /* the window is this walk's until its end */
	win_n = gs_stack_win_read(t, lo, end);
	if (w) {
		__builtin_memcpy(w->val, t->win, sizeof(w->val));
		w->lo = lo;
		w->n = win_n;
	}
	if (at_entry && win_n >= sizeof(ip)) {
		ip = t->win[0];
	} else if (at_entry && bpf_probe_read_user(&ip, sizeof(ip), (void *)lo)) {
		t->busy = 0;
		gs_count(GS_STAT_STACK_FAILED);
		return 0;
	}
	if (at_entry)
		lo += sizeof(ip);
	/*
	 * As the kernel's walk does since 6.11: a pending uretprobe's trampoline is not a
	 * caller. Past gs_stack_end() task is a BTF pointer (not on the old kernels, whose
	 * gs_stack_end() is 0): plain loads, not BPF_CORE_READ()'s helper calls (~30 ns each).
	 */
	ri = task->utask ? task->utask->return_instances : NULL;
	if (ri)
		tramp = task->mm->uprobes_state.xol_area->vaddr;
	if (ri && ip == tramp) {
		ip = ri->orig_ret_vaddr;
		ri = ri->next;
	}
	frames[0] = ip;
#ifdef GS_OLD_KERNEL
	(void)win_lo;
	return 1; /* not reached: gs_stack_end() is 0 there, and no callbacks in a 5.10 object */
#else
	struct gs_fp_walk fw = { .frames = frames, .t = t, .ri = ri };

	t->walk.fp = fp;
	t->walk.lo = lo;
	t->walk.end = end;
	t->walk.win_lo = win_lo;
	t->walk.win_n = win_n;
	t->walk.tramp = tramp;
	t->walk.n = 1;
	bpf_loop(GS_MAX_STACK - 1, gs_fp_walk_step, &fw, 0);
	n = t->walk.n;
	t->busy = 0;
	return n;
#endif
}

/* --stacks none (record, leaks): no user stack is walked at all, records carry no frames */
const volatile bool cfg_no_stacks = false;

/*
 * From the task's user registers: in a sample that interrupted the kernel too (gs_uregs). w:
 * where the walk keeps its window's lowest words (struct gs_stack_words), or NULL.
 */
static __always_inline __u16 gs_user_stack_words(void *ctx, __u64 *frames, struct gs_stack_words *w)
{
	struct gs_uregs r;

	if (cfg_no_stacks)
		return 0;
	if (!gs_uregs(ctx, &r))
		return gs_user_stack_kernel(ctx, frames);
	return gs_user_stack_from(ctx, frames, r.ip, r.fp, r.sp, false, w);
}

static __always_inline __u16 gs_user_stack(void *ctx, __u64 *frames)
{
	return gs_user_stack_words(ctx, frames, NULL);
}

/*
 * The same stack from a function's first instruction (x86-64): its frame is not made yet,
 * %rbp is still the caller's and the return address is at %rsp, so the frames are those a
 * return probe would see, the caller first.
 */
static __always_inline __u16 gs_user_stack_at_entry_words(void *ctx, __u64 *frames,
							  struct gs_stack_words *w)
{
	struct pt_regs *regs = ctx;

	if (cfg_no_stacks)
		return 0;
	return gs_user_stack_from(ctx, frames, 0, PT_REGS_FP(regs), PT_REGS_SP(regs), true, w);
}

static __always_inline __u16 gs_user_stack_at_entry(void *ctx, __u64 *frames)
{
	return gs_user_stack_at_entry_words(ctx, frames, NULL);
}

/* ts_ns: a time the program took already (bpf_ktime_get_ns() costs ~45 ns in a VM) */
static __always_inline void gs_fill_hdr_at(struct gs_event_hdr *hdr, __u16 type, __u32 size,
					   __u64 pid_tgid, __u64 ts_ns)
{
	hdr->type = type;
	hdr->flags = 0;
	hdr->size = size;
	hdr->ts_ns = ts_ns;
	hdr->pid = pid_tgid >> 32;
	hdr->tid = (__u32)pid_tgid;
}

static __always_inline void gs_fill_hdr(struct gs_event_hdr *hdr, __u16 type, __u32 size,
					__u64 pid_tgid)
{
	gs_fill_hdr_at(hdr, type, size, pid_tgid, bpf_ktime_get_ns());
}

#include "gs_stack_cache.bpf.h"

#endif /* GS_COMMON_BPF_H */
