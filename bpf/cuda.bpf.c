// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cuda.bpf.c: CUDA launches, synchronizations, copies and kernel-naming calls, as raw args. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "gs_common.bpf.h"
#include "gs_python.bpf.h"
#include "gs_calls.bpf.h"
#include "gs_call_counts.bpf.h"

/*
 * One generic pair of programs serves every API: the entry saves the argument registers
 * (and, per the cookie, stack arguments and a config struct), the return emits them with
 * the result. Userspace knows each API's signature and decodes; the kernel side stays small.
 */
struct call {
	struct gs_call_head head;
	__u32 flags;
	__u32 pad;
	__u64 args[GS_CALL_ARGS];
};

GS_CALLS_MAP(struct call);

/* The arguments a call's entry sees: registers, then per flags stack slots and a struct. */
static __always_inline void read_args(struct pt_regs *ctx, __u32 flags, __u64 *args,
				      const struct gs_stack_cache *sc)
{
	args[0] = PT_REGS_PARM1(ctx);
	args[1] = PT_REGS_PARM2(ctx);
	args[2] = PT_REGS_PARM3(ctx);
	args[3] = PT_REGS_PARM4(ctx);
	args[4] = PT_REGS_PARM5(ctx);
	args[5] = GS_PT_REGS_PARM6(ctx);
	/* at the first instruction the return address is at sp: arguments 7.. follow it */
	/* or as the stack walk's window had them (sc: a launch's, gs_stack_words_at()) */
	if ((flags & GS_CALL_F_STACK_ARGS) &&
	    !gs_stack_words_at(sc, PT_REGS_SP(ctx) + sizeof(__u64), GS_CALL_STACK_ARGS,
			       &args[GS_CALL_REG_ARGS]))
		bpf_probe_read_user(&args[GS_CALL_REG_ARGS], GS_CALL_STACK_ARGS * sizeof(__u64),
				    (void *)(PT_REGS_SP(ctx) + sizeof(__u64)));
	/* a launch config struct: mostly the caller's local, just above sp */
	if ((flags & GS_CALL_F_DEREF_ARG0) && args[0] &&
	    !gs_stack_words_at(sc, args[0], GS_CALL_DEREF_WORDS,
			       &args[GS_CALL_REG_ARGS + GS_CALL_STACK_ARGS]))
		bpf_probe_read_user(&args[GS_CALL_REG_ARGS + GS_CALL_STACK_ARGS],
				    GS_CALL_DEREF_WORDS * sizeof(__u64), (void *)args[0]);
}

SEC("uprobe")
int cuda_call_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now, cookie;
	struct call *c;

	c = gs_call_enter(&calls, pid_tgid >> 32, &now);
	if (!c)
		return 0;
	cookie = gs_entry_cookie(ctx);
	__builtin_memset(c, 0, sizeof(*c));
	c->head.api = (__u16)cookie;
	c->flags = (__u32)(cookie >> 16);
	read_args(ctx, c->flags, c->args, NULL);
	c->head.entry_ts_ns = now;
	return 0;
}

/*
 * A launch's record, from its entry. with_frames false: its stack is one this CPU sent
 * (gs_stack_cache.bpf.h), none is walked, or it is only counted; the record is reserved
 * without frames[] (a constant per call, so that the verifier knows its size on each path).
 */
static __always_inline void emit_launch(struct pt_regs *ctx, __u64 cookie, __u64 pid_tgid, __u64 ts,
					int py, struct gs_stack_cache *sc, const bool with_frames)
{
	struct gs_cuda_call *e;

	e = gs_reserve(with_frames ? sizeof(*e) : offsetof(struct gs_cuda_call, frames));
	if (!e) {
		gs_stack_unused(sc);
		return;
	}
	e->flags = (__u32)(cookie >> 16) | GS_CALL_F_AT_ENTRY;
	if (e->flags & GS_CALL_F_USER_STACK) {
		read_args(ctx, e->flags, e->args, sc);
	} else { /* only counted (the daemon's metrics): no arguments read either */
		e->flags &= ~(__u32)(GS_CALL_F_STACK_ARGS | GS_CALL_F_DEREF_ARG0);
		__builtin_memset(e->args, 0, sizeof(e->args));
	}
	e->entry_ts_ns = ts;
	e->api = (__u16)cookie;
	e->ret = 0;
	e->out = 0;
	e->pad = 0;
	e->nr_frames = gs_stack_tail(ctx, &e->hdr, GS_EV_CUDA_CALL,
				     offsetof(struct gs_cuda_call, frames), e->frames, sc, pid_tgid,
				     ts, gs_stack_rec_flags(false, py), with_frames, true);
	gs_submit(e);
}

/*
 * A launch sent whole from its entry, the default: kernel, dims, stream and stack are all
 * known there, and a return probe costs about as much again. -e cuda-launch-latency gives
 * launches cuda_call_enter/exit instead, for the CPU-side duration and the error. A launch
 * probed without GS_CALL_F_USER_STACK is only counted (the daemon's metrics): a record
 * without stack, Python frames or arguments.
 */
