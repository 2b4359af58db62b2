/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* accounting.h: PyTorch memory per process: tensors, segments, allocated vs reserved per device. */
#ifndef GS_TORCH_ACCT_H
#define GS_TORCH_ACCT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "user/pid_index.h"
#include "user/alloc_table.h"

struct gs_stack_table;
struct gs_symcache;

#define GS_TORCH_MAX_DEVICES 16
/* gs_alloc.api of a block or segment: GS_TORCH_DEV_KEY(type, index); unknown device */
#define GS_TORCH_DEV_KEY(type, index) ((uint16_t)(((type) << 8) | (uint8_t)(index)))
#define GS_TORCH_DEV_UNKNOWN	      0xffff

/* one device's view, as torch.cuda.memory_allocated()/memory_reserved() would give it */
struct gs_torch_device {
	uint16_t
		key; /* GS_TORCH_DEV_KEY, or GS_TORCH_DEV_UNKNOWN for segments of no known device */
	uint64_t allocated;	       /* tensor bytes */
	uint64_t reserved;	       /* segment bytes (CUDA only) */
	uint64_t tensors;	       /* outstanding tensor blocks seen */
	uint64_t segments;	       /* outstanding segments seen */
	uint64_t largest_free_segment; /* cached segment with no tensor in it (filled on demand) */
	bool totals;		       /* allocated/reserved from PyTorch's own counters */
	/* internal */
	uint64_t seg_bytes, seg_bytes_at_report, reported_reserved, block_bytes;
};

struct gs_torch_proc {
	pid_t pid;
	uint8_t source; /* GS_TORCH_SRC_* of its CUDA tensors, 0 until one is seen */
	bool cpu;	/* CPU tensor events seen */
	char version[64];
	struct gs_alloc_table *blocks;	 /* tensors; .api is the device key */
	struct gs_alloc_table *segments; /* cudaMalloc'd by libc10_cuda; .api the device key */
	size_t unknown_device_segments;
	uint64_t unknown_frees;	  /* tensor frees of pointers not seen allocated */
	uint64_t failed_segments; /* cudaMalloc calls of the allocator that failed */
	uint64_t ooms;
	struct gs_torch_device devs[GS_TORCH_MAX_DEVICES + 2];
	size_t nr_devs;
	/* OOM bookkeeping: a reportOutOfMemoryToProfiler not yet followed by its throw */
	uint32_t oom_reported_tid;
	uint32_t failed_segment_tid;
	uint64_t failed_segment_size;
};

struct gs_torch_acct {
	struct gs_stack_table *stacks; /* borrowed */
	struct gs_symcache *symcache;  /* borrowed */
	struct gs_torch_proc **procs;  /* each allocated alone: its address never moves */
	size_t nr_procs, cap_procs;
	struct gs_pid_index index; /* pid -> position in procs */
};

/* what an OOM was, when it is one (gs_torch_acct__oom) */
struct gs_torch_oom_info {
	pid_t pid;
	uint8_t source;		   /* GS_TORCH_OOM_* */
	uint64_t requested;	   /* bytes; 0 unknown */
	bool requested_is_segment; /* only the allocator's failed segment request is known */
	uint16_t device;	   /* GS_TORCH_DEV_KEY or GS_TORCH_DEV_UNKNOWN */
	uint32_t stack_id;
	uint64_t allocated, reserved; /* what PyTorch told its profiler hook (REPORT only) */
};

void gs_torch_acct__init(struct gs_torch_acct *m, struct gs_stack_table *stacks,
			 struct gs_symcache *symcache);
void gs_torch_acct__release(struct gs_torch_acct *m);
/* Borrowed: stays at its address until the process is removed or m released. */
struct gs_torch_proc *gs_torch_acct__find(const struct gs_torch_acct *m, pid_t pid);
void gs_torch_acct__remove(struct gs_torch_acct *m, struct gs_torch_proc *p);
/* Forgets what an image held (after exec), keeping the process. */
void gs_torch_acct__clear(struct gs_torch_proc *p);

/* A tensor allocation or free. Returns 0 or -ENOMEM. */
int gs_torch_acct__tensor(struct gs_torch_acct *m, const struct gs_torch_mem *e);
/*
 * A CUDA allocation/free record: when the caching allocator (libc10_cuda) made it, it is a
 * segment, accounted here, and true is returned; false means it is a raw CUDA allocation.
 */
bool gs_torch_acct__segment_alloc(struct gs_torch_acct *m, const struct gs_mem_alloc *e);
bool gs_torch_acct__segment_free(struct gs_torch_acct *m, const struct gs_mem_free *e);
/*
 * cuMemMap/cuMemUnmap (decoded from the generic call record by the caller): expandable
 * segments map their pages one call each; a page the caching allocator mapped is a segment.
 * Each returns whether the call was about a segment.
 */
bool gs_torch_acct__segment_map(struct gs_torch_acct *m, const struct gs_event_hdr *hdr,
				uint64_t ptr, uint64_t size, const __u64 *frames, uint16_t nr);
bool gs_torch_acct__segment_unmap(struct gs_torch_acct *m, const struct gs_event_hdr *hdr,
				  uint64_t ptr);
/*
 * An OOM record. Returns 1 and fills *out when it is a new out-of-memory (a throw right
 * after the profiler hook reported it is the same one: 0), or -ENOMEM.
 */
int gs_torch_acct__oom(struct gs_torch_acct *m, const struct gs_torch_oom *e,
		       struct gs_torch_oom_info *out);

/* Refreshes each device's derived numbers (reserved, largest free segment); call before use. */
void gs_torch_proc__update(struct gs_torch_proc *p);
/* The device entry for key, NULL if there is none. */
const struct gs_torch_device *gs_torch_proc__device(const struct gs_torch_proc *p, uint16_t key);
/* "cuda:0", "cpu", "cuda:?" */
void gs_torch_device_name(uint16_t key, char *buf, size_t len);
/* Bytes PyTorch counts for a CUDA block of a requested size: rounded up to 512. */
uint64_t gs_torch_block_size(uint64_t requested);

#endif /* GS_TORCH_ACCT_H */
