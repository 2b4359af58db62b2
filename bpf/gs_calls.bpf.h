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
 * Returns true when this thread is already inside a probed call of this object: the
 * runtime calls the driver through exported entry points, and one user call counts once.
 */
static __always_inline bool gs_call_nested(void *calls, __u32 tid, __u64 now)
{
	struct gs_call_head *c = bpf_map_lookup_elem(calls, &tid);

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
static __always_inline void *gs_call_outermost(void *calls, __u32 tid, __u16 api)
{
	struct gs_call_head *c = bpf_map_lookup_elem(calls, &tid);

	if (!c)
		return NULL;
	if (c->depth) {
		c->depth--;
		return NULL;
	}
	return c->api == api ? c : NULL;
}

static __always_inline int gs_call_save(void *calls, void *call)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (bpf_map_update_elem(calls, &tid, call, BPF_ANY)) {
		gs_count(GS_STAT_INFLIGHT_FULL);
		return -1;
	}
	return 0;
}

#endif /* GS_CALLS_BPF_H */
