// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_check.c: the frame chains of a newer CPython, walked once before BPF walks them. */
#include <stdbool.h>
#include <string.h>
#include "user/proc_mem.h"
#include "user/python_check.h"

#define MAX_THREADS 256
#define MAX_FRAMES  4096 /* frames read in all: a cyclic chain costs no more */
#define OWNER_SHIM  3	 /* python_layout.h: 3 and up end a run of Python frames */
#define OB_TYPE	    8
#define TAG_BITS    7ULL

static uint64_t read_ptr(const struct gs_maps *maps, uint64_t addr, bool *ok)
{
	uint64_t v = 0;

	if (!addr || gs_read_process_memory(maps, addr, &v, sizeof(v)))
		*ok = false;
	return v;
}

/* Is code a code object (its type code_type) named "<module>" (compact ASCII)? */
static bool is_module_code(const struct gs_maps *maps, uint64_t code, uint64_t code_type,
			   const struct gs_py_debug_offsets *d)
{
	bool ok = true;
	uint64_t type = read_ptr(maps, code + OB_TYPE, &ok);
	uint64_t name = read_ptr(maps, code + d->co_name, &ok);
	uint32_t state = 0;
	int64_t length = 0;
	char text[9] = "";

	if (!ok || type != code_type ||
	    gs_read_process_memory(maps, name + d->str_state, &state, sizeof(state)) ||
	    gs_read_process_memory(maps, name + d->str_length, &length, sizeof(length)) ||
	    length != 8 || !(state & (1u << 6)) ||
	    gs_read_process_memory(maps, name + d->str_ascii_size, text, 8))
		return false;
	return !strcmp(text, "<module>");
}

/*
 * The outermost Python frame's executable of the thread state ts; 0 if none or unreadable.
 * *seen: the thread has frames (a chain that then leads nowhere readable says the offsets
 * are wrong).
 */
static uint64_t outermost_code(const struct gs_maps *maps, uint64_t ts,
			       const struct gs_py_debug_offsets *d, bool *seen, int *budget)
{
	bool ok = true;
	uint64_t frame = read_ptr(maps, ts + d->tstate_current_frame, &ok), code = 0;

	if (ok && frame)
		*seen = true;
	for (; ok && frame && *budget > 0; (*budget)--) {
		uint8_t owner = 0;
		uint64_t exec = read_ptr(maps, frame + d->frame_executable, &ok);

		if (!ok || gs_read_process_memory(maps, frame + d->frame_owner, &owner, 1))
			return 0;
		if (owner < OWNER_SHIM)
			code = exec & ~TAG_BITS;
		frame = read_ptr(maps, frame + d->frame_previous, &ok);
	}
	return ok ? code : 0;
}

enum gs_py_check gs_py_check_live(const struct gs_maps *maps, uint64_t runtime, uint64_t code_type,
				  const struct gs_py_debug_offsets *d)
{
	bool ok = true, frames = false;
	int budget = MAX_FRAMES;
	uint64_t interp = read_ptr(maps, runtime + d->runtime_interpreters_head, &ok), ts;

	ts = ok && interp ? read_ptr(maps, interp + d->interp_threads_head, &ok) : 0;
	for (int i = 0; ok && ts && i < MAX_THREADS; i++) {
		uint64_t code = outermost_code(maps, ts, d, &frames, &budget);

		if (code && is_module_code(maps, code, code_type, d))
			return GS_PY_CHECK_OK;
		ts = read_ptr(maps, ts + d->tstate_next, &ok);
	}
	return frames ? GS_PY_CHECK_BAD : GS_PY_CHECK_NOT_YET;
}