SEC("uprobe")
int cuda_launch_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 cookie = gs_entry_cookie(ctx);
	struct gs_stack_cache *sc;
	__u64 ts;
	int py;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	if (!((cookie >> 16) & GS_CALL_F_USER_STACK)) {
		/* only counted: in the kernel (no time taken, ~45 ns), or as a record when
		 * call_counts is full */
		if (!gs_count_call(pid_tgid >> 32, (__u32)(cookie >> 16), 0))
			emit_launch(ctx, cookie, pid_tgid, bpf_ktime_get_ns(), 0, NULL, false);
		return 0;
	}
	ts = bpf_ktime_get_ns();
	py = gs_stack_sampled(ctx, true) ? gs_py_emit(pid_tgid, ts) : 0;
	sc = gs_stack_walk(ctx, true, true);
	if (gs_stack_hit(sc) || cfg_no_stacks) /* no frames[] to reserve */
		emit_launch(ctx, cookie, pid_tgid, ts, py, sc, false);
	else
		emit_launch(ctx, cookie, pid_tgid, ts, py, sc, true);
	return 0;
}

/* what a returned call's record holds after its fixed part (a constant per call site) */
enum call_rec { CALL_REC_BARE, CALL_REC_STR, CALL_REC_FRAMES };

/*
 * The record of a returned call. Without a stack it is reserved without frames[]: a library
 * registers all its kernels as it loads (about 19,000 for PyTorch's), and at a third of the
 * size that burst fits the ring buffer while the reader is still attaching. Nor with a stack
 * this CPU sent already (sc's hit, gs_stack_cache.bpf.h), sc set. CALL_REC_STR: a call
 * without a stack, its string (GS_CALL_F_READ_STR2) where frames[] would be; CALL_REC_BARE
 * neither, CALL_REC_FRAMES its stack.
 */
static __always_inline void emit_call_exit(struct pt_regs *ctx, struct call *c, __u64 pid_tgid,
					   __u64 ts, int py, struct gs_stack_cache *sc,
					   const enum call_rec shape)
{
	__u32 fixed = offsetof(struct gs_cuda_call, frames);
	struct gs_cuda_call *e;

	if (shape == CALL_REC_STR)
		fixed += GS_CALL_STR;
	e = gs_reserve(shape == CALL_REC_FRAMES ? sizeof(*e) : fixed);
	if (!e) {
		gs_stack_unused(sc);
		gs_call_end(&c->head);
		return;
	}
	__builtin_memcpy(e->args, c->args, sizeof(e->args));
	e->entry_ts_ns = c->head.entry_ts_ns;
	e->api = c->head.api;
	e->flags = c->flags;
	e->ret = (__s32)PT_REGS_RC(ctx);
	e->out = 0;
	e->pad = 0;
	if ((c->flags & GS_CALL_F_READ_OUT0) &&
	    bpf_probe_read_user(&e->out, sizeof(e->out), (void *)c->args[0]))
		gs_count(GS_STAT_USER_READ_FAILED);
	if (shape == CALL_REC_STR) {
		e->str[0] = '\0';
		/* the callee has just read this string itself, so its page is resident */
		if ((c->flags & GS_CALL_F_READ_STR2) &&
		    bpf_probe_read_user_str(e->str, sizeof(e->str), (void *)c->args[2]) < 0)
			gs_count(GS_STAT_USER_READ_FAILED);
	}
	gs_call_end(&c->head);

	/* without a stack: none, or one this CPU sent (sc's hit) */
	e->nr_frames = gs_stack_tail(ctx, &e->hdr, GS_EV_CUDA_CALL, fixed, e->frames, sc, pid_tgid,
				     ts ?: bpf_ktime_get_ns(), gs_stack_rec_flags(false, py),
				     shape == CALL_REC_FRAMES, false);
	gs_submit(e);
}

SEC("uretprobe")
int cuda_call_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gs_stack_cache *sc;
	struct call *c;
	__u64 ts;
	int py;

	c = gs_call_outermost(&calls, (__u16)gs_ret_cookie(ctx));
	if (!c)
		return 0;
	if (!(c->flags & GS_CALL_F_USER_STACK)) {
		/* a sync only counted (the daemon's metrics): no record while call_counts has room */
		if (gs_count_call(pid_tgid >> 32, c->flags, c->head.entry_ts_ns))
			gs_call_end(&c->head);
		else
			emit_call_exit(ctx, c, pid_tgid, 0, 0, NULL, CALL_REC_STR);
		return 0;
	}
	ts = bpf_ktime_get_ns();
	py = gs_stack_sampled(ctx, false) ? gs_py_emit(pid_tgid, ts) : 0;
	sc = gs_stack_walk(ctx, false, true);
	/* a stack this CPU sent already: the record as one without (gs_stack_cache.bpf.h) */
	if (gs_stack_hit(sc) || cfg_no_stacks)
		emit_call_exit(ctx, c, pid_tgid, ts, py, sc, CALL_REC_BARE);
	else
		emit_call_exit(ctx, c, pid_tgid, ts, py, sc, CALL_REC_FRAMES);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
