/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* status_line.h: one live line on a terminal's stderr that log messages make room for. */
#ifndef GS_STATUS_LINE_H
#define GS_STATUS_LINE_H

#include <stdbool.h>

/*
 * Shows text (printf-style, one line, cut at the terminal line's worth of bytes) as the
 * status line, replacing the previous one. Only when stderr is a terminal: elsewhere it
 * does nothing, and a log file gets no carriage returns.
 */
void gs_status_line__show(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Erases the status line, for good (until the next show). */
void gs_status_line__clear(void);

/* For user/log.c: erase the status line before a message, draw it again after it. */
void gs_status_line__hide(void);
void gs_status_line__redraw(void);

#endif /* GS_STATUS_LINE_H */
