// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tracker.c: follow targets and hand each ring-buffer record to the command that asked. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "proc.skel.h"
#include "profilers/bpf_objects.h"
#include "profilers/cuda/gpu_attach.h"
#include "profilers/lib_attach.h"
#include "user/pid_index.h"
#include "profilers/job_control.h"
#include "profilers/proc_tree.h"
#include "profilers/stop_set.h"
#include "profilers/watchdog.h"
#include "profilers/tracker.h"
#include "profilers/proc_filter.h"
#include "profilers/drain_budget.h"
#include "profilers/oom_queue.h"
#include "user/array.h"
#include "user/clock.h"
#include "user/elf_file.h"
#include "user/event_decode.h"
#include "user/kernel_probe.h"
#include "user/links.h"
#include "user/log.h"
#include "user/losses.h"
#include "user/proc_info.h"
#include "user/proc_maps.h"
#include "user/spawn.h"
#include "user/stack_cache.h"
#include "user/python.h"
#include "user/symcache.h"
#include "user/unwind.h"

#define LIVENESS_CHECK_NS 500000000ULL
/*
 * Stack slices waiting for the record they precede. That record was reserved right after
 * the slice by the same program, so only records of other CPUs come between the two; a
 * slot per thread of a few CPUs' worth is plenty, and an orphan (the record's reserve
 * failed) is simply overwritten.
 */
#define USTACK_SLOTS 64
/* The flags of a followed tree's processes, as bpf/proc.bpf.c gives them at fork. */
#define CHILD_FLAGS (GS_TARGET_TRACED | GS_TARGET_CHILDREN | GS_TARGET_STOP_ON_LOAD)

struct target {
	pid_t pid;
	unsigned int loads; /* loader events since its exec: its image is probed after two */
	char comm[16];
};

struct ustack_slot {
	__u32 tid;
	__u64 ts_ns;
	struct gs_ustack_event *e; /* owned copy; NULL until first used */
};

struct gs_tracker {
	struct gs_tracker_opts opts;
	struct gs_tracker_ops ops;
	struct gs_bpf_objects objs;
	struct ring_buffer *rb;
	struct ring_buffer *oom_rb; /* OOM signals: read before rb (oom_drain()) */
	struct gs_oom_queue *oom_queue;
	unsigned oom_deferred_turns; /* turns the queue's oldest deferred record has waited */
	uint64_t last_event_ns;	     /* time of the last record read from rb's shared buffer */
	struct gs_links *links;
	struct gs_lib_attach *attach; /* library discovery and probes */
	struct gs_gpu_attach *gpu;    /* opts.gpu: the injection library's probes */
	struct gs_symcache *symcache;
	struct gs_unwinder *unwinder; /* --stacks dwarf only */
	struct gs_python *python;     /* NULL with --no-python */
	struct gs_stack_cache
		*stacks;	   /* the stacks BPF sent once, for records that refer to them */
	struct gs_proc_tree *tree; /* parents and ranks of the -p/-- targets and their children */
	struct ustack_slot ustacks[USTACK_SLOTS];
	size_t next_ustack;
	struct target *targets; /* in no order; found by pid through target_index */
	size_t nr_targets, cap_targets;
	struct gs_pid_index target_index;
	struct gs_child child;
	int child_status;
	bool child_reaped;
	bool child_execed; /* its exec was handled: its image is probed */
	bool closing;	   /* records are no longer handled, stopped processes only let go */
	uint64_t last_liveness_ns, last_sweep_ns;
	struct gs_watchdog watchdog;		/* resumes what we stopped if we die */
	uint32_t unanswered[GS_STOP_SWEEP_MAX]; /* in the stopped set at the last sweep */
	size_t nr_unanswered;
	struct gs_drain_budget budget; /* this turn's share of the ring buffer (drain()) */
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!gs_log_enabled(GS_LOG_LIBBPF) && level != LIBBPF_WARN)
		return 0;
	if (level == LIBBPF_WARN && !gs_log_enabled(GS_LOG_DEBUG))
		return 0; /* failures are reported once, by us, with context */
	return vfprintf(stderr, fmt, ap);
}

/* Every record asks this (in -a mode, of thousands of processes): a hash, not a scan. */
static struct target *find_target(struct gs_tracker *t, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&t->target_index, pid, &pos) ? &t->targets[pos] : NULL;
}

static struct target *add_target(struct gs_tracker *t, pid_t pid, __u32 flags)
{
	struct target *tg = find_target(t, pid);
	struct gs_target value = { .flags = flags };
	__u32 key = (__u32)pid;
	uint64_t start;

	if (tg)
		return tg;
	if (t->opts.stop_every_exec && (flags & GS_TARGET_CHILDREN))
		value.flags |= GS_TARGET_ALWAYS_STOP;
	if (GS_ARRAY_RESERVE(t->targets, t->nr_targets, t->cap_targets, 16) ||
	    gs_pid_index__set(&t->target_index, pid, t->nr_targets))
		return NULL;
	tg = &t->targets[t->nr_targets++];
	*tg = (struct target){ .pid = pid };
	gs_read_comm(pid, pid, tg->comm, sizeof(tg->comm));
	/* keyed by start time too: once it is gone, BPF drops it, and its pid is not it */
	if (gs_proc_start(pid, &start))
		return tg; /* gone already: its exit was seen, or a check of liveness sees it */
	value.start = start;
	/* one BPF made at fork is kept: it counts its loader events (bpf/proc.bpf.c) */
	if (bpf_map_update_elem(bpf_map__fd(t->objs.proc->maps.targets), &key, &value,
				BPF_NOEXIST) &&
	    errno != EEXIST)
		gs_warn("pid %d: cannot follow exits: %s", (int)pid, strerror(errno));
	return tg;
}

