/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* top_view.h: what `gpusnoop top` draws: the table, the detail pane, and --batch lines. */
#ifndef GS_TOP_VIEW_H
#define GS_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "profilers/top_model.h"

struct gs_mem_model;
struct gs_stack_table;

/*
 * A frame being built: lines cut to the screen's width and height (full), or plain lines
 * (batch). Text handed to it must already be safe for a terminal (gs_text_safe()).
 */
struct gs_top_screen {
	char *buf;
	size_t len, cap;
	int rows, cols;
	int line; /* lines written */
	bool full;
	bool failed; /* out of memory: the frame is incomplete, not drawn */
};

/* Empties s for a new frame of rows x cols (full screen), or of plain lines. */
void gs_top_screen__begin(struct gs_top_screen *s, int rows, int cols, bool full);
/* One line (printf-style); inverse: in reverse video (full screen only). */
void gs_top_screen__line(struct gs_top_screen *s, bool inverse, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Ends the frame (full screen: erases what is below its last line). */
void gs_top_screen__end(struct gs_top_screen *s);
void gs_top_screen__release(struct gs_top_screen *s);

/* What the view shows besides the model: its settings and the session's figures. */
struct gs_top_view {
	enum gs_top_sort sort;
	bool reverse;
	size_t selected;   /* the table's highlighted row */
	pid_t detail;	   /* the process the detail pane shows; 0: the table */
	double interval_s; /* -d */
	uint64_t lost;	   /* events lost in the kernel, ever */
	uint64_t iteration;
	const char *message; /* the last log line, NULL or "" for none */
};

/* "8.0M": bytes for a narrow column (at most 7 characters up to 9999 TiB). */
void gs_top_format_bytes(uint64_t bytes, char *buf, size_t len);
/* The full-screen table of m's rows, sorted as v says (v->selected is clamped to them). */
void gs_top_view__table(struct gs_top_screen *s, const struct gs_top_model *m,
			struct gs_top_view *v);
/*
 * --batch: one iteration's lines, the header and one line per row, raw numbers, comm's and
 * names' spaces and control bytes as \xNN, so that each line splits on blanks into columns.
 */
void gs_top_view__batch(struct gs_top_screen *s, const struct gs_top_model *m,
			const struct gs_top_view *v);
/* The detail pane of v->detail: its figures, its largest allocation stacks, its kernels. */
void gs_top_view__detail(struct gs_top_screen *s, const struct gs_top_model *m,
			 const struct gs_top_view *v, struct gs_mem_model *mem,
			 const struct gs_stack_table *stacks, uint64_t now_ns);

#endif /* GS_TOP_VIEW_H */
