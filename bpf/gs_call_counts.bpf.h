/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_call_counts.bpf.h: calls only counted (the daemon's metrics), counted here, not sent. */
#ifndef GS_CALL_COUNTS_BPF_H
#define GS_CALL_COUNTS_BPF_H

/*
 * Per process (tgid), per CPU: its reader sums the CPUs and deletes a process's entry when
 * it exits. Not preallocated: an entry is made once per process, and only the processes
 * that call are paid for. When it is full a call goes back to being sent as a record, so
 * that a count is never lost.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, GS_MAX_TARGETS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct gs_call_counts);
} call_counts SEC(".maps");

/* from .rodata: the first value of a process */
static const struct gs_call_counts gs_no_call_counts = {};

/*
 * Counts a call probed with GS_CALL_F_COUNT_*; entry_ts_ns: a sync's entry (0 for a
 * launch). true when counted; false when the call is to be sent as before (not a counted
 * call, or the map is full). Per-CPU values need no lock; the adds are non-fetching atomics
 * all the same (BPF_XADD, on 5.10 as well), as a preempted program's add must not be lost.
 */
static __always_inline bool gs_count_call(__u32 pid, __u32 flags, __u64 entry_ts_ns)
{
	struct gs_call_counts *v;
	__u64 now;

	if (!(flags & (GS_CALL_F_COUNT_LAUNCH | GS_CALL_F_COUNT_SYNC)))
		return false;
	v = bpf_map_lookup_elem(&call_counts, &pid);
	if (!v) {
		bpf_map_update_elem(&call_counts, &pid, &gs_no_call_counts, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&call_counts, &pid);
		if (!v)
			return false;
	}
	if (flags & GS_CALL_F_COUNT_LAUNCH) {
		__sync_fetch_and_add(&v->launches, 1);
		return true;
	}
	__sync_fetch_and_add(&v->syncs, 1);
	now = bpf_ktime_get_ns();
	/* as userspace counts a record: a return stamped before its entry adds no time */
	if (now > entry_ts_ns)
		__sync_fetch_and_add(&v->sync_ns, now - entry_ts_ns);
	return true;
}

#endif /* GS_CALL_COUNTS_BPF_H */
