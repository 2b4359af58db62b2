// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_merge.c: Python frames put where the eval loops that ran them are on the native stack. */
#include <stdbool.h>
#include "user/python_merge.h"

static bool in_eval(const struct gs_py_eval_ranges *eval, __u64 addr)
{
	for (int i = 0; i < 2; i++)
		if (addr >= eval->start[i] && addr < eval->end[i])
			return true;
	return false;
}

/* Python frames from *p to the end of their evaluation run, appended to out[*o..max) */
static void emit_run(const struct gs_py_frame *py, const __u64 *named, size_t nr_py, size_t *p,
		     __u64 *out, size_t *o, size_t max)
{
	bool end = false;

	while (*p < nr_py && !end) {
		end = py[*p].flags & GS_PY_F_RUN_END;
		if (named[*p] && *o < max)
			out[(*o)++] = named[*p];
		(*p)++;
	}
}

size_t gs_py_merge(const __u64 *native, size_t nr, const struct gs_py_frame *py, const __u64 *named,
		   size_t nr_py, const struct gs_py_eval_ranges *eval, __u64 marker, __u64 *out,
		   size_t max)
{
	size_t o = 0, p = 0;

	for (size_t i = 0; i < nr && o < max; i++) {
		/* a return address may be one past the call, the eval loop's last byte */
		__u64 at = i ? native[i] - 1 : native[i];

		if (p < nr_py && in_eval(eval, at))
			emit_run(py, named, nr_py, &p, out, &o, max);
		else
			out[o++] = native[i];
	}
	if (p < nr_py && o < max) {
		if (marker)
			out[o++] = marker;
		while (p < nr_py)
			emit_run(py, named, nr_py, &p, out, &o, max);
	}
	return o;
}
