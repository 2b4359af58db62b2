/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cpu_sampler.h: perf_event CPU sampling of the tracker's targets, on every online CPU. */
#ifndef GS_CPU_SAMPLER_H
#define GS_CPU_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "user/units.h" /* gs_parse_cpu_list() */

struct gs_tracker;
struct gs_cpu_sampler;

#define GS_CPU_DEFAULT_HZ 99

struct gs_cpu_sampler_opts {
	unsigned int freq_hz;
	bool records;	    /* one ring-buffer record per sample (record), else counts (profile) */
	bool all;	    /* every process (-a), else the tracker's targets */
	const char *cgroup; /* only tasks in this cgroup v2 directory or below; NULL: any */
	bool no_kernel_stack; /* -U: user stacks only */
	bool no_user_stack;   /* -K: kernel stacks only */
	pid_t tid;	      /* --tid: this thread only; 0: all */
	bool per_thread;      /* counts per thread id (gs_cpu_key.tid) */
	bool ustack;	      /* --stacks dwarf: stack slices for the tracker to unwind */
};

/*
 * Has the tracker's objects load bpf/cpu.bpf.c (gs_bpf_objects__cpu(): they own it, once per
 * session) and starts sampling on every online CPU: hardware cycles where the PMU has them,
 * else the cpu-clock software event (logged). Call after gs_tracker__open(), before
 * gs_tracker__start(). Returns 0 or -errno (logged).
 */
int gs_cpu_sampler__open(struct gs_cpu_sampler **out, struct gs_tracker *t,
			 const struct gs_cpu_sampler_opts *opts);

/*
 * One in-kernel count: samples of thread comm (in key) of key->pid with these stacks,
 * innermost first (either may be empty: a kernel thread has no user stack, a sample in
 * user mode no kernel one, and a lost stack is empty).
 */
typedef void (*gs_cpu_count_fn)(void *ctx, const struct gs_cpu_key *key, const __u64 *user,
				uint32_t nr_user, const __u64 *kernel, uint32_t nr_kernel,
				uint64_t count);
/* Hands every count made since the last call to fn and removes it from the kernel. */
int gs_cpu_sampler__drain(struct gs_cpu_sampler *s, gs_cpu_count_fn fn, void *ctx);
/* "cycles" or "cpu-clock" */
const char *gs_cpu_sampler__event(const struct gs_cpu_sampler *s);
unsigned int gs_cpu_sampler__nr_cpus(const struct gs_cpu_sampler *s);
void gs_cpu_sampler__free(struct gs_cpu_sampler *s);

/* Parses -F HZ: 1 to gs_cpu_max_sample_rate(). Logs one line and returns -EINVAL on junk. */
int gs_cpu_parse_hz(const char *arg, unsigned int *hz);
/* The highest -F the kernel accepts (/proc/sys/kernel/perf_event_max_sample_rate). */
unsigned int gs_cpu_max_sample_rate(void);

#endif /* GS_CPU_SAMPLER_H */
