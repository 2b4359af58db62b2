/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python_layout.h: where CPython 3.8-3.15 (x86-64) keep thread states, frames and code names. */
#ifndef GS_PYTHON_LAYOUT_H
#define GS_PYTHON_LAYOUT_H

#include <stdint.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "user/python_lines.h"

/* One minor version's offsets (upstream builds; checked in gpusnoop(7), "Python frames"). */
struct gs_py_layout {
	int minor;		  /* 3.minor */
	uint16_t runtime_tss_key; /* _PyRuntime -> autoTSSkey (Py_tss_t) */
	struct gs_py_proc bpf;	  /* what the BPF walk needs, tss_key relative to _PyRuntime */
	/* code objects */
	uint16_t co_filename, co_name, co_qualname; /* co_qualname 0: none (before 3.11) */
	uint16_t co_lines;			    /* co_lnotab or co_linetable (bytes) */
	uint16_t co_firstlineno;
	enum gs_py_line_format line_format;
	/* str: compact ASCII data follows PyASCIIObject; other compact kinds the larger header */
	uint16_t str_ascii_data, str_compact_data;
	uint16_t str_state; /* the state bit field's offset */
};

/* The layout of CPython 3.minor, or NULL when gpusnoop does not know it. */
const struct gs_py_layout *gs_py_layout_find(int major, int minor);

#endif /* GS_PYTHON_LAYOUT_H */
