// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc.bpf.c: process lifecycle (fork, exec, exit) and dynamic-loader link-map changes. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "gs_common.bpf.h"

#define SIGSTOP 19
#define SIGTSTP 20
#define SIGTTIN 21
#define SIGTTOU 22
#define STOP_SIGNALS                                                             \
	(1ULL << (SIGSTOP - 1) | 1ULL << (SIGTSTP - 1) | 1ULL << (SIGTTIN - 1) | \
	 1ULL << (SIGTTOU - 1))

/* every exec is reported in all-process mode: a new image may carry a static cudart */
const volatile bool cfg_report_all_execs = false;
/* set by userspace when it stops answering: no process may be stopped for it any more */
bool stops_off = false;

/* pid -> struct gs_stopped: stopped by us, not answered yet (userspace deletes, then resumes) */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GS_MAX_STOPPED);
	__type(key, __u32);
	__type(value, struct gs_stopped);
} stopped SEC(".maps");

/* (dev, inode) of images and loaders already probed: an exec of one needs no stop */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GS_MAX_PROBED_FILES);
	__type(key, struct gs_file_key);
	__type(value, __u8);
} probed_files SEC(".maps");

/* The process's start time as /proc/PID/stat gives it: with the pid, it names one process. */
static __always_inline __u64 task_start(struct task_struct *task)
{
	return BPF_CORE_READ(task, group_leader, start_boottime) / GS_NS_PER_TICK;
}

/* pid's entry, if it is this process's: a reused pid is not the target that had it */
static __always_inline struct gs_target *target_of(__u32 pid, __u64 start)
{
	struct gs_target *tg = bpf_map_lookup_elem(&targets, &pid);

	return tg && tg->start && tg->start != start ? NULL : tg;
}

/*
 * Stops the current process until userspace answers its record (reserved already: a stop is
 * never sent unless its record is queued). Not if a stop of someone else's is pending (it is
 * theirs to end), nor if the stopped set is full: a late probe, counted, rather than a
 * process nobody would resume.
 */
static __always_inline bool stop_self(struct task_struct *task, __u32 pid, __u64 start)
{
	struct gs_stopped st = { .start = start };
	__u64 pending = BPF_CORE_READ(task, signal, shared_pending.signal.sig[0]) |
			BPF_CORE_READ(task, pending.signal.sig[0]);

	if (stops_off || (pending & STOP_SIGNALS))
		return false;
	if (bpf_map_update_elem(&stopped, &pid, &st, BPF_ANY)) {
		gs_count(GS_STAT_STOPS_SKIPPED);
		return false;
	}
	if (bpf_send_signal(SIGSTOP)) {
		bpf_map_delete_elem(&stopped, &pid);
		return false;
	}
	gs_count(GS_STAT_STOPS);
	return true;
}

static __always_inline struct gs_proc_event *reserve_proc(__u16 type, __u64 pid_tgid, __u64 start)
{
	struct gs_proc_event *e = gs_reserve(sizeof(*e));

	if (!e)
		return NULL;
	gs_fill_hdr(&e->hdr, type, sizeof(*e), pid_tgid);
	e->start = start;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	return e;
}

