// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* array.c: doubling growth with overflow-checked sizes. */
#include <stdint.h>
#include <stdlib.h>
#include "user/array.h"

void *gs_array_reserve(void *items, size_t *cap, size_t nr, size_t size, size_t min_cap)
{
	size_t new_cap;
	void *grown;

	if (nr < *cap)
		return items;
	new_cap = *cap ? *cap * 2 : (min_cap ? min_cap : 1);
	if (new_cap <= nr || (*cap && new_cap / 2 != *cap) || !size || new_cap > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	grown = realloc(items, new_cap * size);
	if (!grown) {
		errno = ENOMEM;
		return NULL;
	}
	*cap = new_cap;
	return grown;
}
