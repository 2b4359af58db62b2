// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_log.c: user/log.h for the fuzz harnesses: formats every message, prints none. */
#include <stdarg.h>
#include <stdio.h>
#include "user/log.h"

/*
 * A parser that logs each bad line would bury libFuzzer's own output, but the messages are
 * still formatted (into a buffer) so that a bad format argument is found like any other bug.
 */
void gs_log_set_level(enum gs_log_level level)
{
}

bool gs_log_enabled(enum gs_log_level level)
{
	return true;
}

void gs_log(enum gs_log_level level, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
}
