// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* oom_queue.c: a fixed ring of copied OOM records, oldest first. */
#include <errno.h>
#include <string.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/oom_queue.h"

_Static_assert(sizeof(struct gs_mem_alloc) <= GS_OOM_RECORD_MAX, "CUDA OOM record fits");
_Static_assert(sizeof(struct gs_torch_oom) <= GS_OOM_RECORD_MAX, "PyTorch OOM record fits");
_Static_assert(sizeof(struct gs_proc_event) <= GS_OOM_RECORD_MAX, "OOM kill record fits");

int gs_oom_queue__push(struct gs_oom_queue *q, const void *data, size_t size)
{
	size_t slot;

	if (size > GS_OOM_RECORD_MAX) {
		q->too_big++;
		return -E2BIG;
	}
	if (gs_oom_queue__full(q))
		return -ENOSPC;
	slot = (q->head + q->nr) % GS_OOM_QUEUE_SLOTS;
	memmove(q->rec[slot], data, size); /* data may be the slot just popped */
	q->size[slot] = (uint32_t)size;
	q->nr++;
	return 0;
}

bool gs_oom_queue__pop(struct gs_oom_queue *q, void **data, size_t *size)
{
	if (!q->nr)
		return false;
	*data = q->rec[q->head];
	*size = q->size[q->head];
	q->head = (q->head + 1) % GS_OOM_QUEUE_SLOTS;
	q->nr--;
	return true;
}
