// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_layout.c: the per-version offsets, from CPython's headers for x86-64. */
#include <stddef.h>
#include "user/python_layout.h"

/*
 * Checked against the DWARF of pyenv's 3.8.18..3.13.0 builds (gdb: offsetof of each field),
 * against Debian's 3.11 at run time (tests/e2e/test_python.py), and against py-spy's and
 * Strobelight's tables (gpusnoop(7), "Python frames"). glibc x86-64's struct pthread keeps
 * specific_1stblock at 784 and specific[] at 1296 (2.26 to 2.40).
 */
#define PTHREAD_OFFSETS .pthread_first = 784, .pthread_second = 1296
#define NO_CFRAME	0xffff

/* 3.8-3.10: PyFrameObject, one _PyEval_EvalFrameDefault per frame */
#define FRAME_OBJECT(lasti)                                                                \
	.tstate_frame = 24, .cframe_frame = NO_CFRAME, .frame_code = 32, .frame_back = 24, \
	.frame_instr = (lasti), .frame_flag = 0, .flag_kind = GS_PY_RUN_EVERY, .instr_is_ptr = 0

#define STR_3_8	 .str_ascii_data = 48, .str_compact_data = 72, .str_state = 32
#define STR_3_12 .str_ascii_data = 40, .str_compact_data = 56, .str_state = 32

static const struct gs_py_layout layouts[] = {
	{
		.minor = 8,
		.runtime_tss_key = 1392,
		.bpf = { PTHREAD_OFFSETS, FRAME_OBJECT(104) },
		.co_filename = 104,
		.co_name = 112,
		.co_lines = 120,
		.co_firstlineno = 40,
		.line_format = GS_PY_LINES_LNOTAB,
		STR_3_8,
	},
	{
		.minor = 9,
		.runtime_tss_key = 584,
		.bpf = { PTHREAD_OFFSETS, FRAME_OBJECT(104) },
		.co_filename = 104,
		.co_name = 112,
		.co_lines = 120,
		.co_firstlineno = 40,
		.line_format = GS_PY_LINES_LNOTAB,
		STR_3_8,
	},
	{
		.minor = 10,
		.runtime_tss_key = 584,
		.bpf = { PTHREAD_OFFSETS, FRAME_OBJECT(96) },
		.co_filename = 104,
		.co_name = 112,
		.co_lines = 120,
		.co_firstlineno = 40,
		.line_format = GS_PY_LINES_LINETABLE,
		STR_3_8,
	},
	{
		/* _PyInterpreterFrame through tstate->cframe; is_entry ends an eval run */
		.minor = 11,
		.runtime_tss_key = 592,
		.bpf = { PTHREAD_OFFSETS, .tstate_frame = 56, .cframe_frame = 8, .frame_code = 32,
			 .frame_back = 48, .frame_instr = 56, .frame_flag = 68,
			 .flag_kind = GS_PY_RUN_IS_ENTRY, .instr_is_ptr = 1 },
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_lines = 136,
		.co_firstlineno = 72,
		.line_format = GS_PY_LINES_LOCATIONS,
		STR_3_8,
	},
	{
		/* a C-stack shim frame (owner 3) sits below each eval run */
		.minor = 12,
		.runtime_tss_key = 1544,
		.bpf = { PTHREAD_OFFSETS, .tstate_frame = 56, .cframe_frame = 0, .frame_code = 0,
			 .frame_back = 8, .frame_instr = 56, .frame_flag = 70,
			 .flag_kind = GS_PY_RUN_OWNER, .instr_is_ptr = 1 },
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_lines = 136,
		.co_firstlineno = 68,
		.line_format = GS_PY_LINES_LOCATIONS,
		STR_3_12,
	},
	{
		/* no cframe; f_executable, instr_ptr */
		.minor = 13,
		.runtime_tss_key = 2160,
		.bpf = { PTHREAD_OFFSETS, .tstate_frame = 72, .cframe_frame = NO_CFRAME,
			 .frame_code = 0, .frame_back = 8, .frame_instr = 56, .frame_flag = 70,
			 .flag_kind = GS_PY_RUN_OWNER, .instr_is_ptr = 1 },
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_lines = 136,
		.co_firstlineno = 68,
		.line_format = GS_PY_LINES_LOCATIONS,
		STR_3_12,
	},
	{
		/* f_executable a tagged _PyStackRef; frame and code offsets: _Py_DebugOffsets */
		.minor = 14,
		.runtime_tss_key = 2336,
		.bpf = { PTHREAD_OFFSETS, .tstate_frame = 72, .cframe_frame = NO_CFRAME,
			 .frame_code = 0, .frame_back = 8, .frame_instr = 56, .frame_flag = 70,
			 .flag_kind = GS_PY_RUN_OWNER, .instr_is_ptr = 1 },
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_lines = 136,
		.co_firstlineno = 68,
		.line_format = GS_PY_LINES_LOCATIONS,
		STR_3_12,
	},
	{
		/* no autoTSSkey: a thread-local (python_proc.c); frame and code offsets: _Py_DebugOffsets */
		.minor = 15,
		.runtime_tss_key = 0,
		.bpf = { PTHREAD_OFFSETS, .tstate_frame = 72, .cframe_frame = NO_CFRAME,
			 .frame_code = 0, .frame_back = 8, .frame_instr = 56, .frame_flag = 70,
			 .flag_kind = GS_PY_RUN_OWNER, .instr_is_ptr = 1 },
		.co_filename = 112,
		.co_name = 120,
		.co_qualname = 128,
		.co_lines = 136,
		.co_firstlineno = 68,
		.line_format = GS_PY_LINES_LOCATIONS,
		STR_3_12,
	},
};
#define NR_LAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

const struct gs_py_layout *gs_py_layout_find(int major, int minor)
{
	if (major != 3)
		return NULL;
	/* a newer one: the newest layout, kept only if its _Py_DebugOffsets validate */
	if (minor > layouts[NR_LAYOUTS - 1].minor && minor < 100)
		return &layouts[NR_LAYOUTS - 1];
	for (size_t i = 0; i < NR_LAYOUTS; i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}
