// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cupti_clock.c: CUPTI's timestamps onto CLOCK_MONOTONIC: as they are, or CLOCK_REALTIME's shifted. */
#include "profilers/cuda/cupti_clock.h"

void gs_cupti_clock__init(struct gs_cupti_clock *c, int64_t monotonic_to_realtime_ns)
{
	*c = (struct gs_cupti_clock){ .realtime_offset_ns = monotonic_to_realtime_ns };
}

/*
 * A CLOCK_REALTIME time: at least the offset (CLOCK_MONOTONIC is never negative), which no
 * CLOCK_MONOTONIC time comes near; so the shift cannot wrap.
 */
static int is_realtime(const struct gs_cupti_clock *c, uint64_t t)
{
	return c->realtime_offset_ns > 0 && t >= (uint64_t)c->realtime_offset_ns;
}

static uint64_t shifted(const struct gs_cupti_clock *c, uint64_t t)
{
	return t - (uint64_t)c->realtime_offset_ns;
}

void gs_cupti_clock__map(struct gs_cupti_clock *c, uint64_t *start_ns, uint64_t *end_ns)
{
	if (!is_realtime(c, *start_ns)) {
		c->monotonic++;
		return;
	}
	c->realtime++;
	*start_ns = shifted(c, *start_ns);
	*end_ns = shifted(c, *end_ns); /* decoded records end no earlier than they start */
}

void gs_cupti_clock__check(struct gs_cupti_clock *c, uint64_t mono_before, uint64_t cupti_ns,
			   uint64_t mono_after)
{
	uint64_t mid, at, err;

	if (mono_after < mono_before)
		return;
	mid = mono_before + (mono_after - mono_before) / 2;
	at = is_realtime(c, cupti_ns) ? shifted(c, cupti_ns) : cupti_ns;
	err = (at > mid ? at - mid : mid - at) + (mono_after - mono_before) / 2;
	c->checks++;
	if (err > c->max_error_ns)
		c->max_error_ns = err;
}

const char *gs_cupti_clock__method(const struct gs_cupti_clock *c)
{
	if (c->realtime && c->monotonic) /* processes with different CUPTIs */
		return "cupti_timestamp_callback_clock_monotonic+cupti_clock_realtime_shifted";
	if (c->realtime)
		return "cupti_clock_realtime_shifted";
	return "cupti_timestamp_callback_clock_monotonic";
}
