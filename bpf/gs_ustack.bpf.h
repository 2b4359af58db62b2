/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_ustack.bpf.h: copy registers and a slice of the user stack for DWARF unwinding. */
#ifndef GS_USTACK_BPF_H
#define GS_USTACK_BPF_H

#include <bpf/bpf_core_read.h>
#include "gs_common.bpf.h"

#define GS_USTACK_PAGE	      4096ULL /* x86-64; the end of a stack mapping is page-aligned */
#define GS_USTACK_MAX_PENDING 16      /* return probes pending on one thread that get fixed up */

/*
 * A function with a pending uretprobe (an outer probed call, e.g. PyTorch's caching
 * allocator around cudaMalloc) has the [uprobes] trampoline as its return address on the
 * stack; the real one is in the kernel's list of the thread's return instances, with the
 * stack slot it was taken from. Put the real ones back into the copy, as the kernel does for
 * bpf_get_stack() (6.11+, fixup_uretprobe_trampoline_entries); the current uretprobe's own
 * instance is already off the list when its handler runs.
 */
static __always_inline void gs_ustack_fix_uretprobes(struct gs_ustack *out, __u64 sp)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct return_instance *ri = BPF_CORE_READ(task, utask, return_instances);

	/* a bounded loop (kernel 5.3+) */
	for (int i = 0; i < GS_USTACK_MAX_PENDING && ri; i++) {
		__u64 slot = BPF_CORE_READ(ri, stack);
		__u64 ret = BPF_CORE_READ(ri, orig_ret_vaddr);
		__u64 off = slot - sp;

		if (off <= GS_USTACK_BYTES - sizeof(__u64) && off + sizeof(__u64) <= out->size)
			bpf_probe_read_kernel(out->data + off, sizeof(ret), &ret);
		ri = BPF_CORE_READ(ri, next);
	}
}

/*
 * Fills out with ip, sp, bp and up to GS_USTACK_BYTES of the stack from sp upwards. Works
 * at uprobes (ip: the probed function's first instruction, [sp]: the return address) and
 * uretprobes (ip: the return address in the caller, sp: after the return). out may be
 * ring-buffer memory. A thread whose stack ends less than GS_USTACK_BYTES above sp (the
 * read faults at the end of the mapping) gets what lies up to the highest readable page
 * boundary. Return addresses hidden by pending uretprobes are restored in the copy.
 * Nothing readable: out->size is 0 and GS_STAT_USTACK_FAILED counts it.
 */
static __always_inline void gs_capture_ustack(void *ctx, struct gs_ustack *out)
{
	struct gs_uregs r;
	__u64 sp, page;

	/* the task's user registers: a CPU sample may have interrupted the kernel */
	if (!gs_uregs(ctx, &r)) {
		out->regs[GS_USTACK_REG_IP] = out->regs[GS_USTACK_REG_SP] = 0;
		out->regs[GS_USTACK_REG_BP] = 0;
		out->pad = 0;
		out->size = 0;
		gs_count(GS_STAT_USTACK_FAILED);
		return;
	}
	sp = r.sp;
	page = sp & ~(GS_USTACK_PAGE - 1);
	out->regs[GS_USTACK_REG_IP] = r.ip;
	out->regs[GS_USTACK_REG_SP] = sp;
	out->regs[GS_USTACK_REG_BP] = r.fp;
	out->pad = 0;
	if (!bpf_probe_read_user(out->data, GS_USTACK_BYTES, (void *)sp)) {
		out->size = GS_USTACK_BYTES;
		gs_ustack_fix_uretprobes(out, sp);
		return;
	}
#pragma unroll
	for (int i = GS_USTACK_BYTES / GS_USTACK_PAGE; i >= 1; i--) {
		__u32 size = (__u32)(page + i * GS_USTACK_PAGE - sp);

		if (size > GS_USTACK_BYTES || size == 0)
			continue;
		if (!bpf_probe_read_user(out->data, size, (void *)sp)) {
			out->size = size;
			gs_ustack_fix_uretprobes(out, sp);
			return;
		}
	}
	out->size = 0;
	gs_count(GS_STAT_USTACK_FAILED);
}

/*
 * Emits a GS_EV_USTACK record stamped ts_ns for the current thread. Call it just before
 * reserving the record it belongs to, and set GS_EV_F_USTACK in that record's hdr.flags
 * (and the same ts_ns) when it returns true: ring-buffer records are consumed in reservation
 * order, so userspace sees the stack first and pairs the two by tid and timestamp.
 */
static __always_inline bool gs_emit_ustack(void *ctx, __u64 pid_tgid, __u64 ts_ns)
{
	struct gs_ustack_event *e = gs_reserve(sizeof(*e));

	if (!e)
		return false;
	gs_fill_hdr(&e->hdr, GS_EV_USTACK, sizeof(*e), pid_tgid);
	e->hdr.ts_ns = ts_ns;
	gs_capture_ustack(ctx, &e->st);
	bpf_ringbuf_submit(e, 0);
	return true;
}

#endif /* GS_USTACK_BPF_H */
