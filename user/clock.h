/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* clock.h: nanoseconds of a clock; CLOCK_MONOTONIC is the one bpf_ktime_get_ns() reads. */
#ifndef GS_CLOCK_H
#define GS_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t gs_clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#endif /* GS_CLOCK_H */