/* pid_tgid: the process the record is about (gs_fill_hdr's layout) */
static __always_inline void emit(__u16 type, __u64 pid_tgid, __u64 start)
{
	struct gs_proc_event *e = reserve_proc(type, pid_tgid, start);

	/* at once: records held back by gs_submit() must not delay an exit or a stopped loader */
	if (e)
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
	struct task_struct *task = gs_current_task();
	__u64 start = task_start(task);
	struct gs_target *tg = target_of(pid, start);
	struct gs_proc_event *e;

	if (!tg && !cfg_all_pids)
		return 0;
	e = reserve_proc(GS_EV_LIBS_CHANGED, pid_tgid, start);
	if (!e) {
		if (tg && (tg->flags & GS_TARGET_STOP_ON_LOAD))
			gs_count(GS_STAT_STOPS_SKIPPED);
		return 0;
	}
	if (tg && (tg->flags & GS_TARGET_STOP_ON_LOAD) && tg->skip_loads)
		tg->skip_loads--; /* its libraries were probed at its image's last start-up */
	else if (tg && (tg->flags & GS_TARGET_STOP_ON_LOAD) && stop_self(task, pid, start))
		e->hdr.flags = GS_LIBS_F_STOPPED;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

static __always_inline struct gs_file_key file_key(struct task_struct *task)
{
	struct inode *ino = BPF_CORE_READ(task, mm, exe_file, f_inode);
	struct gs_file_key k = {};

	k.dev = BPF_CORE_READ(ino, i_sb, s_dev);
	k.ino = BPF_CORE_READ(ino, i_ino);
	return k;
}

/*
 * A target that follows its children may exec a program with a static cudart, or with
 * another loader: it stops before the new image's first instruction (the signal is taken on
 * the way back to user space), so that userspace probes the new image first. An image
 * probed already needs no stop (a shell running /bin/true in a loop), unless a rank's
 * environment must be read before it runs (GS_TARGET_ALWAYS_STOP).
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(handle_exec, struct task_struct *task)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	__u64 start = task_start(task);
	struct gs_target *tg = target_of(pid, start);
	struct gs_file_key k;
	struct gs_proc_event *e;
	bool stop;

	if (!tg && !cfg_report_all_execs)
		return 0;
	stop = tg && (tg->flags & GS_TARGET_CHILDREN);
	if (stop && !(tg->flags & GS_TARGET_ALWAYS_STOP)) {
		k = file_key(task);
		stop = !bpf_map_lookup_elem(&probed_files, &k);
	}
	/* nor its loader's start-up (before and after the libraries): the same libraries */
	if (tg)
		tg->skip_loads = stop || !(tg->flags & GS_TARGET_CHILDREN) ? 0 : 2;
	e = reserve_proc(GS_EV_PROC_EXEC, pid_tgid, start);
	if (!e) {
		if (stop)
			gs_count(GS_STAT_STOPS_SKIPPED);
		return 0;
	}
	if (stop && stop_self(task, pid, start))
		e->hdr.flags = GS_EXEC_F_STOPPED;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
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
	struct gs_target *tg = target_of(ppid, task_start(parent)), ct = {};
	struct gs_proc_fork *e;

	if (!tg || !(tg->flags & GS_TARGET_CHILDREN) || pid == ppid)
		return 0;
	/* it may exec a program whose libraries userspace has to probe before they run */
	ct.flags = tg->flags | GS_TARGET_STOP_ON_LOAD;
	ct.start = BPF_CORE_READ(child, start_boottime) / GS_NS_PER_TICK;
	if (bpf_map_update_elem(&targets, &pid, &ct, BPF_ANY)) {
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

/*
 * The last thread of a target leaves: its entry goes here, whether or not its record reaches
 * userspace, so that a process that gets the pid next is never taken for it.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(handle_exit, struct task_struct *task)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32;
	__u64 start = task_start(task);
	struct gs_target *tg = bpf_map_lookup_elem(&targets, &pid);

	/* do_exit() has already dropped this thread from signal->live: 0 means the last one */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	bpf_map_delete_elem(&stopped, &pid);
	if (!tg || (tg->start && tg->start != start))
		return 0;
	bpf_map_delete_elem(&targets, &pid);
	emit(GS_EV_PROC_EXIT, pid_tgid, start);
	return 0;
}

/*
 * Someone else stops a process we stopped: our answer must not end their stop (a
 * scheduler's suspend, a shell's job control). Our own SIGSTOP comes from the process itself.
 */
SEC("tp_btf/signal_generate")
int BPF_PROG(handle_signal, int sig, struct kernel_siginfo *info, struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid);
	struct gs_stopped *st;

	if (sig < SIGSTOP || sig > SIGTTOU)
		return 0;
	st = bpf_map_lookup_elem(&stopped, &pid);
	if (st && (bpf_get_current_pid_tgid() >> 32) != pid)
		st->foreign = 1;
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
	e->start = task_start(task);
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
