/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* array.h: the one growable array: room for one more element, capacity doubling. */
#ifndef GS_ARRAY_H
#define GS_ARRAY_H

#include <errno.h>
#include <stddef.h>

/*
 * Room for element nr in items (cap allocated, size bytes each): items itself when it has
 * room, else a block of twice the capacity (min_cap the first time) holding the same
 * elements, with *cap updated. NULL with errno ENOMEM on failure or overflow, items and
 * *cap then unchanged (still owned by the caller).
 */
void *gs_array_reserve(void *items, size_t *cap, size_t nr, size_t size, size_t min_cap);

/*
 * GS_ARRAY_RESERVE(t->files, t->nr_files, t->cap_files, 16): 0 once t->files has room for
 * t->files[t->nr_files], or -ENOMEM with the array as it was.
 */
#define GS_ARRAY_RESERVE(items, nr, cap, min_cap)                                             \
	({                                                                                    \
		void *grown_ =                                                                \
			gs_array_reserve((items), &(cap), (nr), sizeof(*(items)), (min_cap)); \
		if (grown_)                                                                   \
			(items) = grown_;                                                     \
		grown_ ? 0 : -ENOMEM;                                                         \
	})

#endif /* GS_ARRAY_H */
