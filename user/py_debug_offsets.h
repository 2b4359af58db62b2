/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* py_debug_offsets.h: CPython 3.13+'s own offsets (_Py_DebugOffsets), read and validated. */
#ifndef GS_PY_DEBUG_OFFSETS_H
#define GS_PY_DEBUG_OFFSETS_H

#include <stddef.h>
#include <stdint.h>

/*
 * 3.13+ keep _Py_DebugOffsets at the start of _PyRuntime (the .PyRuntime section, kept in
 * stripped builds): a cookie, PY_VERSION_HEX, then groups of uint64 sizes and offsets. The
 * groups' fields differ between minor versions, so where each group starts is described per
 * minor version (py_debug_offsets.c); a newer version is read with the newest description
 * and accepted only if everything it yields is in range.
 */
#define GS_PY_DEBUG_BLOB 1024 /* bytes read from _PyRuntime: every known layout fits */

struct gs_py_debug_offsets {
	uint32_t version_hex; /* PY_VERSION_HEX: 0x030e0af0 for 3.14.10 */
	int minor;
	int layout_minor; /* the description used: minor, or the newest known for a newer one */
	uint16_t runtime_interpreters_head, interp_threads_head, tstate_next;
	uint16_t tstate_current_frame;
	uint16_t frame_previous, frame_executable, frame_instr_ptr, frame_owner;
	uint16_t co_filename, co_name, co_qualname, co_linetable, co_firstlineno;
	uint16_t co_code_adaptive; /* bytes before the first code unit */
	uint16_t str_state, str_length, str_ascii_size;
};

/*
 * Reads blob (len bytes from the start of _PyRuntime, process memory: hostile) into out.
 * Returns 0, or -EINVAL with *why set to what is wrong (for the one "not supported" line).
 */
int gs_py_debug_offsets_parse(const void *blob, size_t len, struct gs_py_debug_offsets *out,
			      const char **why);

#endif /* GS_PY_DEBUG_OFFSETS_H */
