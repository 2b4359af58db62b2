// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_python_lines.c: libFuzzer harness for CPython line tables (user/python_lines.c). */
#include "tests/fuzz/fuzz.h"
#include "user/python_lines.h"

/* Bounds any table of len bytes keeps to, whatever its bytes (a process's code object). */
static void check(enum gs_py_line_format fmt, const uint8_t *tab, size_t len, int first,
		  int64_t addr, int line)
{
	int64_t drift = (int64_t)line - first, most = 128 * (int64_t)(len / 2 + 1);

	switch (fmt) {
	case GS_PY_LINES_LNOTAB: /* signed byte deltas, one per pair */
		GS_FUZZ_CHECK(drift >= -most && drift <= most);
		break;
	case GS_PY_LINES_LINETABLE: /* the same, and a pair covers at most 255 bytes */
		GS_FUZZ_CHECK(line == -1 || (drift >= -most && drift <= most));
		GS_FUZZ_CHECK(addr < 128 * (int64_t)len || line == -1 || addr < 0);
		break;
	case GS_PY_LINES_LOCATIONS: /* an entry takes a byte at least, covers 16 at most */
		GS_FUZZ_CHECK(addr < 16 * (int64_t)len || line == -1 || addr < 0);
		break;
	}
}

/* The first byte picks the format, the next four the first line, the rest is the table. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum gs_py_line_format fmt;
	int32_t first;
	size_t len;

	if (size < 5)
		return 0;
	fmt = (enum gs_py_line_format)(data[0] % 3 + GS_PY_LINES_LNOTAB);
	memcpy(&first, data + 1, sizeof(first));
	first %= 1 << 24; /* CPython's first lines are small ints; deltas are added to them */
	len = size - 5;
	for (int64_t addr = -2; addr <= (int64_t)len * 16 + 2; addr += 2)
		check(fmt, data + 5, len, first, addr,
		      gs_py_addr2line(fmt, data + 5, len, first, addr));
	return 0;
}
