/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_proc.h: find the CPython interpreter a process runs, and where its state lives. */
#ifndef GS_PYTHON_PROC_H
#define GS_PYTHON_PROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "user/python_layout.h"
#include "user/python_merge.h"

struct gs_maps;
struct gs_symcache;

/* What is known of one process's interpreter, in that process's addresses */
struct gs_py_interp {
	struct gs_py_layout layout; /* the table's, with 3.13+'s own offsets (_Py_DebugOffsets) */
	int major, minor;
	uint64_t runtime;	       /* _PyRuntime */
	uint64_t code_type;	       /* &PyCode_Type: a code object's ob_type */
	uint64_t code_header;	       /* 3.11+: bytes before the first code unit (tp_basicsize) */
	struct gs_py_eval_ranges eval; /* _PyEval_EvalFrameDefault and its .cold part */
	char path[256];		       /* the file that holds the interpreter, for messages */
	const char *why;	       /* GS_PY_UNSUPPORTED: what is not supported */
};

enum gs_py_find {
	GS_PY_NONE = 0,	   /* no CPython in this process (yet) */
	GS_PY_FOUND,	   /* *out describes it */
	GS_PY_UNSUPPORTED, /* a CPython gpusnoop does not know: *out has path and version */
};

/*
 * Looks for an interpreter (python3.X executable or libpython3.X.so) in maps and reads what
 * the BPF walk and the code reader need: its ELF symbols (through a descriptor opened from
 * the maps snapshot), version (Py_Version, else the file name) and PyCode_Type's size.
 */
enum gs_py_find gs_py_interp_find(struct gs_symcache *sc, const struct gs_maps *maps,
				  struct gs_py_interp *out);

#endif /* GS_PYTHON_PROC_H */
