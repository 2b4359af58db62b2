/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_check.h: a newer CPython's published offsets tried on its live frame chains. */
#ifndef GS_PYTHON_CHECK_H
#define GS_PYTHON_CHECK_H

#include "user/py_debug_offsets.h"

struct gs_maps;

enum gs_py_check {
	GS_PY_CHECK_OK,	     /* a thread's frame chain ends at the <module> code object */
	GS_PY_CHECK_NOT_YET, /* no thread with frames yet (just exec'd), or unreadable */
	GS_PY_CHECK_BAD,     /* frames there, but what the offsets lead to is not that */
};

/*
 * Follows d from _PyRuntime at runtime: the first interpreter, its threads, each thread's
 * frames to the outermost Python one, whose executable must be an object of type code_type
 * named "<module>". Everything read is the process's: bounded and checked.
 */
enum gs_py_check gs_py_check_live(const struct gs_maps *maps, uint64_t runtime, uint64_t code_type,
				  const struct gs_py_debug_offsets *d);

#endif /* GS_PYTHON_CHECK_H */
