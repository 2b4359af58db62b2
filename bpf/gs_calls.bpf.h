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
	return c->api == api ? c : NULL;
}

/* The thread's slot for a new outermost call, to be filled in whole; NULL: none (counted) */
static __always_inline void *gs_call_slot(void *calls)
{
	void *c = bpf_task_storage_get(calls, bpf_get_current_task_btf(), NULL,
				       BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (!c)
		gs_count(GS_STAT_INFLIGHT_FULL);
	return c;
}

/* The outermost call has returned: the slot is free */
static __always_inline void gs_call_end(struct gs_call_head *c)
{
	c->entry_ts_ns = 0;
	c->depth = 0;
}

#endif /* GS_CALLS_BPF_H */
