/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_lines.h: the source line of a CPython instruction, from the code object's line table. */
#ifndef GS_PYTHON_LINES_H
#define GS_PYTHON_LINES_H

#include <stddef.h>
#include <stdint.h>

/* Which table a code object carries */
enum gs_py_line_format {
	GS_PY_LINES_LNOTAB = 1, /* 3.8, 3.9: co_lnotab (byte delta, signed line delta) */
	GS_PY_LINES_LINETABLE,	/* 3.10: co_linetable (byte delta, line delta; -128: none) */
	GS_PY_LINES_LOCATIONS,	/* 3.11+: co_linetable, the location table */
};

/*
 * The line of the instruction at byte offset addr (from the first code unit) in a code
 * object whose table is tab[0..len) and first line firstlineno, as CPython's
 * PyCode_Addr2Line() answers it: -1 when the instruction has no line or the table does not
 * cover addr. A negative addr (a frame not started yet) is the first line. The table is
 * the traced process's: any bytes are safe.
 */
int gs_py_addr2line(enum gs_py_line_format fmt, const uint8_t *tab, size_t len, int firstlineno,
		    int64_t addr);

#endif /* GS_PYTHON_LINES_H */
