// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gpu.bpf.c: GPU activity records, API correlation ids, drops and clock checks, by USDT. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "gs_common.bpf.h"
#include "gs_nvtx.h"

/*
 * The probes of the CUPTI injection library (profilers/cupti/inject.c). Each copies what
 * its arguments point to, bounded by the record's fixed size; nothing else is read.
 */

/* gpusnoop:activity(record, size, kernel_name) */
SEC("usdt")
int BPF_USDT(gpu_activity, const void *rec, __u32 size, const char *name)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_gpu_record *e;
	__u64 n = size;
	long len;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	if (size > GS_GPU_RECORD_BYTES) {
		gs_count(GS_STAT_GPU_TOO_BIG);
		return 0;
	}
	e = gs_reserve(sizeof(*e));
	if (!e)
		return 0;
	e->size = 0;
	e->name_len = 0;
	e->flags = 0;
	/*
	 * clang drops a mask it can prove useless after the check above, and the verifier
	 * then loses the bound on a spilled copy: the mask is applied in asm, where it stays.
	 */
	asm volatile("%0 &= %1" : "+r"(n) : "i"(2 * GS_GPU_RECORD_BYTES - 1));
	if (n && !bpf_probe_read_user(e->rec, n, rec))
		e->size = (__u32)n;
	if (name) {
		len = bpf_probe_read_user_str(e->name, sizeof(e->name), name);
		if (len > 0)
			e->name_len = (__u16)len;
		if (len == sizeof(e->name))
			e->flags |= GS_GPU_F_NAME_TRUNCATED;
	}
	gs_fill_hdr(&e->hdr, GS_EV_GPU_RECORD, sizeof(*e), pid_tgid);
	gs_submit(e);
	return 0;
}

/* gpusnoop:api(correlation_id, cbid, domain), at the call's entry */
SEC("usdt")
int BPF_USDT(gpu_api, __u32 correlation, __u32 cbid, __u32 domain)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_gpu_api *e;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	e = gs_reserve(sizeof(*e));
	if (!e)
		return 0;
	e->correlation = correlation;
	e->cbid = cbid;
	e->domain = domain;
	e->pad = 0;
	gs_fill_hdr(&e->hdr, GS_EV_GPU_API, sizeof(*e), pid_tgid);
	gs_submit(e);
	return 0;
}

/* gpusnoop:dropped(records) */
SEC("usdt")
int BPF_USDT(gpu_dropped, __u64 records)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_gpu_dropped *e;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	e = gs_reserve(sizeof(*e));
	if (!e)
		return 0;
	e->records = records;
	gs_fill_hdr(&e->hdr, GS_EV_GPU_DROPPED, sizeof(*e), pid_tgid);
	gs_submit(e);
	return 0;
}

/* gpusnoop:clock(mono_before, cupti_ts, mono_after) */
SEC("usdt")
int BPF_USDT(gpu_clock, __u64 before, __u64 cupti, __u64 after)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_gpu_clock *e;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	e = gs_reserve(sizeof(*e));
	if (!e)
		return 0;
	e->mono_before = before;
	e->cupti_ns = cupti;
	e->mono_after = after;
	gs_fill_hdr(&e->hdr, GS_EV_GPU_CLOCK, sizeof(*e), pid_tgid);
	gs_submit(e);
	return 0;
}

/* A string of the target's, bounded; sets flag in *flags when it was cut. */
static __always_inline void copy_str(char *dst, __u32 size, __u64 src, __u32 *flags, __u32 flag)
{
	long len = 0;

	if (src)
		len = bpf_probe_read_user_str(dst, size, (const void *)src);
	if (len <= 0)
		dst[0] = '\0';
	else if (len == size)
		*flags |= flag;
}

/* gpusnoop:nvtx(const struct gs_nvtx_usdt *call): one NVTX call, with its strings */
SEC("usdt")
int BPF_USDT(gpu_nvtx, const struct gs_nvtx_usdt *call)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_nvtx_event *e;
	struct gs_nvtx_usdt u;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	if (bpf_probe_read_user(&u, sizeof(u), call)) {
		gs_count(GS_STAT_USER_READ_FAILED);
		return 0;
	}
	e = gs_reserve(sizeof(*e));
	if (!e)
		return 0;
	e->kind = u.kind;
	e->category = u.category;
	e->domain = u.domain;
	e->range_id = u.range_id;
	e->payload = u.payload;
	e->payload_type = u.payload_type;
	e->color = u.color;
	e->has_color = u.has_color;
	e->flags = 0;
	copy_str(e->message, sizeof(e->message), u.message, &e->flags, GS_NVTX_F_MESSAGE_TRUNCATED);
	copy_str(e->domain_name, sizeof(e->domain_name), u.domain_name, &e->flags,
		 GS_NVTX_F_NAME_TRUNCATED);
	copy_str(e->category_name, sizeof(e->category_name), u.category_name, &e->flags,
		 GS_NVTX_F_NAME_TRUNCATED);
	gs_fill_hdr(&e->hdr, GS_EV_NVTX, sizeof(*e), pid_tgid);
	gs_submit(e);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
