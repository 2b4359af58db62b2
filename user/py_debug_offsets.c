// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* py_debug_offsets.c: _Py_DebugOffsets of CPython 3.13, 3.14, 3.15, checked as hostile input. */
#include <errno.h>
#include <string.h>
#include "user/py_debug_offsets.h"

/*
 * Where each group starts, in uint64 words from the start of _Py_DebugOffsets (word 0: the
 * cookie), per minor version: from Include/internal/pycore_debug_offsets.h of each version,
 * checked against the blobs of pyenv's 3.13.0 and Debian unstable's 3.14 and 3.15
 * (tests/unit/test_py_debug_offsets.c). Each group starts with the struct's size.
 */
struct blob_layout {
	int minor;
	uint8_t thread, frame, code, unicode; /* thread_state, interpreter_frame, ... */
};
#define RUNTIME_GROUP 3 /* runtime_state, then interpreter_state: the same in 3.13-3.15 */
#define INTERP_GROUP  6

static const struct blob_layout layouts[] = {
	{ .minor = 13, .thread = 19, .frame = 28, .code = 34, .unicode = 67 },
	/* interpreter_state gained id and gil fields, interpreter_frame stackpointer, tlbc */
	{ .minor = 14, .thread = 22, .frame = 31, .code = 39, .unicode = 77 },
	/* thread_state gained fields after current_frame's */
	{ .minor = 15, .thread = 22, .frame = 39, .code = 47, .unicode = 89 },
};
#define NR_LAYOUTS (sizeof(layouts) / sizeof(layouts[0]))

#define FRAME_SPAN 120 /* the BPF walk reads one window of a frame (GS_PY_FRAME_WINDOW) */
#define CODE_SPAN  152 /* the code reader reads 160 bytes of a code object (python_code.c) */

struct reader {
	const uint8_t *blob;
	size_t len;
	const char *why;
};

static uint64_t word(const struct reader *r, size_t i)
{
	uint64_t v = UINT64_MAX; /* past the blob: out of every range */

	if ((i + 1) * 8 <= r->len)
		memcpy(&v, r->blob + i * 8, sizeof(v));
	return v;
}

/*
 * Field i of the group at g, checked: 8 bytes at it fit in the struct's size, and in span
 * when span is not 0. Returns the offset; on failure notes why and returns 0.
 */
static uint16_t field(struct reader *r, size_t g, size_t i, uint64_t span, const char *what)
{
	uint64_t size = word(r, g), off = word(r, g + i);

	if (size > 1 << 20 || off > 0xfff0 || off + 4 > size || (span && off + 8 > span)) {
		if (!r->why)
			r->why = what;
		return 0;
	}
	return (uint16_t)off;
}

static const struct blob_layout *layout_for(int minor, int *used)
{
	const struct blob_layout *b = &layouts[NR_LAYOUTS - 1];

	for (size_t i = 0; i < NR_LAYOUTS; i++)
		if (layouts[i].minor == minor)
			b = &layouts[i];
	*used = b->minor;
	return b;
}

/* The fields the walk and the code reader need; distinct where they must be. */
static void read_fields(struct reader *r, const struct blob_layout *b,
			struct gs_py_debug_offsets *o)
{
	o->runtime_interpreters_head = field(r, RUNTIME_GROUP, 2, 0, "runtime offsets");
	o->interp_threads_head = field(r, INTERP_GROUP, 3, 0, "interpreter offsets");
	o->tstate_next = field(r, b->thread, 2, 0, "thread state offsets");
	o->tstate_current_frame = field(r, b->thread, 4, 0, "thread state offsets");
	o->frame_previous = field(r, b->frame, 1, FRAME_SPAN, "frame offsets");
	o->frame_executable = field(r, b->frame, 2, FRAME_SPAN, "frame offsets");
	o->frame_instr_ptr = field(r, b->frame, 3, FRAME_SPAN, "frame offsets");
	o->frame_owner = field(r, b->frame, 5, FRAME_SPAN, "frame offsets");
	o->co_filename = field(r, b->code, 1, CODE_SPAN, "code object offsets");
	o->co_name = field(r, b->code, 2, CODE_SPAN, "code object offsets");
	o->co_qualname = field(r, b->code, 3, CODE_SPAN, "code object offsets");
	o->co_linetable = field(r, b->code, 4, CODE_SPAN, "code object offsets");
	o->co_firstlineno = field(r, b->code, 5, CODE_SPAN, "code object offsets");
	o->co_code_adaptive = (uint16_t)word(r, b->code + 9);
	o->str_state = field(r, b->unicode, 1, 64, "str offsets");
	o->str_length = field(r, b->unicode, 2, 64, "str offsets");
	o->str_ascii_size = (uint16_t)word(r, b->unicode + 3);
}

/* What read_fields() got must describe objects as CPython lays them out: pointers aligned */
static const char *check_fields(const struct gs_py_debug_offsets *o, uint64_t code_size)
{
	uint16_t ptrs[] = { o->frame_previous,	o->frame_executable,
			    o->frame_instr_ptr, o->co_filename,
			    o->co_name,		o->co_qualname,
			    o->co_linetable,	o->tstate_current_frame };

	for (size_t i = 0; i < sizeof(ptrs) / sizeof(ptrs[0]); i++)
		if (ptrs[i] % 8)
			return "misaligned offsets";
	if (o->frame_previous == o->frame_executable || o->frame_instr_ptr == o->frame_previous ||
	    o->co_filename == o->co_name || o->co_name == o->co_qualname)
		return "overlapping offsets";
	/* the code units follow the fixed part: as python_proc.c's tp_basicsize check */
	if (o->co_code_adaptive < 128 || o->co_code_adaptive > 512 ||
	    o->co_code_adaptive > code_size)
		return "code object offsets";
	if (o->str_length != 16 || o->str_state != 32 || o->str_ascii_size < 40 ||
	    o->str_ascii_size > 64 || o->str_ascii_size % 8)
		return "str offsets"; /* the BPF string reader assumes these (gs_python.bpf.h) */
	return NULL;
}

int gs_py_debug_offsets_parse(const void *blob, size_t len, struct gs_py_debug_offsets *out,
			      const char **why)
{
	struct reader r = { .blob = blob, .len = len };
	struct gs_py_debug_offsets o = { 0 };
	const struct blob_layout *b;
	uint64_t version;

	*why = "its debug offsets (no xdebugpy cookie)";
	if (len < GS_PY_DEBUG_BLOB || memcmp(blob, "xdebugpy", 8))
		return -EINVAL;
	version = word(&r, 1);
	o.version_hex = (uint32_t)version;
	o.minor = (int)((version >> 16) & 0xff);
	*why = "its debug offsets' version";
	if (version >> 32 || (version >> 24) != 3 || o.minor < 13)
		return -EINVAL;
	*why = "a free-threaded build";
	if (word(&r, 2) != 0)
		return -EINVAL;
	b = layout_for(o.minor, &o.layout_minor);
	read_fields(&r, b, &o);
	if (!r.why)
		r.why = check_fields(&o, word(&r, b->code));
	if (r.why) {
		*why = r.why;
		return -EINVAL;
	}
	*why = NULL;
	*out = o;
	return 0;
}