/* Attaches to what pid maps; under -a, a CUDA user or one with probes of its own is followed. */
static bool scan_process(struct gs_tracker *t, pid_t pid)
{
	bool cuda = gs_lib_attach__scan(t->attach, pid);

	if (t->gpu && gs_gpu_attach__scan(t->gpu, gs_symcache__maps(t->symcache, pid),
					  t->opts.all ? -1 : pid))
		cuda = true;

	/*
	 * Under -a, what is kept of a process goes when it exits: a CUDA user's snapshot (kept
	 * to name its first records) and probes of its own (a user's files) are followed from
	 * here, even if no record of it ever comes; nothing is kept of any other process.
	 */
	if (t->opts.all && !find_target(t, pid)) {
		if (cuda || gs_links__count_pid(t->links, pid))
			add_target(t, pid, GS_TARGET_TRACED);
		else
			gs_symcache__forget(t->symcache, pid);
	}
	/* only followed processes: their exits are seen, so their Python state is forgotten */
	if (t->python && find_target(t, pid))
		gs_python__scan(t->python, pid);
	return cuda;
}

/* Forgets a target; in -a mode thousands come and go, so none is kept once gone. */
static void drop_target(struct gs_tracker *t, struct target *tg)
{
	size_t pos = (size_t)(tg - t->targets);

	gs_pid_index__remove(&t->target_index, tg->pid);
	*tg = t->targets[--t->nr_targets];
	/* the last one moved into the hole (moving a pid never allocates) */
	if (pos < t->nr_targets)
		gs_pid_index__set(&t->target_index, tg->pid, pos);
}

static void target_gone(struct gs_tracker *t, pid_t pid, bool exec)
{
	struct target *tg = find_target(t, pid);

	if (!tg)
		return;
	if (t->ops.proc_gone)
		t->ops.proc_gone(t->ops.ctx, pid, exec);
	if (t->python)
		gs_python__forget(t->python, pid); /* an exec may start another interpreter */
	if (exec) {
		gs_read_comm(pid, pid, tg->comm, sizeof(tg->comm));
		scan_process(t, pid);
		return;
	}
	/* its targets entry went in BPF, at its exit (a pid reused since keeps its own) */
	gs_proc_tree__exit(t->tree, pid);
	/*
	 * The probes that watch pid alone (every probe of a -p target; those of a user's own
	 * files under -a) went useless with it: detached in the background, and its files
	 * forgotten, so that a long-running -a session or daemon does not pile them up.
	 */
	gs_lib_attach__forget(t->attach, pid);
	if (t->gpu)
		gs_gpu_attach__forget(t->gpu, pid);
	gs_symcache__forget(t->symcache, pid);
	drop_target(t, tg);
}

/*
 * Known to -a mode from its first CUDA event on; follows its exit from then on. In a followed
 * tree, a process whose fork record was lost (ring buffer full) is known from its first event.
 */
static void note_process(struct gs_tracker *t, pid_t pid)
{
	if ((!t->opts.all && !t->opts.children) || find_target(t, pid))
		return;
	add_target(t, pid, t->opts.all ? GS_TARGET_TRACED : CHILD_FLAGS);
	if (!t->opts.all)
		gs_proc_tree__add(t->tree, pid, 0);
	gs_symcache__refresh(t->symcache, pid);
	if (t->python)
		gs_python__scan(t->python, pid);
}

/* The record with its Python frames merged into its stack (a copy in buf), or itself. */
static const void *with_python(struct gs_tracker *t, const void *e, union gs_py_merged *buf)
{
	if (t->python && gs_python__merge_record(t->python, e, buf))
		return buf;
	/* a native stack cut at its last frame says so: [truncated] as its outermost frame */
	return gs_python__mark_cut_stack(e, buf) ? buf : e;
}

static void stash_ustack(struct gs_tracker *t, const struct gs_ustack_event *e)
{
	struct ustack_slot *slot = NULL;

	for (size_t i = 0; i < USTACK_SLOTS && !slot; i++)
		if (t->ustacks[i].e && t->ustacks[i].tid == e->hdr.tid)
			slot = &t->ustacks[i];
	if (!slot) {
		slot = &t->ustacks[t->next_ustack];
		t->next_ustack = (t->next_ustack + 1) % USTACK_SLOTS;
	}
	if (!slot->e)
		slot->e = malloc(sizeof(*slot->e));
	if (!slot->e)
		return; /* the record keeps its frame-pointer stack */
	/* only the captured bytes: the rest of the 16 KiB is never read */
	memcpy(slot->e, e, offsetof(struct gs_ustack_event, st.data) + e->st.size);
	slot->tid = e->hdr.tid;
	slot->ts_ns = e->hdr.ts_ns;
}

size_t gs_tracker__unwind(struct gs_tracker *t, const struct gs_event_hdr *hdr, __u64 *frames,
			  size_t max_frames)
{
	pid_t pid = (pid_t)hdr->pid;
	const struct gs_maps *maps;
	uint64_t ips[GS_MAX_STACK];
	int n;

	if (!t->unwinder || !(hdr->flags & GS_EV_F_USTACK))
		return 0;
	for (size_t i = 0; i < USTACK_SLOTS; i++) {
		struct ustack_slot *slot = &t->ustacks[i];

		if (!slot->e || slot->tid != hdr->tid || slot->ts_ns != hdr->ts_ns)
			continue;
		slot->ts_ns = 0; /* used once */
		if (max_frames > GS_MAX_STACK)
			max_frames = GS_MAX_STACK;
		/* the symbolizer's snapshot: it outlives the process, which may be gone by now */
		maps = gs_symcache__maps(t->symcache, pid);
		if (maps && !gs_maps__find(maps, slot->e->st.regs[GS_USTACK_REG_IP]) &&
		    gs_symcache__refresh(t->symcache, pid) == 0)
			maps = gs_symcache__maps(t->symcache, pid);
		if (!maps)
			return 0;
		n = gs_unwinder__unwind_maps(t->unwinder, maps, &slot->e->st, ips, max_frames);
		for (int i = 0; i < n; i++)
			frames[i] = ips[i];
		return n > 0 ? (size_t)n : 0;
	}
	return 0;
}

/* The alloc record with its frames unwound from its stack slice, in out; false if none. */
static bool unwind_alloc(struct gs_tracker *t, const struct gs_mem_alloc *e,
			 struct gs_mem_alloc *out)
{
	size_t n = gs_tracker__unwind(t, &e->hdr, out->frames, GS_MAX_STACK);

