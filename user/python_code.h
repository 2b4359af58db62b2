/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_code.h: names and lines of one process's code objects, read once and cached. */
#ifndef GS_PYTHON_CODE_H
#define GS_PYTHON_CODE_H

#include <stdint.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "user/python_proc.h"

struct gs_py_codes;

/* Where a Python frame is */
struct gs_py_where {
	const char *qualname; /* borrowed from the cache: valid until the next lookup */
	const char *file;
	int line;     /* -1: none */
	uint32_t gen; /* the cache entry's generation: changes when the address is reused */
};

/* The cache of pid's code objects; interp is borrowed and must outlive it. */
struct gs_py_codes *gs_py_codes__new(pid_t pid, const struct gs_py_interp *interp);
void gs_py_codes__free(struct gs_py_codes *c);

/*
 * Takes a code object's names and line table as BPF sent them (GS_EV_PYCODE), so that
 * frames of a process that is gone by the time they are named still are. Returns 0 or
 * -errno (-EINVAL: incomplete; the process is read instead while it lives).
 */
int gs_py_codes__learn(struct gs_py_codes *c, const struct gs_py_code_event *ev);

/*
 * Names the frame at instr (the value the BPF walk recorded) of the code object at code.
 * Reads the object's header from the process each time, to notice a freed object whose
 * address now holds another one; names and the line table are read only for new objects.
 * Once the process is gone, what was learned or read before is used as it is.
 * Returns 0 or -errno (-EINVAL: not a code object; -ESRCH: the process is gone).
 */
int gs_py_codes__where(struct gs_py_codes *c, uint64_t code, uint32_t instr,
		       struct gs_py_where *out);

#endif /* GS_PYTHON_CODE_H */
