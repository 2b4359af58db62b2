/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_calls.bpf.h: per-thread state from a probed call's entry to its return, nesting-aware. */
#ifndef GS_CALLS_BPF_H
#define GS_CALLS_BPF_H

/*
 * An entry older than this is a call whose return we never saw (attached mid-call);
 * it must not make later calls on the thread look nested.
 */
#define GS_STALE_CALL_NS (60ULL * 1000000000ULL)

/* x86-64 SysV: libbpf 1.1's bpf_tracing.h stops at the fifth argument */
#define GS_PT_REGS_PARM6(x) ((x)->r9)

/* First member of every object's per-call map value. */
struct gs_call_head {
	__u64 entry_ts_ns;
	__u16 api; /* the cookie's API id, matched at return */
	__u16 pad;
	__u32 depth; /* nested probed calls (cudaMalloc -> cuMemAlloc_v2) */
};

#ifdef GS_OLD_KERNEL
/*
 * Before 5.11 (no task storage): per-call state in an LRU hash by thread id. An entry is
 * made once per thread and reused; a thread gone leaves its entry to be evicted.
 */
#define GS_CALLS_MAP(value_type)                          \
	struct {                                          \
		__uint(type, BPF_MAP_TYPE_LRU_HASH);      \
		__uint(max_entries, GS_OLD_CALL_THREADS); \
		__type(key, __u32);                       \
		__type(value, value_type);                \
	} calls SEC(".maps")
#define GS_OLD_CALL_THREADS   16384
#define GS_OLD_CALL_VALUE_MAX 256

/* zeroes for a new thread's entry: larger than any object's value */
struct gs_call_zero {
	char b[GS_OLD_CALL_VALUE_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gs_call_zero);
} gs_call_zeroes SEC(".maps");

/* (ino, file offset) of a probed function -> its cookie, written by userspace at attach */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GS_OLD_PROBES);
	__type(key, struct gs_probe_key);
	__type(value, __u64);
} probe_cookies SEC(".maps");

/* the VMA tree of kernels before 6.1 (the maple tree replaced it) */
struct mm_struct___gs {
	struct rb_root mm_rb;
} __attribute__((preserve_access_index));

struct vm_area_struct___gs {
	unsigned long vm_start;
	unsigned long vm_end;
	struct rb_node vm_rb;
} __attribute__((preserve_access_index));

/* deeper than any red-black tree of VMAs a process can have (2 log2(n + 1)) */
#define GS_OLD_VMA_DEPTH 48

/* find_vma(): the mapping that holds ip, walked down mm_rb with checked reads; NULL if none */
static __always_inline struct vm_area_struct *gs_old_find_vma(struct task_struct *task, __u64 ip)
{
	struct mm_struct___gs *mm = (void *)BPF_CORE_READ(task, mm);
	__u64 rb_off = bpf_core_field_offset(struct vm_area_struct___gs, vm_rb);
	struct rb_node *node = BPF_CORE_READ(mm, mm_rb.rb_node);

	for (int i = 0; i < GS_OLD_VMA_DEPTH && node; i++) {
		struct vm_area_struct___gs *vma = (void *)node - rb_off;

		if (ip >= BPF_CORE_READ(vma, vm_end)) {
			node = BPF_CORE_READ(node, rb_right);
		} else if (ip >= BPF_CORE_READ(vma, vm_start)) {
			return (void *)vma;
		} else {
			node = BPF_CORE_READ(node, rb_left);
		}
	}
	return NULL;
}

static __always_inline __u64 gs_cookie_at(struct task_struct *task, __u64 ip)
{
	struct vm_area_struct *vma = gs_old_find_vma(task, ip);
	struct gs_probe_key k = {};
	__u64 *v;

	if (!vma)
		return 0;
	k.dev = BPF_CORE_READ(vma, vm_file, f_inode, i_sb, s_dev);
	k.ino = BPF_CORE_READ(vma, vm_file, f_inode, i_ino);
	k.off = ip - BPF_CORE_READ(vma, vm_start) + (BPF_CORE_READ(vma, vm_pgoff) << 12);
	v = bpf_map_lookup_elem(&probe_cookies, &k);
	return v ? *v : 0;
}

/*
 * An entry probe's cookie without bpf_get_attach_cookie() (5.15): the probed function's
 * file and offset, from the mapping that holds ip (past the int3 on x86: both it and the
 * probe's address are tried).
 */
static __always_inline __u64 gs_entry_cookie(void *ctx)
{
	struct task_struct *task = (void *)bpf_get_current_task();
	__u64 ip = PT_REGS_IP((struct pt_regs *)ctx), v;

	/* a kernel with cookies (a backport without task storage, or GPUSNOOP_KERNEL_FEATURES_OFF):
	 * userspace attached them, and the verifier drops the rest */
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_attach_cookie))
		return bpf_get_attach_cookie(ctx);
	if (!bpf_core_field_exists(((struct mm_struct___gs *)0)->mm_rb))
		return 0;
	v = gs_cookie_at(task, ip - 1);
	return v ?: gs_cookie_at(task, ip);
}

