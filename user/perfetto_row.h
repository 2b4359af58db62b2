/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* perfetto_row.h: one JSON row parsed into yajl_val nodes in a reused arena (no malloc per row). */
#ifndef GS_PERFETTO_ROW_H
#define GS_PERFETTO_ROW_H

#include <stddef.h>
#include <yajl/yajl_tree.h>

/*
 * yajl_tree_parse() allocates every node and was most of the Perfetto encoder's time. Here
 * yajl's event parser fills nodes laid out in one arena, sized from the row's length before
 * parsing (a value takes at least one byte of text), so a row costs no allocation once the
 * arena has grown to the longest row. Integers have no double: u.number.d is set only
 * for numbers that are not integers (and u.number.r always).
 */
struct gs_row_parser;

/* Caller frees with gs_row_parser__free(). NULL with errno set. */
struct gs_row_parser *gs_row_parser__new(void);
void gs_row_parser__free(struct gs_row_parser *p);
/* The tree of one JSON value, valid until the next call; NULL when malformed or no memory. */
yajl_val gs_row_parser__parse(struct gs_row_parser *p, const char *text, size_t len);
/*
 * The same tree from a tape (user/json_tape.h: typed tokens, no text to parse but raw JSON
 * values'); its strings point into tape, so the tree is valid while tape is too.
 */
yajl_val gs_row_parser__tape(struct gs_row_parser *p, const char *tape, size_t len);

#endif /* GS_PERFETTO_ROW_H */
