/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* units.h: sizes, durations and CPU lists, as people and the kernel write them. */
#ifndef GS_UNITS_H
#define GS_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "256.0 MiB": a size for people (binary units; bytes exactly below 1 KiB). */
void gs_format_bytes(uint64_t bytes, char *buf, size_t len);
/*
 * Parses a non-negative number of seconds ("2", "0.5") of at most GS_SECONDS_MAX; -EINVAL on
 * junk, NaN, infinities and more: callers convert to nanoseconds, which then cannot overflow.
 */
#define GS_SECONDS_MAX (365 * 86400.0)
int gs_parse_seconds(const char *s, double *out);
/* Parses "0-3,5" (the format of /sys/devices/system/cpu/online) into cpus[0..max). */
int gs_parse_cpu_list(const char *s, bool *cpus, int max);

#endif /* GS_UNITS_H */
