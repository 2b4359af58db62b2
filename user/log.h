/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* log.h: leveled diagnostics on stderr; stdout is for data only. */
#ifndef GS_LOG_H
#define GS_LOG_H

#include <stdbool.h>

enum gs_log_level { GS_LOG_ERR, GS_LOG_WARN, GS_LOG_INFO, GS_LOG_DEBUG, GS_LOG_LIBBPF };

void gs_log_set_level(enum gs_log_level level);
bool gs_log_enabled(enum gs_log_level level);
void gs_log(enum gs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The level is tested before the arguments are evaluated, at every level: a message nobody
 * will see costs no formatting and no call its arguments make.
 */
#define GS_LOG_AT(level, ...)                       \
	do {                                        \
		if (gs_log_enabled(level))          \
			gs_log(level, __VA_ARGS__); \
	} while (0)
#define gs_err(...)  GS_LOG_AT(GS_LOG_ERR, __VA_ARGS__)
#define gs_warn(...) GS_LOG_AT(GS_LOG_WARN, __VA_ARGS__)
#define gs_info(...) GS_LOG_AT(GS_LOG_INFO, __VA_ARGS__)
#define gs_dbg(...)  GS_LOG_AT(GS_LOG_DEBUG, __VA_ARGS__)

#endif /* GS_LOG_H */
