/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* oom_queue.h: OOM records read from their own ring buffer, handled before anything else. */
#ifndef GS_OOM_QUEUE_H
#define GS_OOM_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * OOM signals (CUDA error 2, PyTorch's OOM, an OOM kill) come on a small ring buffer of their
 * own (bpf/gs_common.bpf.h oom_events). The reader copies them here and hands them on before
 * the shared buffer's records, also in the middle of a long drain of those. Fixed size: a
 * full queue makes the reader stop and empty it first, so no record is lost for it.
 */
#define GS_OOM_QUEUE_SLOTS 32
#define GS_OOM_RECORD_MAX  1024 /* the largest OOM record (struct gs_mem_alloc) fits */

struct gs_oom_queue {
	uint64_t rec[GS_OOM_QUEUE_SLOTS][GS_OOM_RECORD_MAX / sizeof(uint64_t)];
	uint32_t size[GS_OOM_QUEUE_SLOTS];
	size_t head, nr;  /* the oldest slot; slots in use */
	uint64_t too_big; /* records refused: larger than GS_OOM_RECORD_MAX */
};

/* Copies a record in. 0; -E2BIG (counted) for one too big; -ENOSPC when full (not copied). */
int gs_oom_queue__push(struct gs_oom_queue *q, const void *data, size_t size);
static inline bool gs_oom_queue__full(const struct gs_oom_queue *q)
{
	return q->nr == GS_OOM_QUEUE_SLOTS;
}
/*
 * Takes the oldest record out: false when empty. *data is borrowed, valid until the next
 * push (its slot is free from now on), which may be of *data itself (put back at the end).
 */
bool gs_oom_queue__pop(struct gs_oom_queue *q, void **data, size_t *size);

#endif /* GS_OOM_QUEUE_H */