/* a return probe's: not known, and not needed (gs_call_outermost() takes the entry's) */
#define gs_ret_cookie(ctx) 0

static __always_inline struct gs_call_head *gs_call_current(void *calls)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct gs_call_head *c = bpf_map_lookup_elem(calls, &tid);

	return c && c->entry_ts_ns ? c : NULL;
}
#else
#define GS_CALLS_MAP(value_type)                         \
	struct {                                         \
		__uint(type, BPF_MAP_TYPE_TASK_STORAGE); \
		__uint(map_flags, BPF_F_NO_PREALLOC);    \
		__type(key, int);                        \
		__type(value, value_type);               \
	} calls SEC(".maps")
#define gs_entry_cookie(ctx) bpf_get_attach_cookie(ctx)
#define gs_ret_cookie(ctx)   bpf_get_attach_cookie(ctx)

/*
 * Each object's per-call state lives in task storage (BPF_MAP_TYPE_TASK_STORAGE, value type
 * starting with struct gs_call_head): one slot per thread, found without hashing and
 * written in place, freed with the thread. A slot whose entry_ts_ns is 0 holds no call. A
 * thread-id hash cost an update and a delete per call, ~40% of an allocation's probes.
 */
static __always_inline struct gs_call_head *gs_call_current(void *calls)
{
	struct gs_call_head *c = bpf_task_storage_get(calls, bpf_get_current_task_btf(), NULL, 0);

	return c && c->entry_ts_ns ? c : NULL;
}
#endif /* GS_OLD_KERNEL */

/*
 * Returns true when this thread is already inside a probed call of this object: the
 * runtime calls the driver through exported entry points, and one user call counts once.
 */
static __always_inline bool gs_call_nested(void *calls, __u64 now)
{
	struct gs_call_head *c = gs_call_current(calls);

	if (!c || now - c->entry_ts_ns > GS_STALE_CALL_NS)
		return false;
	c->depth++;
	return true;
}

/*
 * Returns the outermost call of this thread at the return of api, NULL for a nested return.
 * A return whose entry was not counted (its probe was attached mid-call) carries another
 * API's cookie and must not consume the outer call's state.
 */
static __always_inline void *gs_call_outermost(void *calls, __u16 api)
{
	struct gs_call_head *c = gs_call_current(calls);

	if (!c)
		return NULL;
	if (c->depth) {
		c->depth--;
		return NULL;
	}
#ifdef GS_OLD_KERNEL
	return c; /* no return cookie: the entry's call */
#else
	return c->api == api ? c : NULL;
#endif
}

/* The thread's slot for a new outermost call, to be filled in whole; NULL: none (counted) */
static __always_inline void *gs_call_slot(void *calls)
{
#ifdef GS_OLD_KERNEL
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), zero = 0;
	void *c = bpf_map_lookup_elem(calls, &tid), *z;

	if (!c) {
		z = bpf_map_lookup_elem(&gs_call_zeroes, &zero);
		if (z)
			bpf_map_update_elem(calls, &tid, z, BPF_NOEXIST);
		c = bpf_map_lookup_elem(calls, &tid);
	}
#else
	void *c = bpf_task_storage_get(calls, bpf_get_current_task_btf(), NULL,
				       BPF_LOCAL_STORAGE_GET_F_CREATE);
#endif

	if (!c)
		gs_count(GS_STAT_INFLIGHT_FULL);
	return c;
}

/*
 * A probed call's entry: the thread's slot for a new outermost call (to be filled in whole)
 * and *now its entry time; NULL for a thread of no target, a call nested in one of this
 * object's (counted in its depth) or no slot to be had (counted). One task storage lookup
 * (~30 ns) for the nesting check and the slot, and it stands for gs_is_target() (a hash
 * lookup, ~40 ns; an empty probe costs ~50): a slot is made only for a target's thread, and
 * its process stays a target until its last thread leaves (proc.bpf.c's handle_exit), while
 * task storage goes with its thread. Not so in the old kernels' LRU by thread id, where an
 * id may be another process's now: there the check is made first.
 */
static __always_inline void *gs_call_enter(void *calls, __u32 pid, __u64 *now)
{
	struct gs_call_head *c;

#ifdef GS_OLD_KERNEL
	if (!gs_is_target(pid))
		return NULL;
	c = gs_call_slot(calls);
#else
	c = bpf_task_storage_get(calls, bpf_get_current_task_btf(), NULL, 0);
	if (!c) {
		if (!gs_is_target(pid))
			return NULL;
		c = gs_call_slot(calls);
	}
#endif
	if (!c)
		return NULL;
	*now = bpf_ktime_get_ns();
	if (c->entry_ts_ns && *now - c->entry_ts_ns <= GS_STALE_CALL_NS) {
		c->depth++;
		return NULL;
	}
	return c;
}

/* The outermost call has returned: the slot is free */
static __always_inline void gs_call_end(struct gs_call_head *c)
{
	c->entry_ts_ns = 0;
	c->depth = 0;
}

#endif /* GS_CALLS_BPF_H */
