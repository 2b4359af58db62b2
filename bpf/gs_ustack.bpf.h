/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_ustack.bpf.h: copy registers and a slice of the user stack for DWARF unwinding. */
#ifndef GS_USTACK_BPF_H
#define GS_USTACK_BPF_H

#include "gs_common.bpf.h"

#define GS_USTACK_PAGE 4096ULL /* x86-64; the end of a stack mapping is page-aligned */

/*
 * Fills out with ip, sp, bp and up to GS_USTACK_BYTES of the stack from sp upwards. Works
 * at uprobes (ip: the probed function's first instruction, [sp]: the return address) and
 * uretprobes (ip: the return address in the caller, sp: after the return). out may be
 * ring-buffer memory. A thread whose stack ends less than GS_USTACK_BYTES above sp (the
 * read faults at the end of the mapping) gets what lies up to the highest readable page
 * boundary. Nothing readable: out->size is 0 and GS_STAT_USTACK_FAILED counts it.
 */
static __always_inline void gs_capture_ustack(struct pt_regs *ctx, struct gs_ustack *out)
{
	__u64 sp = PT_REGS_SP(ctx);
	__u64 page = sp & ~(GS_USTACK_PAGE - 1);

	out->regs[GS_USTACK_REG_IP] = PT_REGS_IP(ctx);
	out->regs[GS_USTACK_REG_SP] = sp;
	out->regs[GS_USTACK_REG_BP] = PT_REGS_FP(ctx);
	out->pad = 0;
	if (!bpf_probe_read_user(out->data, GS_USTACK_BYTES, (void *)sp)) {
		out->size = GS_USTACK_BYTES;
		return;
	}
#pragma unroll
	for (int i = GS_USTACK_BYTES / GS_USTACK_PAGE; i >= 1; i--) {
		__u32 size = (__u32)(page + i * GS_USTACK_PAGE - sp);

		if (size > GS_USTACK_BYTES || size == 0)
			continue;
		if (!bpf_probe_read_user(out->data, size, (void *)sp)) {
			out->size = size;
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
static __always_inline bool gs_emit_ustack(struct pt_regs *ctx, __u64 pid_tgid, __u64 ts_ns)
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
