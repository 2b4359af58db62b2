/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* bpf_objects.h: a session's BPF objects, each loaded and verified only once it is needed. */
#ifndef GS_BPF_OBJECTS_H
#define GS_BPF_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_map;
struct proc_bpf;
struct mem_bpf;
struct cuda_bpf;
struct torch_bpf;
struct cpu_bpf;
struct gpu_bpf;
struct gs_python;
struct gs_cookie_keys;

struct gs_bpf_objects_opts {
	bool all;	   /* -a: every process, not the targets map */
	bool oom_kills;	   /* the OOM killer's tracepoint */
	bool free_returns; /* every free's return, not only failures */
	bool ustack;	   /* --stacks dwarf: stack slices before the records */
	bool no_stacks;	   /* --stacks none: no user stack walked in BPF */
	size_t ringbuf_bytes;
	uint32_t families; /* GS_FAM_BIT()s of the CUDA APIs that will be probed */
	/*
	 * PyTorch's probes may be wanted: torch.bpf.o (seconds of verifier time) is loaded by
	 * gs_bpf_objects__torch() when a process first maps libc10; under -a at open, so that a
	 * long-running session never stalls its event loop for it later.
	 */
	bool torch;
	struct gs_python *python; /* its py_procs map goes to every object; NULL: none */
};

/* What cpu.bpf.o is loaded with (profilers/cpu_sampler.h says what each means). */
struct gs_cpu_obj_cfg {
	bool all;
	bool records;
	bool cgroup;
	bool no_kernel_stack;
	bool no_user_stack;
	bool per_thread;
	bool ustack;
	uint32_t tid;
};

/*
 * Every BPF object of a session, owned here; attach code borrows them. proc.bpf.o is always
 * loaded: it owns the ring buffer, the target set and the loss counters every other object
 * shares. mem.bpf.o and cuda.bpf.o are loaded when the families have APIs of theirs, torch,
 * cpu and gpu on their first request; the pointers of objects not loaded are NULL.
 */
struct gs_bpf_objects {
	struct proc_bpf *proc;
	struct mem_bpf *mem;
	struct cuda_bpf *cuda;
	struct torch_bpf *torch;
	struct cpu_bpf *cpu; /* perf_event sampling (profilers/cpu_sampler.c) */
	struct gpu_bpf *gpu; /* the CUPTI library's USDT probes (profilers/cuda/gpu_attach.c) */
	struct gs_bpf_objects_opts opts;
	uint32_t wakeup_bytes;
	bool torch_failed; /* tried once and failed (logged): not tried again */
	bool no_find_vma;  /* the kernel has no bpf_find_vma() (5.17): each object's cfg_ */
	bool old;	   /* proc, mem and cuda are their 5.10 builds (profilers/bpf_old.c) */
	bool old_cookies;  /* ... on a kernel that takes uprobe cookies all the same */
	struct gs_cookie_keys *cookie_keys; /* what their probe_cookies maps hold */
};

/* Loads proc, and mem and cuda as the families need. Returns 0 or -errno (logged). */
int gs_bpf_objects__open(struct gs_bpf_objects *o, const struct gs_bpf_objects_opts *opts);
/*
 * The PyTorch object, loaded on the first call; NULL when opts.torch is off or it could not
 * be loaded (one warning: CUDA tracing goes on without it).
 */
struct torch_bpf *gs_bpf_objects__torch(struct gs_bpf_objects *o);
/*
 * cpu.bpf.o, loaded with cfg on proc's maps (call gs_kernel__require_cpu() first). Once per
 * session: NULL with errno EEXIST after that, or NULL with errno set (logged).
 */
struct cpu_bpf *gs_bpf_objects__cpu(struct gs_bpf_objects *o, const struct gs_cpu_obj_cfg *cfg);
/* gpu.bpf.o on proc's maps, loaded on the first call. NULL with errno set (logged). */
struct gpu_bpf *gs_bpf_objects__gpu(struct gs_bpf_objects *o);
/* Makes another object (opened, not loaded) use proc's ring buffer, targets and counters. */
int gs_bpf_objects__share_maps(struct gs_bpf_objects *o, struct bpf_map *events,
			       struct bpf_map *targets, struct bpf_map *stats);
/*
 * The 5.10 builds have no bpf_cookie: an entry probe's cookie is found by the probed
 * function's file (kernel dev_t, inode) and offset. Records it in mem's and cuda's map;
 * 0 where the objects are not those builds, or -errno.
 */
int gs_bpf_objects__old_cookie(struct gs_bpf_objects *o, uint64_t dev, uint64_t ino, uint64_t off,
			       uint64_t cookie);
/* ... and deletes those of a file (kernel dev_t, inode) no process is probed in any more */
void gs_bpf_objects__old_forget_file(struct gs_bpf_objects *o, uint64_t dev, uint64_t ino);
/* Destroys what was loaded; accepts a zeroed struct. */
void gs_bpf_objects__close(struct gs_bpf_objects *o);
/* "loading BPF programs (what): why", with the privileges to grant on -EPERM; returns err. */
int gs_bpf_load_error(const char *what, int err);

#endif /* GS_BPF_OBJECTS_H */
