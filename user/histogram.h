/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* histogram.h: fixed-size log-linear histogram of durations, for percentiles in bounded memory. */
#ifndef GS_HISTOGRAM_H
#define GS_HISTOGRAM_H

#include <stdint.h>

#define GS_HIST_SUB_BITS 4 /* 16 linear steps per power of two: <= 6.25% error */
#define GS_HIST_BUCKETS	 (64 << GS_HIST_SUB_BITS)

struct gs_histogram {
	uint64_t count, sum, min, max;
	uint32_t buckets[GS_HIST_BUCKETS];
};

void gs_histogram__init(struct gs_histogram *h);
void gs_histogram__add(struct gs_histogram *h, uint64_t value);
/* The value below which a fraction q (0..1] of the samples fall; 0 when empty. Exact for
 * min and max, within one bucket (6.25%) elsewhere. */
uint64_t gs_histogram__quantile(const struct gs_histogram *h, double q);

#endif /* GS_HISTOGRAM_H */
