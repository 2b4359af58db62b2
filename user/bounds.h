/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* bounds.h: overflow-safe checks for offset/size pairs read from files another user controls. */
#ifndef GS_BOUNDS_H
#define GS_BOUNDS_H

#include <stdbool.h>
#include <stdint.h>

/*
 * Whether [off, off + size) lies within [0, len). Written so that nothing wraps: the sum
 * off + size of two values from a hostile file can overflow to a small number and pass
 * the naive `off + size <= len`.
 */
static inline bool gs_range_ok(uint64_t off, uint64_t size, uint64_t len)
{
	return size <= len && off <= len - size;
}

/* Whether x lies in [start, start + size), without computing start + size. */
static inline bool gs_in_range(uint64_t x, uint64_t start, uint64_t size)
{
	return x >= start && x - start < size;
}

#endif /* GS_BOUNDS_H */
