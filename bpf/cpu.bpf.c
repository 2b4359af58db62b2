// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cpu.bpf.c: perf_event CPU samples of the targets: counted per stack, or one record each. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "gs_common.bpf.h"
#include "gs_python.bpf.h"
#include "gs_ustack.bpf.h"

#define EEXIST 17
#define ENOMEM 12

#define STACK_MAP_ENTRIES  16384
#define COUNTS_MAP_ENTRIES 16384

/* per sample records (`record -e cpu`) instead of in-kernel counts (`profile`) */
const volatile bool cfg_records = false;
/* only tasks in the cgroup (v2) at index 0 of cgroups, or below it */
const volatile bool cfg_cgroup = false;
/* -U: user stacks only; -K: kernel stacks only (bcc's profile) */
const volatile bool cfg_no_kernel_stack = false;
const volatile bool cfg_no_user_stack = false;
/* --tid: only this thread; 0: every thread of the targets */
const volatile __u32 cfg_tid = 0;
/* --per-thread: counts per thread, not per (process, thread name) */
const volatile bool cfg_per_thread = false;
/* --stacks dwarf: a copy of the user stack slice before each record (gs_ustack.bpf.h) */
const volatile bool cfg_ustack = false;

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, STACK_MAP_ENTRIES);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, GS_MAX_STACK * sizeof(__u64));
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, COUNTS_MAP_ENTRIES);
	__type(key, struct gs_cpu_key);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

/*
 * A sample in user mode has a user ip. Decided from the ip, not from regs.cs: cs changed
 * size in pt_regs (a u16 in a union since 6.9's FRED), and a CO-RE read of it fails to
 * relocate on 6.1.
 */
static __always_inline bool in_user_mode(struct bpf_perf_event_data *ctx)
{
	/* the context allows only whole-register loads: volatile keeps clang from narrowing */
	__u64 ip = *(volatile __u64 *)&ctx->regs.ip;

	return !gs_is_kernel_addr(ip);
}

static __always_inline __s32 stack_id(struct bpf_perf_event_data *ctx, __u64 flags)
{
	long id = bpf_get_stackid(ctx, &stacks, flags);

	/* a bucket taken by another stack, or no memory: the sample keeps counting, stackless */
	if (id == -EEXIST || id == -ENOMEM)
		gs_count(GS_STAT_CPU_STACK_LOST);
	return (__s32)id;
}

static __always_inline void count_sample(struct bpf_perf_event_data *ctx, __u64 pid_tgid)
{
	struct gs_cpu_key key = { .pid = pid_tgid >> 32,
				  .user_stack_id = -1,
				  .kernel_stack_id = -1 };
	__u64 zero = 0, *n;

	bpf_get_current_comm(key.comm, sizeof(key.comm));
	if (cfg_per_thread)
		key.tid = (__u32)pid_tgid;
	if (!cfg_no_user_stack)
		key.user_stack_id = stack_id(ctx, BPF_F_USER_STACK);
	if (!cfg_no_kernel_stack && !in_user_mode(ctx))
		key.kernel_stack_id = stack_id(ctx, 0);
	n = bpf_map_lookup_elem(&counts, &key);
	if (!n) {
		/* another CPU may have added it meanwhile: then the lookup below finds it */
		bpf_map_update_elem(&counts, &key, &zero, BPF_NOEXIST);
		n = bpf_map_lookup_elem(&counts, &key);
		if (!n) {
			gs_count(GS_STAT_CPU_COUNTS_FULL);
			return;
		}
	}
	__sync_fetch_and_add(n, 1);
}

static __always_inline void emit_sample(struct bpf_perf_event_data *ctx, __u64 pid_tgid)
{
	__u64 ts = bpf_ktime_get_ns();
	int py = cfg_no_user_stack ? 0 : gs_py_emit(pid_tgid, ts);
	bool ustack = cfg_ustack && !cfg_no_user_stack && gs_emit_ustack(ctx, pid_tgid, ts);
	struct gs_cpu_sample *e = gs_reserve(sizeof(*e));
	long nbytes;

	if (!e)
		return;
	e->cpu = bpf_get_smp_processor_id();
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	e->nr_kernel = 0;
	if (!cfg_no_kernel_stack && !in_user_mode(ctx)) {
		nbytes = bpf_get_stack(ctx, e->kernel, sizeof(e->kernel), 0);
		e->nr_kernel = nbytes > 0 ? nbytes / sizeof(__u64) : 0;
	}
	/* stamped with the sample's time, as its Python frames and stack slice are */
	e->nr_frames = gs_stack_tail(
		ctx, &e->hdr, GS_EV_CPU_SAMPLE, offsetof(struct gs_cpu_sample, frames), e->frames,
		NULL, pid_tgid, ts, gs_stack_rec_flags(ustack, py), !cfg_no_user_stack, false);
	gs_submit(e);
}

SEC("perf_event")
int handle_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;

	/* pid 0 is the idle task: a CPU with nothing to run */
	if (!pid || !gs_is_target(pid))
		return 0;
	if (cfg_tid && (__u32)pid_tgid != cfg_tid)
		return 0;
	if (cfg_cgroup && bpf_current_task_under_cgroup(&cgroups, 0) != 1)
		return 0;
	/* a thread of a Python process: its Python frames need the record's walk */
	if (cfg_records || cfg_ustack || bpf_map_lookup_elem(&py_procs, &pid))
		emit_sample(ctx, pid_tgid);
	else
		count_sample(ctx, pid_tgid);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
