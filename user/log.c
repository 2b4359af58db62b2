// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* log.c: leveled diagnostics on stderr, prefixed with the program name. */
#include <stdarg.h>
#include <stdio.h>
#include "user/log.h"

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
	va_list ap;

	if (!gs_log_enabled(level))
		return;
	fprintf(stderr, "gpusnoop: %s", prefix[level]);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