	if (!n)
		return false;
	memcpy(out, e, offsetof(struct gs_mem_alloc, frames));
	out->nr_frames = (__u16)n;
	out->hdr.size = (__u32)(offsetof(struct gs_mem_alloc, frames) + n * sizeof(__u64));
	return true;
}

static bool unwind_free_ret(struct gs_tracker *t, const struct gs_mem_free_ret *e,
			    struct gs_mem_free_ret *out)
{
	size_t n = gs_tracker__unwind(t, &e->hdr, out->frames, GS_MAX_STACK);

	if (!n)
		return false;
	memcpy(out, e, offsetof(struct gs_mem_free_ret, frames));
	out->nr_frames = (__u16)n;
	out->hdr.size = (__u32)(offsetof(struct gs_mem_free_ret, frames) + n * sizeof(__u64));
	return true;
}

/*
 * A torch record with its frames unwound from its stack slice, in out; false if none. At a
 * function's entry (the profiler hooks, __cxa_throw) the first address is the hooked
 * function itself, dropped so that the stack starts in its caller, as with frame pointers.
 */
static bool unwind_torch(struct gs_tracker *t, const void *e, size_t frames_off, bool at_entry,
			 void *out)
{
	__u64 frames[GS_MAX_STACK];
	size_t n = gs_tracker__unwind(t, e, frames, GS_MAX_STACK), skip = at_entry && n > 1;
	__u16 nr = (__u16)(n - skip);

	if (!n)
		return false;
	memcpy(out, e, frames_off);
	memcpy((char *)out + frames_off, frames + skip, nr * sizeof(__u64));
	/* the caller sets nr_frames from the size */
	((struct gs_event_hdr *)out)->size = (__u32)(frames_off + nr * sizeof(__u64));
	return true;
}

static int stopped_fd(const struct gs_tracker *t)
{
	return bpf_map__fd(t->objs.proc->maps.stopped);
}

/*
 * After its loader's start-up (two link-map changes), a followed process's image and
 * libraries are probed: the next exec of that image needs no stop (bpf/proc.bpf.c).
 */
static void note_probed_image(struct gs_tracker *t, pid_t pid)
{
	struct target *tg = find_target(t, pid);
	struct gs_file_key key;
	__u8 one = 1;

	if (!tg || !t->opts.children || ++tg->loads != 2 || gs_exe_file_key(pid, &key))
		return;
	bpf_map_update_elem(bpf_map__fd(t->objs.proc->maps.probed_files), &key, &one, BPF_ANY);
}

/* The loader mapped or unmapped libraries (a stopped spawned command waits for us). */
static void on_libs_changed(struct gs_tracker *t, const struct gs_proc_event *e)
{
	pid_t pid = (pid_t)e->hdr.pid;

	/* in -a mode every process reports here: keep snapshots only of CUDA users */
	if (!scan_process(t, pid) && !find_target(t, pid))
		gs_symcache__forget(t->symcache, pid);
	note_probed_image(t, pid);
	if (e->hdr.flags & GS_LIBS_F_STOPPED)
		gs_stop_set__answer(stopped_fd(t), pid, e->start);
}

/* A target's new process, before it first ran; it maps what its parent did. */
static void on_fork(struct gs_tracker *t, const struct gs_proc_fork *e)
{
	pid_t pid = (pid_t)e->hdr.pid;

	if (!add_target(t, pid, CHILD_FLAGS) || gs_proc_tree__add(t->tree, pid, (pid_t)e->ppid))
		gs_warn("pid %d: out of memory: its parent is not shown", (int)pid);
	/* no stop holds it: it may be gone already, with what it inherited */
	gs_symcache__inherit(t->symcache, pid, (pid_t)e->ppid);
	scan_process(t, pid);
}

static void on_exec(struct gs_tracker *t, const struct gs_proc_event *e)
{
	pid_t pid = (pid_t)e->hdr.pid;
	struct target *tg = find_target(t, pid);

	t->child_execed |= pid == t->child.pid;
	if (tg) {
		tg->loads = 0;
		gs_proc_tree__exec(t->tree, pid);
		target_gone(t, pid, true); /* probes the new image */
		/* its name at exec, from the record: a process not held there may be gone now */
		tg = find_target(t, pid);
		if (tg && e->comm[0]) {
			memcpy(tg->comm, e->comm, sizeof(tg->comm));
			tg->comm[sizeof(tg->comm) - 1] = '\0';
		}
	} else if (t->opts.all) {
		scan_process(t, pid);
	}
	/* a followed tree's process waits for them before its new image runs */
	if (e->hdr.flags & GS_EXEC_F_STOPPED)
		gs_stop_set__answer(stopped_fd(t), pid, e->start);
}

static void on_oom_kill(struct gs_tracker *t, pid_t pid)
{
	if (t->ops.oom_kill && (t->opts.all || find_target(t, pid)))
		t->ops.oom_kill(t->ops.ctx, pid);
}

static void on_mem_alloc(struct gs_tracker *t, const struct gs_mem_alloc *e)
{
	union gs_py_merged merged;
	struct gs_mem_alloc unwound;

	note_process(t, (pid_t)e->hdr.pid);
	if (unwind_alloc(t, e, &unwound))
		e = &unwound;
	e = with_python(t, e, &merged);
	if (t->ops.mem_alloc)
		t->ops.mem_alloc(t->ops.ctx, e);
}

static void on_mem_free(struct gs_tracker *t, const struct gs_mem_free *e)
{
	note_process(t, (pid_t)e->hdr.pid);
	if (t->ops.mem_free)
		t->ops.mem_free(t->ops.ctx, e);
}

static void on_mem_free_ret(struct gs_tracker *t, const struct gs_mem_free_ret *e)
{
	union gs_py_merged merged;
	struct gs_mem_free_ret unwound;

	if (unwind_free_ret(t, e, &unwound))
		e = &unwound;
	e = with_python(t, e, &merged);
	if (t->ops.mem_free_ret)
		t->ops.mem_free_ret(t->ops.ctx, e);
}

