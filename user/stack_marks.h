/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* stack_marks.h: frames that say what a stack lacks ([truncated: N more], [lost]). */
#ifndef GS_STACK_MARKS_H
#define GS_STACK_MARKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

/*
 * A mark travels in a stack as a stand-in address, as Python frames do (user/python_names.h):
 * its high 32 bits are 0xc0000000, which no user address (below 2^47), kernel address (the
 * top 17 bits set) or Python stand-in (bit 62 clear) has. The low 32 bits say how many
 * frames are missing, GS_STACK_MARK_MANY when at least that many.
 */
#define GS_STACK_MARK_TAG  (3ULL << 62)
#define GS_STACK_MARK_MANY 0xffffffffU

/* The stack that stands for samples whose stack the kernel could not keep. */
#define GS_STACK_MARK_LOST "[lost]"

static inline bool gs_stack_mark_is(uint64_t addr)
{
	return (addr >> 32) == (GS_STACK_MARK_TAG >> 32);
}

/* The mark for "more frames lay beyond this one", nr_more of them (0: unknown how many). */
static inline uint64_t gs_stack_mark_truncated(uint64_t nr_more)
{
	return GS_STACK_MARK_TAG | (nr_more > GS_STACK_MARK_MANY ? GS_STACK_MARK_MANY : nr_more);
}

/*
 * The text of mark addr: "[truncated: N more]", "[truncated: N+ more]" for
 * GS_STACK_MARK_MANY, "[truncated]" for an unknown count. A static string, the same one for
 * the same mark; "[truncated]" when no memory.
 */
const char *gs_stack_mark_name(uint64_t addr);

/*
 * Puts a truncation mark into stack[0..*nr) (innermost first) at index at (<= *nr): where
 * the frames went missing, the frames from at on move out by one. A full stack (*nr ==
 * max) loses its outermost frame to make room, counted as missing too. Nothing if max is 0.
 */
void gs_stack_mark_insert_truncated(__u64 *stack, size_t *nr, size_t max, size_t at,
				    uint64_t nr_more);

#endif /* GS_STACK_MARKS_H */
