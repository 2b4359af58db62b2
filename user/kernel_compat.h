/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* kernel_compat.h: which BPF features each command needs, and what a kernel's probe results allow. */
#ifndef GS_KERNEL_COMPAT_H
#define GS_KERNEL_COMPAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* BPF features gpusnoop's objects use, each probed at start (user/kernel_probe.c) */
enum gs_kfeat {
	GS_KF_RINGBUF,	    /* BPF_MAP_TYPE_RINGBUF: every object's events */
	GS_KF_TP_BTF,	    /* BTF-enabled tracepoints: proc's fork, exec, exit */
	GS_KF_TASK_BTF,	    /* bpf_get_current_task_btf(): per-call state, stack walks */
	GS_KF_TASK_STORAGE, /* BPF_MAP_TYPE_TASK_STORAGE: per-call state, stack bounds */
	GS_KF_FIND_VMA,	    /* bpf_find_vma(): the stack walk's bound */
	GS_KF_COOKIE,	    /* bpf_get_attach_cookie(): which CUDA call a uprobe is */
	GS_KF_LOOP,	    /* bpf_loop(): Python frames */
	GS_KF_UPROBE_MULTI, /* uprobe_multi links: one link per library, not per function */
	GS_KF__NR,
};

#define GS_KF_BIT(f) (1u << (f))
#define GS_KF_ALL    ((1u << GS_KF__NR) - 1)

/* what per-call state and the stack walk of every object need */
#define GS_KF_NEED_BASE                                                                   \
	(GS_KF_BIT(GS_KF_RINGBUF) | GS_KF_BIT(GS_KF_TP_BTF) | GS_KF_BIT(GS_KF_TASK_BTF) | \
	 GS_KF_BIT(GS_KF_TASK_STORAGE))
/* ... and the CUDA uprobes (leaks, record, daemon) */
#define GS_KF_NEED_CUDA (GS_KF_NEED_BASE | GS_KF_BIT(GS_KF_COOKIE))
/*
 * what proc, mem, cuda and cpu's 5.10 builds (-DGS_OLD_KERNEL) do without: per-call state in a
 * thread-id hash, the task through CO-RE, the cookie from the probed file and offset
 */
#define GS_KF_OLD_COVERS \
	(GS_KF_BIT(GS_KF_TASK_BTF) | GS_KF_BIT(GS_KF_TASK_STORAGE) | GS_KF_BIT(GS_KF_COOKIE))
/* what those builds (and cpu's) need: every command on 5.10 */
#define GS_KF_NEED_OLD (GS_KF_NEED_CUDA & ~GS_KF_OLD_COVERS)

struct gs_kfeat_desc {
	const char *name;  /* as GPUSNOOP_KERNEL_FEATURES_OFF and `gpusnoop check` spell it */
	const char *what;  /* what it is, for a person */
	const char *since; /* the first mainline kernel that has it: "5.11" */
};

/* NULL for f out of range */
const struct gs_kfeat_desc *gs_kfeat_desc(enum gs_kfeat f);

/*
 * A comma-separated list of feature names ("task_storage,bpf_loop") as a mask; 0 or -EINVAL
 * for a name it does not know (*bad then points at it, in list). Empty items are ignored.
 */
int gs_kfeat_parse(const char *list, uint32_t *mask, const char **bad);

/*
 * "task storage maps (Linux 5.11), bpf_loop() (Linux 5.17)" for the features of missing, at
 * most len bytes with the NUL; returns what snprintf would (the full length).
 */
int gs_kfeat_format(uint32_t missing, char *buf, size_t len);

/* the commands as `gpusnoop check` lists them */
enum gs_kcmd {
	GS_KCMD_LEAKS,
	GS_KCMD_RECORD,
	GS_KCMD_RECORD_CPU,
	GS_KCMD_PROFILE,
	GS_KCMD_DAEMON,
	GS_KCMD_TREE,
	GS_KCMD__NR,
};

/* "leaks", "record -e cpu", ...; NULL out of range */
const char *gs_kcmd_name(enum gs_kcmd c);

/* features a command cannot run without */
uint32_t gs_kcmd_needs(enum gs_kcmd c);

/* features a command runs without, losing something: Python frames, one link per library,
 * the bounded stack walk */
uint32_t gs_kcmd_wants(enum gs_kcmd c);

/* a session's needs (proc, mem, cuda): the 5.10 builds' where the kernel lacks what they cover */
uint32_t gs_kcompat_needs(bool cuda_probes);

/* CPU sampling's (profile, record -e cpu): the 5.10 build's where the kernel lacks the rest */
uint32_t gs_kcompat_cpu_needs(void);

/* proc, mem, cuda and cpu's 5.10 builds, for a kernel that lacks a feature they do without */
bool gs_kcompat_old_objects(uint32_t have);

/*
 * The features whose absence keeps Python frames off here, 0 if they work: bpf_loop() (a
 * bounded walk of 32 frames does not pass the verifier), else what made the 5.10 builds the
 * ones to load (they have no walk: their verifier refuses callbacks even in dead code).
 */
uint32_t gs_kcompat_python_missing(uint32_t have);

/* Python frames work here: gs_kcompat_python_missing() is 0 */
bool gs_kcompat_python_frames(uint32_t have);

/* the features missing that make the 5.10 builds the ones to load; 0: the usual builds */
uint32_t gs_kcompat_old_reason(uint32_t have);

/* user stacks from the kernel's walk (faults past the stack and all), not the bounded one */
bool gs_kcompat_kernel_stack_walk(uint32_t have);

/* uprobe_multi links where the kernel has them, else one link per probe (as before 6.6) */
bool gs_kcompat_multi_links(uint32_t have);

#endif /* GS_KERNEL_COMPAT_H */
