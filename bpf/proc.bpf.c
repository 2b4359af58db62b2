// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc.bpf.c: process lifecycle (fork, exec, exit) and dynamic-loader link-map changes. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gs_common.bpf.h"

#define SIGSTOP 19

/* every exec is reported in all-process mode: a new image may carry a static cudart */
const volatile bool cfg_report_all_execs = false;
/* set by userspace when it stops answering: no process may be stopped for it any more */
bool stops_off = false;

/* pid_tgid: the process the record is about (gs_fill_hdr's layout) */
static __always_inline void emit(__u16 type, __u16 flags, __u64 pid_tgid)
{
	struct gs_proc_event *e = gs_reserve(sizeof(*e));

	if (!e)
		return;
	gs_fill_hdr(&e->hdr, type, sizeof(*e), pid_tgid);
	e->hdr.flags = flags;
	/* at once: records held back by gs_submit() must not delay an exit or a stopped loader */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
}

/*
 * ld.so calls _dl_debug_state() (the debugger rendezvous) whenever its link map changes:
 * before and after loading the program's libraries, and around each dlopen/dlclose, always
 * before the new objects' constructors run. A spawned child is stopped here so that
 * userspace attaches to the new libraries before the process can call into them.
 */
SEC("uprobe")
int dl_debug_state_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	__u32 *flags = bpf_map_lookup_elem(&targets, &pid);
	__u16 ev_flags = 0;

	if (!flags && !cfg_all_pids)
		return 0;
	if (flags && (*flags & GS_TARGET_STOP_ON_LOAD) && !stops_off && !bpf_send_signal(SIGSTOP))
		ev_flags = GS_LIBS_F_STOPPED;
	emit(GS_EV_LIBS_CHANGED, ev_flags, pid_tgid);
	return 0;
}

/*
 * A target that follows its children may exec a program with a static cudart, or with
 * another loader: it stops before the new image's first instruction (the signal is taken on
 * the way back to user space), so that userspace probes the new image first.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *task)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	__u32 *flags = bpf_map_lookup_elem(&targets, &pid);
	__u16 ev_flags = 0;

	if (!flags && !cfg_report_all_execs)
		return 0;
	if (flags && (*flags & GS_TARGET_CHILDREN) && !stops_off && !bpf_send_signal(SIGSTOP))
		ev_flags = GS_EXEC_F_STOPPED;
	emit(GS_EV_PROC_EXEC, ev_flags, pid_tgid);
	return 0;
}

/*
 * A new process of a target that follows its children is a target from here on: the
 * tracepoint runs in the parent before the child is first woken, so the child's first
 * instruction, and a CUDA call it makes at once on the libraries it inherited, are traced.
 * Threads are not processes: they share their process's entry.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(handle_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = BPF_CORE_READ(parent, tgid), pid = BPF_CORE_READ(child, tgid);
	__u32 *flags = bpf_map_lookup_elem(&targets, &ppid), child_flags;
	struct gs_proc_fork *e;

	if (!flags || !(*flags & GS_TARGET_CHILDREN) || pid == ppid)
		return 0;
	/* it may exec a program whose libraries userspace has to probe before they run */
	child_flags = *flags | GS_TARGET_STOP_ON_LOAD;
	if (bpf_map_update_elem(&targets, &pid, &child_flags, BPF_ANY)) {
		gs_count(GS_STAT_TARGETS_FULL);
		return 0;
	}
	e = gs_reserve(sizeof(*e));
	if (!e)
		return 0; /* counted; userspace adopts it at its first event */
	gs_fill_hdr(&e->hdr, GS_EV_PROC_FORK, sizeof(*e),
		    (__u64)pid << 32 | (__u32)BPF_CORE_READ(child, pid));
	e->ppid = ppid;
	e->pad = 0;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;

	if (!bpf_map_lookup_elem(&targets, &pid))
		return 0;
	/* do_exit() has already dropped this thread from signal->live: 0 means the last one */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	emit(GS_EV_PROC_EXIT, 0, pid_tgid);
	return 0;
}

/*
 * The OOM killer chose a victim, host-wide or for a memory cgroup over its limit. The
 * running task is the one whose allocation failed, so the record names the victim instead.
 * Loaded only when asked for (the daemon's trigger).
 */
SEC("tp_btf/mark_victim")
int BPF_PROG(handle_oom_victim, struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid);
	__u64 victim = (__u64)pid << 32 | (__u32)BPF_CORE_READ(task, pid);

	struct gs_proc_event *e;

	if (!cfg_all_pids && !bpf_map_lookup_elem(&targets, &pid))
		return 0;
	/* on the OOM buffer: a flood on events must not hide whom the kernel killed */
	e = gs_reserve_oom(sizeof(*e));
	if (!e)
		return 0;
	gs_fill_hdr(&e->hdr, GS_EV_PROC_OOM_KILL, sizeof(*e), victim);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