static void on_cuda_call(struct gs_tracker *t, const struct gs_cuda_call *e)
{
	union gs_py_merged merged;
	note_process(t, (pid_t)e->hdr.pid);
	e = with_python(t, e, &merged);
	if (t->ops.cuda_call)
		t->ops.cuda_call(t->ops.ctx, e);
}

static void on_cpu_sample(struct gs_tracker *t, const struct gs_cpu_sample *e)
{
	union gs_py_merged merged;
	struct gs_cpu_sample unwound;
	size_t n;

	note_process(t, (pid_t)e->hdr.pid);
	/* profile --stacks dwarf: the user stack unwound from its slice, as for allocations */
	n = gs_tracker__unwind(t, &e->hdr, unwound.frames, GS_MAX_STACK);
	if (n) {
		memcpy(&unwound, e, offsetof(struct gs_cpu_sample, frames));
		unwound.nr_frames = (__u16)n;
		unwound.hdr.size = (__u32)(offsetof(struct gs_cpu_sample, frames) + n * 8);
		e = &unwound;
	}
	e = with_python(t, e, &merged);
	if (t->ops.cpu_sample)
		t->ops.cpu_sample(t->ops.ctx, e);
}

static void on_torch_mem(struct gs_tracker *t, const struct gs_torch_mem *e)
{
	union gs_py_merged merged;
	struct gs_torch_mem unwound;
	size_t off = offsetof(struct gs_torch_mem, frames);

	note_process(t, (pid_t)e->hdr.pid);
	if (unwind_torch(t, e, off, e->source == GS_TORCH_SRC_REPORT, &unwound)) {
		unwound.nr_frames = (__u16)((unwound.hdr.size - off) / sizeof(__u64));
		e = &unwound;
	}
	e = with_python(t, e, &merged);
	if (t->ops.torch_mem)
		t->ops.torch_mem(t->ops.ctx, e);
}

static void on_torch_oom(struct gs_tracker *t, const struct gs_torch_oom *e)
{
	union gs_py_merged merged;
	struct gs_torch_oom unwound;
	size_t off = offsetof(struct gs_torch_oom, frames);

	note_process(t, (pid_t)e->hdr.pid);
	if (unwind_torch(t, e, off, true, &unwound)) {
		unwound.nr_frames = (__u16)((unwound.hdr.size - off) / sizeof(__u64));
		e = &unwound;
	}
	e = with_python(t, e, &merged);
	if (t->ops.torch_oom)
		t->ops.torch_oom(t->ops.ctx, e);
}

/* --comm/--cgroup: whether a record of this type from this process is dropped */
static bool filtered_out(struct gs_tracker *t, int type, pid_t pid)
{
	switch (type) {
	case GS_EV_PROC_EXEC: /* judged again at its next record: its name may change */
	case GS_EV_PROC_EXIT:
		gs_proc_filter__forget(t->opts.filter, pid);
		return false;
	case GS_EV_LIBS_CHANGED:
	case GS_EV_PROC_FORK:
	case GS_EV_PYCODE:
	case -EINVAL:
		return false;
	default:
		return !gs_proc_filter__match(t->opts.filter, pid);
	}
}

/* Each validated record to its handler. */
static void dispatch_event(struct gs_tracker *t, void *data, size_t size)
{
	const struct gs_event_hdr *hdr = data;
	int type = gs_event_decode(data, size);
	union gs_stack_record resolved;

	/* first, in ring-buffer order: a stack sent once is kept, a reference gets its frames */
	if (type > 0 && t->stacks) {
		data = (void *)gs_stack_cache__resolve(t->stacks, data, &size, &resolved,
						       sizeof(resolved));
		hdr = data;
	}
	if (t->opts.filter && filtered_out(t, type, (pid_t)hdr->pid))
		return;
	if (t->closing) {
		if ((type == GS_EV_LIBS_CHANGED && (hdr->flags & GS_LIBS_F_STOPPED)) ||
		    (type == GS_EV_PROC_EXEC && (hdr->flags & GS_EXEC_F_STOPPED)))
			gs_stop_set__answer(stopped_fd(t), (pid_t)hdr->pid,
					    ((const struct gs_proc_event *)data)->start);
		return;
	}
	switch (type) {
	case -EINVAL:
		gs_warn("malformed ring buffer record (%zu bytes): skipped", size);
		break;
	case GS_EV_LIBS_CHANGED:
		on_libs_changed(t, data);
		break;
	case GS_EV_PROC_EXEC:
		on_exec(t, data);
		break;
	case GS_EV_PROC_FORK:
		on_fork(t, data);
		break;
	case GS_EV_PROC_EXIT:
		target_gone(t, (pid_t)hdr->pid, false);
		break;
	case GS_EV_PROC_OOM_KILL:
		on_oom_kill(t, (pid_t)hdr->pid);
		break;
	case GS_EV_USTACK:
		if (t->unwinder)
			stash_ustack(t, data);
		break;
	case GS_EV_PYSTACK:
		if (t->python)
			gs_python__stash(t->python, data);
		break;
	case GS_EV_PYCODE:
		if (t->python)
			gs_python__learn(t->python, data);
		break;
	case GS_EV_MEM_ALLOC:
		on_mem_alloc(t, data);
		break;
	case GS_EV_MEM_FREE:
		on_mem_free(t, data);
		break;
	case GS_EV_MEM_FREE_RET:
		on_mem_free_ret(t, data);
		break;
	case GS_EV_CUDA_CALL:
		on_cuda_call(t, data);
		break;
	case GS_EV_CPU_SAMPLE:
		on_cpu_sample(t, data);
		break;
	case GS_EV_TORCH_MEM:
		on_torch_mem(t, data);
		break;
	case GS_EV_TORCH_OOM:
		on_torch_oom(t, data);
		break;
	case GS_EV_GPU_RECORD:
	case GS_EV_GPU_API:
	case GS_EV_GPU_DROPPED:
	case GS_EV_GPU_CLOCK:
	case GS_EV_NVTX:
		note_process(t, (pid_t)hdr->pid);
		if (t->ops.gpu_event)
			t->ops.gpu_event(t->ops.ctx, hdr, size);
		break;
	default:
		gs_dbg("unknown record type %u", hdr->type);
	}
}

