// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* status_line.c: the terminal status line, erased around each log message and redrawn. */
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>
#include "user/status_line.h"
#include "user/text_escape.h"

/* "\r" back to column 0, then erase to the end of the line (VT100 EL, every terminal) */
#define ERASE_LINE "\r\033[K"

/*
 * Process-wide like the log level beside it (user/log.c): there is one stderr, and every
 * message written to it must know whether a status line is on screen.
 */
static char line[256];
static bool shown;

void gs_status_line__show(const char *fmt, ...)
{
	va_list ap;

	if (!isatty(STDERR_FILENO))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	shown = true;
	gs_status_line__hide();
	gs_status_line__redraw();
}

void gs_status_line__clear(void)
{
	gs_status_line__hide();
	shown = false;
}

void gs_status_line__hide(void)
{
	if (shown)
		fputs(ERASE_LINE, stderr);
}

void gs_status_line__redraw(void)
{
	if (!shown)
		return;
	/* the text may name what processes chose (comms): no raw escapes reach the terminal */
	gs_text_write(stderr, line);
	fflush(stderr);
}
