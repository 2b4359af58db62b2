/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* kernel_probe.h: the BPF features of the running kernel, found by trying them (bpftool feature). */
#ifndef GS_KERNEL_PROBE_H
#define GS_KERNEL_PROBE_H

#include <stdbool.h>
#include <stdint.h>

/* names features (user/kernel_compat.h) to treat as missing: tests simulate older kernels */
#define GS_KERNEL_FEATURES_OFF_ENV "GPUSNOOP_KERNEL_FEATURES_OFF"

struct gs_kernel {
	uint32_t have;	   /* GS_KF_BIT()s found, less those switched off */
	uint32_t off;	   /* switched off by GPUSNOOP_KERNEL_FEATURES_OFF */
	int regs_cs_size;  /* bytes of struct pt_regs' cs in the kernel's BTF; 0: unknown */
	bool unprivileged; /* BPF refused the probes (EPERM): nothing is known */
	char release[65];  /* uname -r */
};

/* Probes the running kernel; -EINVAL (logged) for an unknown name in the environment. */
int gs_kernel__probe(struct gs_kernel *k);

/*
 * 0 if the kernel has every feature of needs; else logs one line naming what lacks each
 * missing feature and the first kernel that has it, and returns -ENOTSUP.
 */
int gs_kernel__require(const struct gs_kernel *k, uint32_t needs);

/*
 * At a session's start: probes, refuses (one line, -ENOTSUP) when a needed feature is missing,
 * and clears *python, saying so in one line, when Python frames cannot work here.
 */
int gs_kernel__check_session(bool cuda_probes, bool *python);

/*
 * proc, mem, cuda and cpu's 5.10 builds are the ones to load here (gs_kcompat_old_objects());
 * *cookies: the kernel takes uprobe cookies all the same (they read them where it does)
 */
bool gs_kernel_old_objects(bool *cookies);

/* as gs_kernel__require() for CPU sampling (profile, record -e cpu): 0 or -ENOTSUP, logged */
int gs_kernel__require_cpu(void);

/* bpf_find_vma() (5.17), less GPUSNOOP_KERNEL_FEATURES_OFF: each object's cfg_no_find_vma */
bool gs_kernel_has_find_vma(void);

#endif /* GS_KERNEL_PROBE_H */