/* Turns an OOM record may wait for the shared buffer's records older than itself. */
#define OOM_DEFER_TURNS 8

/*
 * The OOM records queued up to upto_ns, handed on oldest first: merged by time with the
 * shared buffer's records, an OOM comes after its process's allocations and exec and before
 * its exit (its report then has them, and its name). A later one waits, never lost, at most
 * OOM_DEFER_TURNS turns of a flood.
 */
static void flush_ooms(struct gs_tracker *t, uint64_t upto_ns)
{
	size_t n = t->oom_queue->nr;
	void *data;
	size_t size;

	while (n-- && gs_oom_queue__pop(t->oom_queue, &data, &size)) {
		const struct gs_event_hdr *hdr = data;

		if (size >= sizeof(*hdr) && hdr->ts_ns > upto_ns) {
			gs_oom_queue__push(t->oom_queue, data, size); /* its room was just freed */
			continue;
		}
		dispatch_event(t, data, size);
	}
}

/*
 * The OOM buffer's callback, from oom_rb and from rb (which watches it too, so that an OOM
 * record wakes a waiting reader): into the queue, emptied first when full.
 */
static int queue_oom(void *ctx, void *data, size_t size)
{
	struct gs_tracker *t = ctx;

	if (gs_oom_queue__full(t->oom_queue))
		flush_ooms(t, UINT64_MAX);
	if (gs_oom_queue__push(t->oom_queue, data, size) == -E2BIG)
		gs_warn("OOM record of %zu bytes: too big, skipped", size);
	return 0;
}

/* The OOM signals waiting, read now; handled up to upto_ns (see flush_ooms()). */
static void oom_drain(struct gs_tracker *t, uint64_t upto_ns)
{
	ring_buffer__consume(t->oom_rb);
	flush_ooms(t, upto_ns);
}

/*
 * After a turn: the shared buffer read to its end, or the deferred records waited long
 * enough: every OOM record goes.
 */
static void oom_turn_end(struct gs_tracker *t, bool spent)
{
	if (!spent || ++t->oom_deferred_turns >= OOM_DEFER_TURNS) {
		flush_ooms(t, UINT64_MAX);
		t->oom_deferred_turns = 0;
	}
}

/* Records between two looks at the OOM buffer in the middle of a drain. */
#define OOM_CHECK_EVERY 1024

/* The ring buffer's callback; -EAGAIN after the turn's last record stops the read there. */
static int handle_event(void *ctx, void *data, size_t size)
{
	struct gs_tracker *t = ctx;
	const struct gs_event_hdr *hdr = data;

	if (size >= sizeof(*hdr) && !t->closing) {
		if (hdr->ts_ns > t->last_event_ns)
			t->last_event_ns = hdr->ts_ns;
		/* a process's exit or exec ends what an OOM of it reports: the OOM goes first */
		if (hdr->type == GS_EV_PROC_EXIT || hdr->type == GS_EV_PROC_EXEC)
			oom_drain(t, hdr->ts_ns);
		else if (t->oom_queue->nr)
			flush_ooms(t, hdr->ts_ns);
	}
	dispatch_event(t, data, size);
	if (t->closing)
		return 0; /* letting stopped processes go is never cut short */
	if (gs_drain_budget__take(&t->budget))
		return -EAGAIN;
	if (t->budget.used % OOM_CHECK_EVERY == 0)
		oom_drain(t, t->last_event_ns);
	return 0;
}

/*
 * Reads at most a turn's budget of records (waiting up to timeout_ms for the first, -1: read
 * what is there without waiting). Returns the number handled or -errno.
 */
static int drain(struct gs_tracker *t, int timeout_ms)
{
	int n;

	if (!t->closing)
		oom_drain(t, t->last_event_ns);
	gs_drain_budget__start(&t->budget);
	n = timeout_ms >= 0 ? ring_buffer__poll(t->rb, timeout_ms) : 0;
	/*
	 * A wake-up reads only the buffer that woke it: after an OOM record's, the shared one's
	 * records below the wake-up threshold, the OOM's own allocations among them, come now.
	 */
	if (n >= 0 && !t->budget.spent) {
		int more = ring_buffer__consume(t->rb);

		n = more < 0 ? more : n + more;
	}
	oom_turn_end(t, n == -EAGAIN && t->budget.spent);
	if (n == -EAGAIN && t->budget.spent)
		return (int)t->budget.used; /* the rest is read next turn */
	return n;
}

/*
 * Every uprobe link holds a descriptor, and probes per process (-p targets; users' own files
 * under -a) add up past the usual soft limit of 1024: take what the hard limit allows, as
 * perf does.
 */
static void raise_fd_limit(void)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim) || lim.rlim_cur >= lim.rlim_max)
		return;
	lim.rlim_cur = lim.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &lim))
		gs_dbg("raising the descriptor limit: %s", strerror(errno));
}

static int check_environment(void)
{
	raise_fd_limit();
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		gs_err("this kernel has no BTF (/sys/kernel/btf/vmlinux): gpusnoop needs a kernel "
		       "built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOTSUP;
	}
	return 0;
}

struct gs_bpf_objects *gs_tracker__objects(struct gs_tracker *t)
{
	return &t->objs;
}

