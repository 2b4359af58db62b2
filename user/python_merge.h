/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_merge.h: a native stack with the interpreter's eval loops replaced by Python frames. */
#ifndef GS_PYTHON_MERGE_H
#define GS_PYTHON_MERGE_H

#include <stddef.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

/* The eval loop's code ranges: [start[i], end[i]) */
struct gs_py_eval_ranges {
	__u64 start[2], end[2];
};

/*
 * Writes into out[0..max) the native stack (native[0] the ip, the others return addresses,
 * innermost first) with each frame in the eval loop replaced by the next run of Python
 * frames (py[], innermost first, a run ending at a GS_PY_F_RUN_END frame; named[] their
 * stand-in addresses, 0 to leave one out). Runs that no eval frame was found for follow
 * after marker (the process's gs_py_names__marker(); 0: none). Returns the number of frames
 * written.
 */
size_t gs_py_merge(const __u64 *native, size_t nr, const struct gs_py_frame *py, const __u64 *named,
		   size_t nr_py, const struct gs_py_eval_ranges *eval, __u64 marker, __u64 *out,
		   size_t max);

#endif /* GS_PYTHON_MERGE_H */
