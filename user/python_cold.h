/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_cold.h: the split-off part of a stripped interpreter's evaluation loop. */
#ifndef GS_PYTHON_COLD_H
#define GS_PYTHON_COLD_H

#include <stdint.h>

struct Elf;

/*
 * GCC moves most of _PyEval_EvalFrameDefault into a part of its own (the .cold symbol in
 * .symtab, which stripped interpreters such as Debian's lack): Python frames run there. In
 * e (the interpreter's file), looks at the jumps of the function at eval (size bytes, as
 * .dynsym says) that leave it, and takes the largest function (.eh_frame_hdr's table) they reach, at least
 * 16 KiB. Returns 0 with *start and *size set, or -ENOENT.
 */
int gs_py_find_eval_cold(struct Elf *e, uint64_t eval, uint64_t size, uint64_t *start,
			 uint64_t *cold_size);

#endif /* GS_PYTHON_COLD_H */