static int open_objects(struct gs_tracker *t)
{
	struct gs_bpf_objects_opts oopts = {
		.all = t->opts.all,
		.oom_kills = t->opts.oom_kills,
		.free_returns = t->opts.free_returns,
		.ustack = t->opts.stacks == GS_STACKS_DWARF,
		.no_stacks = t->opts.stacks == GS_STACKS_NONE,
		.stack_cache = t->stacks != NULL,
		.stack_sample = t->opts.stack_sample,
		.ringbuf_bytes = t->opts.ringbuf_bytes,
		.families = t->opts.families,
		.torch = t->opts.torch,
		.python = t->python,
	};
	int oom_fd;
	int err = gs_bpf_objects__open(&t->objs, &oopts);

	if (err)
		return err;
	/* before any probe: from the first stop on, our death cannot leave a process stopped */
	err = gs_watchdog__start(&t->watchdog, stopped_fd(t));
	if (err) {
		gs_err("starting the watchdog: %s", strerror(-err));
		return err;
	}
	err = proc_bpf__attach(t->objs.proc); /* the tracepoints; uprobes are attached per file */
	if (err)
		return gs_bpf_load_error("proc attach", err);
	t->oom_queue = calloc(1, sizeof(*t->oom_queue));
	if (!t->oom_queue)
		return -ENOMEM;
	oom_fd = bpf_map__fd(t->objs.proc->maps.oom_events);
	t->rb = ring_buffer__new(bpf_map__fd(t->objs.proc->maps.events), handle_event, t, NULL);
	t->oom_rb = ring_buffer__new(oom_fd, queue_oom, t, NULL);
	err = !t->rb || !t->oom_rb ? -errno : ring_buffer__add(t->rb, oom_fd, queue_oom, t);
	if (err)
		gs_err("ring buffer: %s", strerror(-err));
	return err;
}

static int open_unwinder(struct gs_tracker *t)
{
	int err;

	t->unwinder = gs_unwinder__new();
	if (!t->unwinder) {
		err = -errno;
		gs_err("DWARF unwinder: %s", strerror(-err));
		return err;
	}
	gs_unwinder__set_symcache(t->unwinder, t->symcache);
	return 0;
}

int gs_tracker__open(struct gs_tracker **out, const struct gs_tracker_opts *opts,
		     const struct gs_tracker_ops *ops)
{
	bool python = opts->python;
	struct gs_tracker *t;
	int err;

	err = check_environment();
	err = err ?: gs_kernel__check_session(opts->families != 0, &python);
	if (err)
		return err;
	libbpf_set_print(libbpf_print);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->opts = *opts;
	t->ops = *ops;
	t->child.release_fd = t->child.error_fd = -1;
	t->links = gs_links__new();
	t->symcache = gs_symcache__new();
	t->attach = gs_lib_attach__new(&t->objs, t->links, t->symcache, opts->all, opts->families);
	if (t->attach)
		gs_lib_attach__count_only(t->attach, opts->counted_families);
	t->tree = gs_proc_tree__new();
	t->stacks = gs_stack_cache__new();
	if (!t->links || !t->symcache || !t->attach || !t->tree || !t->stacks) {
		err = -ENOMEM;
		gs_err("opening the session: %s", strerror(-err));
		goto out_free;
	}
	/* a tree's new processes use their parent's probes from their first instruction on */
	if (opts->children)
		gs_lib_attach__probe_by_file(t->attach);
	err = opts->stacks == GS_STACKS_DWARF ? open_unwinder(t) : 0;
	if (!err && python) {
		t->python = gs_python__new(t->symcache);
		/* without privileges, loading the objects fails next and says what to grant */
		if (!t->python && errno != EPERM && errno != EACCES)
			gs_warn("python frames: %s; stacks stay native", strerror(errno));
	}
	err = err ?: open_objects(t);
	if (!err && opts->gpu) {
		struct gpu_bpf *gpu = gs_bpf_objects__gpu(&t->objs);

		t->gpu = gpu ? gs_gpu_attach__new(gpu, t->links) : NULL;
		err = t->gpu ? 0 : -errno;
	}
	if (err)
		goto out_free;
	*out = t;
	return 0;

out_free:
	gs_tracker__free(t);
	return err;
}

/*
 * -p PID --children: the targets' descendants living now. The targets' new processes are
 * followed in BPF from here on; one more pass finds those forked by a descendant before it
 * was added.
 */
static int adopt_descendants(struct gs_tracker *t)
{
	size_t nr = 0, before;
	pid_t *pids, *ppids;
	int err;

	do {
		before = t->nr_targets;
		err = gs_proc_tree_descendants(t->opts.pids, t->opts.nr_pids, &pids, &ppids, &nr);
		for (size_t i = 0; i < nr && !err; i++) {
			if (find_target(t, pids[i]))
				continue;
			if (!add_target(t, pids[i], CHILD_FLAGS) ||
			    gs_proc_tree__add(t->tree, pids[i], ppids[i]))
				err = -ENOMEM;
			else
				scan_process(t, pids[i]);
		}
		free(pids);
		free(ppids);
	} while (!err && t->nr_targets != before);
	if (err)
		gs_err("following the targets' children: %s", strerror(-err));
	return err;
}

static int start_pids(struct gs_tracker *t)
{
	for (size_t i = 0; i < t->opts.nr_pids; i++) {
		pid_t pid = t->opts.pids[i];

		if (kill(pid, 0) && errno == ESRCH) {
			gs_err("pid %d: no such process", (int)pid);
			return -ESRCH;
		}
		if (gs_is_kernel_thread(pid)) {
			char comm[16];

			gs_read_comm(pid, pid, comm, sizeof(comm));
			gs_err("pid %d (%s): a kernel thread, it runs no user code to probe",
			       (int)pid, comm);
			return -EINVAL;
		}
		if (!add_target(t, pid, t->opts.children ? CHILD_FLAGS : GS_TARGET_TRACED) ||
		    gs_proc_tree__add(t->tree, pid, 0))
			return -ENOMEM;
		if (!scan_process(t, pid) && t->opts.families && !t->opts.children)
			gs_warn("pid %d (%s): no CUDA library loaded yet; waiting for one",
				(int)pid, find_target(t, pid)->comm);
	}
	return t->opts.children ? adopt_descendants(t) : 0;
}

static int start_all(struct gs_tracker *t)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid();

	if (!dir) {
		gs_err("/proc: %s", strerror(errno));
		return -errno;
	}
	while ((de = readdir(dir))) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);

		if (pid <= 0 || pid == self)
			continue;
		if (scan_process(t, pid))
			note_process(t, pid);
		else
			gs_symcache__forget(t->symcache, pid);
	}
	closedir(dir);
	return 0;
}

