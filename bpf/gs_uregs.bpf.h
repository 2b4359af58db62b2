/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_uregs.bpf.h: the user registers of the current task, whatever the hook interrupted. */
#ifndef GS_UREGS_BPF_H
#define GS_UREGS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

/* x86-64: kernel addresses have the top bit set, user space ends below 2^47 */
#define GS_KERNEL_ADDR_MIN 0xffff800000000000ULL

static __always_inline bool gs_is_kernel_addr(__u64 addr)
{
	return addr >= GS_KERNEL_ADDR_MIN;
}

struct gs_uregs {
	__u64 ip, sp, fp;
};

/*
 * The registers user space was interrupted with: the task's saved ones
 * (bpf_task_pt_regs(), 5.15+), as perf and bcc take them. A perf event's own registers
 * are the kernel's when the sample interrupted a system call or an interrupt, and a walk
 * from them gives a kernel address as the "user" leaf and no real user frames. At a uprobe
 * both are the same. Without the helper, ctx's registers if they are user ones; false
 * otherwise (the caller lets the kernel walk: bpf_get_stack() takes the task's user
 * registers itself).
 */
static __always_inline bool gs_uregs(void *ctx, struct gs_uregs *out)
{
	struct pt_regs *regs = ctx;

#ifndef GS_OLD_KERNEL
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs)) {
		struct task_struct *task = bpf_get_current_task_btf();

		/* a BTF pointer: plain loads, not BPF_CORE_READ()'s helper calls (~30 ns each) */
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		if (!regs)
			return false;
		out->ip = PT_REGS_IP(regs);
		out->sp = PT_REGS_SP(regs);
		out->fp = PT_REGS_FP(regs);
	} else
#endif
	{
		out->ip = PT_REGS_IP(regs);
		out->sp = PT_REGS_SP(regs);
		out->fp = PT_REGS_FP(regs);
	}
	return out->ip && !gs_is_kernel_addr(out->ip);
}

#endif /* GS_UREGS_BPF_H */
