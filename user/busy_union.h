/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* busy_union.h: the union of a stream of intervals, online, in fixed memory, with its error. */
#ifndef GS_BUSY_UNION_H
#define GS_BUSY_UNION_H

#include <stddef.h>
#include <stdint.h>

/* disjoint pieces kept; past this, the two pieces with the smallest gap become one */
#define GS_BUSY_PIECES 128

struct gs_busy_piece {
	uint64_t start, end;
};

/*
 * The total length covered by [start, end) intervals added in any order. Exact while the
 * union has at most GS_BUSY_PIECES disjoint pieces; beyond, the smallest gap between two
 * pieces is counted as covered, and its length added to err_ns: the true union then lies in
 * [busy - err_ns, busy]. Memory stays sizeof(struct gs_busy_union) whatever the count.
 * Zero-initialise before use; no free needed.
 */
struct gs_busy_union {
	struct gs_busy_piece pieces[GS_BUSY_PIECES + 1]; /* sorted by start, disjoint */
	size_t nr;
	uint64_t err_ns;      /* the gaps counted as covered so far */
	uint64_t first, last; /* the first start and last end seen */
	uint64_t count;	      /* intervals added */
};

void gs_busy_union__add(struct gs_busy_union *u, uint64_t start, uint64_t end);
/* The covered length as kept: at most err_ns more than the true union. */
uint64_t gs_busy_union__busy(const struct gs_busy_union *u);

#endif /* GS_BUSY_UNION_H */