/*
 * Probes go in before the command runs: its loader and, for a static cudart, the
 * executable now; the libraries when the loader reports them (the child is held there).
 */
static int start_command(struct gs_tracker *t)
{
	char found[PATH_MAX], exe[PATH_MAX];
	struct gs_elf *elf;
	pid_t pid;
	int err;

	/*
	 * Its tree's processes stop at exec and at loader events, and no stop that a parent's
	 * waitpid(WUNTRACED) does not see exists without ptrace: an interactive shell would
	 * report each as a stopped job (gpusnoop(7), "Stops").
	 */
	if (t->opts.children && gs_is_interactive_shell(t->opts.argv, isatty(STDIN_FILENO))) {
		gs_err("'%s' is an interactive shell: its job control would see gpusnoop's stops; "
		       "run a command or a script, or follow the shell with -p PID alone",
		       t->opts.argv[0]);
		return -EINVAL;
	}
	/* a script (torchrun, a shell wrapper) runs its interpreter: that is what is probed */
	err = gs_find_executable(t->opts.argv[0], found, sizeof(found))
		      ?: gs_exec_image(found, exe, sizeof(exe));
	if (err) {
		gs_err("cannot run '%s': %s", t->opts.argv[0], strerror(-err));
		return err;
	}
	elf = gs_elf__open(exe);
	if (!elf) {
		gs_err("cannot run '%s': %s is not an ELF executable", t->opts.argv[0], exe);
		return -ENOEXEC;
	}
	err = gs_spawn(t->opts.argv, t->opts.command_stdout_to_stderr ? STDERR_FILENO : -1,
		       &t->child);
	if (err) {
		gs_err("cannot start '%s': %s", t->opts.argv[0], strerror(-err));
		gs_elf__free(elf);
		return err;
	}
	pid = t->child.pid;
	if (!add_target(t, pid,
			GS_TARGET_TRACED | GS_TARGET_STOP_ON_LOAD |
				(t->opts.children ? GS_TARGET_CHILDREN : 0)) ||
	    gs_proc_tree__add(t->tree, pid, 0)) {
		gs_err("out of memory");
		gs_elf__free(elf);
		return -ENOMEM;
	}
	gs_lib_attach__command(t->attach, pid, exe, elf);
	gs_elf__free(elf);
	err = gs_spawn__release(&t->child);
	if (err) {
		gs_err("cannot run '%s': %s", t->opts.argv[0], strerror(-err));
		t->child_reaped = true;
		drop_target(t, find_target(t, pid));
		return err;
	}
	/* a followed tree's command stops at exec and is probed then: ready means that done */
	while (t->opts.children && !t->child_execed && !t->child_reaped && err >= 0)
		err = gs_tracker__poll(t, 100);
	return err < 0 ? err : 0;
}

int gs_tracker__start(struct gs_tracker *t)
{
	if (t->opts.argv)
		return start_command(t);
	if (t->opts.all)
		return start_all(t);
	return start_pids(t);
}

/* Turns a liveness check or a sweep may take to catch up: a flood must not hold the loop. */
#define CATCH_UP_TURNS 2

/*
 * Reads the shared buffer up to the records written at now_ns (or to its end), at most
 * max_turns turns: what a process that died before now wrote is then handled. True once
 * caught up; past max_turns a flood's backlog waits for the next turns.
 */
static bool catch_up(struct gs_tracker *t, uint64_t now_ns, int max_turns)
{
	for (int turns = 0; turns < max_turns; turns++)
		if (drain(t, -1) <= 0 || !t->budget.spent || t->last_event_ns >= now_ns)
			return true;
	return t->last_event_ns >= now_ns;
}

static void reap_child(struct gs_tracker *t)
{
	int status;

	if (!t->child.pid || t->child_reaped)
		return;
	if (waitpid(t->child.pid, &status, WNOHANG) == t->child.pid) {
		t->child_reaped = true;
		t->child_status = status;
	}
}

/* The exit tracepoint is the usual path; this catches a dropped exit record. */
static void check_liveness(struct gs_tracker *t)
{
	uint64_t now = gs_clock_ns(CLOCK_MONOTONIC);
	bool drained = false, caught_up = false;

	if (now - t->last_liveness_ns < LIVENESS_CHECK_NS)
		return;
	t->last_liveness_ns = now;
	for (size_t i = 0; i < t->nr_targets;) {
		pid_t pid = t->targets[i].pid;

		if (!kill(pid, 0) || errno != ESRCH) {
			i++;
		} else if (!drained) {
			/*
			 * What it wrote before it died (an OOM, then its exit) is handled while it is
			 * still known: comm and maps are gone from /proc, not from the tracker. The
			 * records handled may drop targets (exits): look again from the start. Under
			 * a flood's backlog, the dead wait for the next check.
			 */
			caught_up = catch_up(t, gs_clock_ns(CLOCK_MONOTONIC), CATCH_UP_TURNS);
			drained = true;
			i = 0;
		} else if (!caught_up) {
			i++;
		} else {
			target_gone(t, pid, false); /* moves the last target into slot i */
		}
	}
}

/*
 * Every stop's record is queued before the stop (bpf/proc.bpf.c), but one that no handler
 * answered (a bug, a record skipped) must not hold its process forever: what was in the
 * stopped set at the last sweep too, its record drained since, is resumed.
 */
static void sweep_stopped(struct gs_tracker *t)
{
	uint64_t now = gs_clock_ns(CLOCK_MONOTONIC);
	size_t n;

	if (now - t->last_sweep_ns < LIVENESS_CHECK_NS)
		return;
	t->last_sweep_ns = now;
	catch_up(t, now, CATCH_UP_TURNS); /* under a flood, at most a few turns */
	n = gs_stop_set__sweep(stopped_fd(t), t->unanswered, &t->nr_unanswered);
	if (n)
		gs_dbg("%zu stopped process(es) resumed without an answer", n);
}

