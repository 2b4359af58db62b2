// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mem.bpf.c: CUDA runtime and driver allocation calls, read at return, with user stacks. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "gs_common.bpf.h"
#include "gs_calls.bpf.h"
#include "gs_ustack.bpf.h"
#include "gs_python.bpf.h"

enum call_kind { CALL_ALLOC = 1, CALL_FREE = 2 };

/* What the entry probe saves for the return probe of the same thread. */
struct call {
	struct gs_call_head head;
	__u64 out_ptr; /* where the callee writes the new pointer */
	__u64 size;
	__u64 pitch_ptr; /* cudaMallocPitch: *pitch * height is the size */
	__u64 height;
	__u64 free_ptr;
	__u32 kind;
	__u32 given; /* cudaHostRegister: out_ptr is the memory itself, not where it is written */
};

/* a timeline draws every free with its duration; a leak report needs only the failures */
const volatile bool cfg_free_returns = false;
/* --stacks dwarf: a GS_EV_USTACK slice precedes each record that carries a stack */
const volatile bool cfg_ustack = false;

GS_CALLS_MAP(struct call);

static __always_inline int enter_alloc(void *ctx, __u64 out_ptr, __u64 size, __u64 pitch_ptr,
				       __u64 height, __u32 given)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now;
	struct call *c;

	c = gs_call_enter(&calls, pid_tgid >> 32, &now);
	if (!c)
		return 0;
	c->head.entry_ts_ns = now;
	c->head.api = gs_entry_cookie(ctx);
	c->head.pad = 0;
	c->head.depth = 0;
	c->out_ptr = out_ptr;
	c->size = size;
	c->pitch_ptr = pitch_ptr;
	c->height = height;
	c->free_ptr = 0;
	c->kind = CALL_ALLOC;
	c->given = given;
	return 0;
}

/* cudaMalloc(void **, size_t, ...) and every other API with the same first two arguments */
SEC("uprobe")
int BPF_KPROBE(mem_alloc_enter, void *out_ptr, __u64 size)
{
	return enter_alloc(ctx, (__u64)out_ptr, size, 0, 0, 0);
}

/* cudaHostRegister(void *ptr, size_t size, flags), cuMemHostRegister_v2: memory the caller has */
SEC("uprobe")
int BPF_KPROBE(mem_register_enter, void *ptr, __u64 size)
{
	return enter_alloc(ctx, (__u64)ptr, size, 0, 0, 1);
}

/* cudaMallocPitch(void **, size_t *pitch, size_t width, size_t height), cuMemAllocPitch_v2 */
SEC("uprobe")
int BPF_KPROBE(mem_alloc_pitch_enter, void *out_ptr, void *pitch_ptr, __u64 width, __u64 height)
{
	return enter_alloc(ctx, (__u64)out_ptr, 0, (__u64)pitch_ptr, height, 0);
}

/*
 * The allocation's record; hit: its stack is one this CPU sent (gs_stack_cache.bpf.h), or
 * none is walked (--stacks none), the record is reserved without frames[]. A constant per
 * call, so that the verifier knows the record's size on each path.
 */
static __always_inline void emit_alloc(struct pt_regs *ctx, struct call *c,
				       struct gs_stack_cache *sc, __s32 ret, __u64 pid_tgid,
				       __u64 ts, bool ustack, int py, const bool hit)
{
	bool oom = ret == GS_OOM_ERROR;
	struct gs_mem_alloc *e;

	if (hit)
		e = oom ? gs_reserve_oom(offsetof(struct gs_mem_alloc, frames))
			: gs_reserve(offsetof(struct gs_mem_alloc, frames));
	else
		e = oom ? gs_reserve_oom(sizeof(*e)) : gs_reserve(sizeof(*e));
	if (!e) {
		gs_stack_unused(sc);
		gs_call_end(&c->head);
		return;
	}
	e->ret = ret;
	e->api = c->head.api;
	e->entry_ts_ns = c->head.entry_ts_ns;
	e->size = c->size;
	e->ptr = 0;
	if (e->ret == 0) {
		/*
		 * The pointer exists only now, in the out-parameter saved at entry: mostly the
		 * caller's local, in the stack walk's window (read after the call wrote it).
		 */
		if (c->given)
			e->ptr = c->out_ptr;
		else if (!gs_stack_words_at(sc, c->out_ptr, 1, &e->ptr) &&
			 bpf_probe_read_user(&e->ptr, sizeof(e->ptr), (void *)c->out_ptr))
			gs_count(GS_STAT_USER_READ_FAILED);
		if (c->pitch_ptr) {
			__u64 pitch = 0;

			if (bpf_probe_read_user(&pitch, sizeof(pitch), (void *)c->pitch_ptr))
				gs_count(GS_STAT_USER_READ_FAILED);
			e->size = pitch * c->height;
		}
	}
	gs_call_end(&c->head);

	/* at return the stack starts in the caller: the allocating function is frame 0 */
	e->nr_frames = gs_stack_tail(ctx, &e->hdr, GS_EV_MEM_ALLOC,
				     offsetof(struct gs_mem_alloc, frames), e->frames, sc, pid_tgid,
				     ts, gs_stack_rec_flags(ustack, py), !hit, false);
	if (oom)
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP); /* read first, at once */
	else
		gs_submit(e);
}

