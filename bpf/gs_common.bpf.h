/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_common.bpf.h: maps and helpers every gpusnoop BPF object shares (one copy, fds reused). */
#ifndef GS_COMMON_BPF_H
#define GS_COMMON_BPF_H

#include "gs_event.h"

/* Userspace sizes it before load and hands the same map to every object (bpf_map__reuse_fd). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

/* pid -> GS_TARGET_* flags; consulted unless cfg_all_pids */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GS_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u32);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, GS_STAT__MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

const volatile bool cfg_all_pids = false;

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

static __always_inline void gs_fill_hdr(struct gs_event_hdr *hdr, __u16 type, __u32 size,
					__u64 pid_tgid)
{
	hdr->type = type;
	hdr->flags = 0;
	hdr->size = size;
	hdr->ts_ns = bpf_ktime_get_ns();
	hdr->pid = pid_tgid >> 32;
	hdr->tid = (__u32)pid_tgid;
}

#endif /* GS_COMMON_BPF_H */
