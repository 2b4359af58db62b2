// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* log.c: leveled diagnostics on stderr, prefixed with the program name. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "user/log.h"
#include "user/status_line.h"
#include "user/text_escape.h"

/* The one piece of process-wide state in user/: verbosity is a property of the process. */
static enum gs_log_level current_level = GS_LOG_INFO;

void gs_log_set_level(enum gs_log_level level)
{
	current_level = level;
}

bool gs_log_enabled(enum gs_log_level level)
{
	return level <= current_level;
}

void gs_log(enum gs_log_level level, const char *fmt, ...)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: ", "libbpf: " };
	char *msg = NULL;
	va_list ap;
	int n;

	if (!gs_log_enabled(level))
		return;
	gs_status_line__hide(); /* a message on its own line, never glued to the status */
	fprintf(stderr, "gpusnoop: %s", prefix[level]);
	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	/* messages name comms, paths and symbols of other users' processes: no raw escapes */
	if (n >= 0)
		gs_text_write(stderr, msg);
	else
		fputs(fmt, stderr);
	free(msg);
	fputc('\n', stderr);
	gs_status_line__redraw();
}