SEC("uretprobe")
int BPF_KRETPROBE(mem_alloc_exit, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_stack_cache *sc;
	bool ustack = false, oom;
	struct call *c;
	int py = 0;
	__u64 ts;

	c = gs_call_outermost(&calls, (__u16)gs_ret_cookie(ctx));
	if (!c || c->kind != CALL_ALLOC)
		return 0;

	ts = bpf_ktime_get_ns();
	if (cfg_ustack)
		ustack = gs_emit_ustack(ctx, pid_tgid, ts);
	/* an OOM's record is read before the others: it carries its whole stack, always */
	oom = (__s32)ret == GS_OOM_ERROR;
	if (oom || gs_stack_sampled(ctx, false))
		py = gs_py_emit(pid_tgid, ts);
	sc = gs_stack_walk(ctx, false, !oom);
	if (gs_stack_hit(sc) || cfg_no_stacks)
		emit_alloc(ctx, c, sc, (__s32)ret, pid_tgid, ts, ustack, py, true);
	else
		emit_alloc(ctx, c, sc, (__s32)ret, pid_tgid, ts, ustack, py, false);
	return 0;
}

/*
 * The free is reported at entry so that it is ordered before any allocation that reuses
 * the address on another thread; its return is reported separately.
 */
SEC("uprobe")
int BPF_KPROBE(mem_free_enter, __u64 ptr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now;
	struct gs_mem_free *e;
	struct call *c;

	c = gs_call_enter(&calls, pid_tgid >> 32, &now);
	if (!c)
		return 0;
	c->head.entry_ts_ns = now;
	c->head.api = gs_entry_cookie(ctx);
	c->head.pad = 0;
	c->head.depth = 0;
	c->out_ptr = c->size = c->pitch_ptr = c->height = 0;
	c->free_ptr = ptr;
	c->kind = CALL_FREE;
	c->given = 0;

	e = gs_reserve(sizeof(*e));
	if (!e)
		return 0;
	gs_fill_hdr_at(&e->hdr, GS_EV_MEM_FREE, sizeof(*e), pid_tgid, now);
	e->ptr = ptr;
	e->api = c->head.api;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	gs_submit(e);
	return 0;
}

/*
 * A free's return record; with_frames: its stack sent whole (a miss, or no cache), else none
 * or one this CPU sent (sc's hit), the record reserved without frames[].
 */
static __always_inline void emit_free_ret(struct pt_regs *ctx, struct call *c,
					  struct gs_stack_cache *sc, __s32 ret, __u64 pid_tgid,
					  __u64 ts, bool ustack, int py, const bool with_frames)
{
	struct gs_mem_free_ret *e;

	e = gs_reserve(with_frames ? sizeof(*e) : offsetof(struct gs_mem_free_ret, frames));
	if (!e) {
		gs_stack_unused(sc);
		gs_call_end(&c->head);
		return;
	}
	e->ptr = c->free_ptr;
	e->entry_ts_ns = c->head.entry_ts_ns;
	e->api = c->head.api;
	e->ret = ret;
	gs_call_end(&c->head);
	e->nr_frames = gs_stack_tail(
		ctx, &e->hdr, GS_EV_MEM_FREE_RET, offsetof(struct gs_mem_free_ret, frames),
		e->frames, sc, pid_tgid, ts, gs_stack_rec_flags(ustack, py), with_frames, false);
	gs_submit(e);
}

SEC("uretprobe")
int BPF_KRETPROBE(mem_free_exit, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_stack_cache *sc = NULL;
	bool ustack = false;
	struct call *c;
	int py = 0;
	__u64 ts;

	c = gs_call_outermost(&calls, (__u16)gs_ret_cookie(ctx));
	if (!c || c->kind != CALL_FREE)
		return 0;
	if ((__s32)ret == 0 && !cfg_free_returns) {
		gs_call_end(&c->head);
		return 0;
	}
	ts = bpf_ktime_get_ns();
	if (cfg_ustack && cfg_free_returns)
		ustack = gs_emit_ustack(ctx, pid_tgid, ts);
	if (cfg_free_returns) {
		py = gs_py_emit(pid_tgid, ts);
		sc = gs_stack_walk(ctx, false, true); /* a stack this CPU sent: not again */
	}
	/* a leak report's failed free carries no stack; --stacks none none */
	if (!cfg_free_returns || cfg_no_stacks || gs_stack_hit(sc))
		emit_free_ret(ctx, c, sc, (__s32)ret, pid_tgid, ts, ustack, py, false);
	else
		emit_free_ret(ctx, c, sc, (__s32)ret, pid_tgid, ts, ustack, py, true);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
