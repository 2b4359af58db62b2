/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* cupti_clock.h: CUPTI's timestamps onto the trace's CLOCK_MONOTONIC, and how well. */
#ifndef GS_CUPTI_CLOCK_H
#define GS_CUPTI_CLOCK_H

#include <stdint.h>

/*
 * The injection library registers a timestamp callback returning CLOCK_MONOTONIC, except
 * with the CUPTIs whose kernel records then carry no timestamps (CUDA 12.6 Update 2 to 13.0):
 * there CUPTI keeps its own clock, CLOCK_REALTIME on Linux, and its times are shifted by the
 * recording's monotonic_to_realtime_ns (the two clocks are slewed alike; only a step of the
 * wall clock moves them apart, which the checks would show). Which one a time is in shows in
 * the time itself: CLOCK_REALTIME is decades past any CLOCK_MONOTONIC.
 */
struct gs_cupti_clock {
	int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC at the recording's start */
	uint64_t monotonic, realtime;  /* records in each clock */
	uint64_t checks, max_error_ns; /* clock checks of the library, the worst they showed */
};

void gs_cupti_clock__init(struct gs_cupti_clock *c, int64_t monotonic_to_realtime_ns);
/* A record's start and end (end >= start, as decoded) onto CLOCK_MONOTONIC, in place. */
void gs_cupti_clock__map(struct gs_cupti_clock *c, uint64_t *start_ns, uint64_t *end_ns);
/* One check: CUPTI's clock read between two readings of CLOCK_MONOTONIC. */
void gs_cupti_clock__check(struct gs_cupti_clock *c, uint64_t mono_before, uint64_t cupti_ns,
			   uint64_t mono_after);
/* The trace metadata's clock.method: the mapping its records had. */
const char *gs_cupti_clock__method(const struct gs_cupti_clock *c);

#endif /* GS_CUPTI_CLOCK_H */
