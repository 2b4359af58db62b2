// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* histogram.c: bucket = (exponent, top GS_HIST_SUB_BITS bits of the mantissa). */
#include <string.h>
#include "user/histogram.h"

#define SUB (1u << GS_HIST_SUB_BITS)

void gs_histogram__init(struct gs_histogram *h)
{
	memset(h, 0, sizeof(*h));
}

static unsigned int bucket_of(uint64_t v)
{
	unsigned int exp;

	if (v < SUB)
		return (unsigned int)v;
	exp = 63 - (unsigned int)__builtin_clzll(v); /* >= GS_HIST_SUB_BITS */
	return ((exp - GS_HIST_SUB_BITS + 1) << GS_HIST_SUB_BITS) |
	       (unsigned int)((v >> (exp - GS_HIST_SUB_BITS)) & (SUB - 1));
}

/* the largest value that falls into bucket b */
static uint64_t bucket_top(unsigned int b)
{
	unsigned int exp, sub = b & (SUB - 1);

	if (b < SUB)
		return b;
	exp = (b >> GS_HIST_SUB_BITS) + GS_HIST_SUB_BITS - 1;
	return ((uint64_t)(SUB | sub) << (exp - GS_HIST_SUB_BITS)) +
	       ((1ULL << (exp - GS_HIST_SUB_BITS)) - 1);
}

void gs_histogram__add(struct gs_histogram *h, uint64_t value)
{
	if (!h->count || value < h->min)
		h->min = value;
	if (value > h->max)
		h->max = value;
	h->count++;
	h->sum += value;
	h->buckets[bucket_of(value)]++;
}

uint64_t gs_histogram__quantile(const struct gs_histogram *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	rank = (uint64_t)(q * (double)h->count + 0.999999);
	if (rank < 1)
		rank = 1;
	for (unsigned int b = 0; b < GS_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank) {
			uint64_t top = bucket_top(b);

			return top > h->max ? h->max : top < h->min ? h->min : top;
		}
	}
	return h->max;
}
