// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* sym_search.c: upper bound by address in a sorted table of any entry layout. */
#include <string.h>
#include "user/sym_search.h"

size_t gs_sym_search(const void *base, size_t nr, size_t size, size_t addr_off, uint64_t addr)
{
	const char *p = base;
	size_t lo = 0, hi = nr;

	/* the first entry whose address is > addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t at;

		memcpy(&at, p + mid * size + addr_off, sizeof(at));
		if (at <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
