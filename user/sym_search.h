/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* sym_search.h: the one binary search over symbol tables sorted by address. */
#ifndef GS_SYM_SEARCH_H
#define GS_SYM_SEARCH_H

#include <stddef.h>
#include <stdint.h>

/*
 * In a table of nr entries of size bytes, sorted by the uint64_t at offset addr_off of each,
 * the number of entries whose address is <= addr: the last of them is at the result minus
 * one, and 0 means addr is below them all. O(log nr); base may be NULL when nr is 0.
 */
size_t gs_sym_search(const void *base, size_t nr, size_t size, size_t addr_off, uint64_t addr);

/* The same for an array of structs whose uint64_t field holds the address. */
#define GS_SYM_SEARCH(table, nr, field, addr)                                                 \
	({                                                                                    \
		_Static_assert(sizeof((table)->field) == sizeof(uint64_t), #field " is u64"); \
		gs_sym_search((table), (nr), sizeof(*(table)),                                \
			      offsetof(__typeof__(*(table)), field), (addr));                 \
	})

#endif /* GS_SYM_SEARCH_H */