int gs_tracker__poll(struct gs_tracker *t, int timeout_ms)
{
	int n = drain(t, timeout_ms);

	if (n == -EINTR)
		n = 0;
	/* records below the wake-up threshold (bpf/gs_common.bpf.h) come with the timeout */
	if (n == 0)
		n = drain(t, -1);
	reap_child(t);
	sweep_stopped(t);
	if (t->child_reaped && t->child.pid) {
		/* drain what the child wrote before it died, then report it gone */
		if (catch_up(t, gs_clock_ns(CLOCK_MONOTONIC), CATCH_UP_TURNS))
			target_gone(t, t->child.pid, false);
	}
	check_liveness(t);
	return n;
}

int gs_tracker__drain_all(struct gs_tracker *t)
{
	int n = gs_tracker__poll(t, 0);

	if (n >= 0)
		catch_up(t, gs_clock_ns(CLOCK_MONOTONIC), 1024);
	return n < 0 ? n : 0;
}

int gs_tracker__fd(const struct gs_tracker *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

bool gs_tracker__children(const struct gs_tracker *t)
{
	return t->opts.children;
}

bool gs_tracker__done(const struct gs_tracker *t)
{
	/* only live targets are kept */
	return !t->opts.all && t->nr_targets == 0;
}

bool gs_tracker__saw_cuda(const struct gs_tracker *t)
{
	return gs_lib_attach__saw_cuda(t->attach);
}

void gs_tracker__stats(const struct gs_tracker *t, uint64_t out[GS_STAT__MAX])
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 *values;

	memset(out, 0, GS_STAT__MAX * sizeof(*out));
	if (ncpus <= 0)
		return;
	values = calloc((size_t)ncpus, sizeof(*values));
	if (!values)
		return;
	for (__u32 key = 0; key < GS_STAT__MAX; key++) {
		if (bpf_map_lookup_elem(bpf_map__fd(t->objs.proc->maps.stats), &key, values))
			continue;
		for (int cpu = 0; cpu < ncpus; cpu++)
			out[key] += values[cpu];
	}
	free(values);
}

size_t gs_tracker__uid_drops(const struct gs_tracker *t, uint32_t *uids, uint64_t *drops,
			     size_t max)
{
	int fd = bpf_map__fd(t->objs.proc->maps.uid_shares);
	__u32 key, next;
	size_t n = 0;
	/* bounded: an LRU map has at most GS_MAX_UIDS keys, whatever happens meanwhile */
	for (size_t i = 0; i < GS_MAX_UIDS && n < max; i++) {
		struct gs_uid_share share;

		if (bpf_map_get_next_key(fd, i ? &key : NULL, &next))
			break;
		key = next;
		if (!bpf_map_lookup_elem(fd, &key, &share) && share.dropped) {
			uids[n] = key;
			drops[n++] = share.dropped;
		}
	}
	return n;
}

uint64_t gs_tracker__dropped(const struct gs_tracker *t)
{
	uint64_t stats[GS_STAT__MAX];

	gs_tracker__stats(t, stats);
	return gs_losses_dropped(stats); /* users' records over their share are lost too */
}

struct gs_symcache *gs_tracker__symcache(struct gs_tracker *t)
{
	return t->symcache;
}

pid_t gs_tracker__child(const struct gs_tracker *t)
{
	return t->child.pid;
}

int gs_tracker__child_status(const struct gs_tracker *t)
{
	return t->child_status;
}

const char *gs_tracker__comm(struct gs_tracker *t, pid_t pid)
{
	struct target *tg = find_target(t, pid);
	const struct gs_proc_tree_entry *e = tg ? NULL : gs_proc_tree__find(t->tree, pid);

	return tg ? tg->comm : e ? e->comm : "?";
}

const struct gs_proc_tree_entry *gs_tracker__proc(const struct gs_tracker *t, pid_t pid)
{
	return gs_proc_tree__find(t->tree, pid);
}

/*
 * Processes stop at exec and loader events until their record is handled (a followed tree's,
 * a spawned command's): from here on none is stopped, and those whose record waits are let go.
 */
static void release_stopped(struct gs_tracker *t)
{
	t->closing = true;
	t->objs.proc->bss->stops_off = true;
	/* a program that read the flag just before it changed submits within microseconds */
	ring_buffer__poll(t->rb, 10);
	ring_buffer__consume(t->rb);
	gs_stop_set__sweep(stopped_fd(t), NULL, NULL);
}

void gs_tracker__free(struct gs_tracker *t)
{
	if (!t)
		return;
	if (t->rb && t->objs.proc)
		release_stopped(t);
	if (t->child.release_fd >= 0) {
		/* set-up failed before the command ran: it must not run untraced */
		kill(t->child.pid, SIGKILL);
		waitpid(t->child.pid, NULL, 0);
		close(t->child.release_fd);
	}
	if (t->child.error_fd >= 0)
		close(t->child.error_fd);
	ring_buffer__free(t->rb);
	ring_buffer__free(t->oom_rb);
	free(t->oom_queue);
	gs_watchdog__stop(&t->watchdog);
	gs_links__free(t->links);
	gs_lib_attach__free(t->attach);
	gs_gpu_attach__free(t->gpu); /* after the links to its programs */
	gs_bpf_objects__close(&t->objs);
	gs_python__free(t->python);
	gs_symcache__free(t->symcache);
	gs_proc_tree__free(t->tree);
	if (t->stacks) {
		struct gs_stack_cache_stats st;

		gs_stack_cache__stats(t->stacks, &st);
		gs_dbg("stacks: %llu sent whole and kept, %llu sent as references, %llu "
		       "references unresolved, %llu call sites alone (--stack-sample)",
		       (unsigned long long)st.sent, (unsigned long long)st.refs,
		       (unsigned long long)st.unresolved, (unsigned long long)st.site_only);
	}
	gs_stack_cache__free(t->stacks);
	gs_unwinder__free(t->unwinder);
	for (size_t i = 0; i < USTACK_SLOTS; i++)
		free(t->ustacks[i].e);
	free(t->targets);
	gs_pid_index__release(&t->target_index);
	free(t);
}
