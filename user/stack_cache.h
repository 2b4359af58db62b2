/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* stack_cache.h: the reader's copy of the stacks BPF sent once (bpf/gs_stack_cache.bpf.h). */
#ifndef GS_STACK_CACHE_H
#define GS_STACK_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

struct gs_stack_cache;

/* Room for any record with a native stack, its frames resolved (gs_stack_cache__resolve()) */
union gs_stack_record {
	struct gs_mem_alloc alloc;
	struct gs_mem_free_ret free_ret;
	struct gs_cuda_call call;
	struct gs_cpu_sample sample;
	struct gs_torch_mem torch_mem;
	struct gs_torch_oom torch_oom;
};

/* Bounded: at most GS_STACK_CACHE_MAX stacks (one per CPU and slot), whatever runs. */
struct gs_stack_cache *gs_stack_cache__new(void);
void gs_stack_cache__free(struct gs_stack_cache *c);

/*
 * For a record checked by gs_event_decode() (size bytes at data), in ring-buffer order:
 * one with GS_EV_F_STACK_NEW leaves its frames here; one with GS_EV_F_STACK_REF is copied
 * into buf (buf_size bytes) with the frames of the stack it names, and buf is returned,
 * *size its new size. Any other record, or a reference to no stack of its process (counted
 * in unresolved: never expected), is returned as it is; so is one whose stack
 * --stack-sample left out (GS_EV_STACK_SITE_ONLY: frames[0] its call site alone).
 */
const void *gs_stack_cache__resolve(struct gs_stack_cache *c, const void *data, size_t *size,
				    void *buf, size_t buf_size);

struct gs_stack_cache_stats {
	uint64_t sent;	     /* stacks sent whole and kept */
	uint64_t refs;	     /* records whose stack was a reference, resolved */
	uint64_t unresolved; /* references to a stack not here: left without frames */
	uint64_t site_only;  /* --stack-sample: records with their call site alone */
};
void gs_stack_cache__stats(const struct gs_stack_cache *c, struct gs_stack_cache_stats *out);

#endif /* GS_STACK_CACHE_H */
