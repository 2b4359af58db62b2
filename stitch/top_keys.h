/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* top_keys.h: Kineto's top-level "distributedInfo" and "deviceProperties" kept through stitch. */
#ifndef GS_TOP_KEYS_H
#define GS_TOP_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "user/json.h"

/*
 * Holistic Trace Analysis finds a trace's rank by searching its text for "rank": N (a space
 * after the colon) and reads the devices from "deviceProperties". A stitched trace keeps the
 * first input's distributedInfo (written with a space after each key's colon) and the union
 * of the inputs' deviceProperties, one entry per device "id" (the first input's entry wins;
 * entries without an integer id are all kept).
 */
struct gs_top_keys {
	char *dist; /* the distributedInfo value, spaced; NULL when none yet */
	char *devs; /* the array's elements, comma-separated; NULL when none */
	size_t devs_len;
	int64_t *ids; /* device ids in devs */
	size_t nr_ids;
	bool has_devices; /* some input had a deviceProperties array, maybe empty */
};

/* Offers one input's top-level value (compact JSON, as trace_parse hands it). 0 or -ENOMEM. */
int gs_top_keys__add(struct gs_top_keys *k, const char *key, const char *json, size_t len);
/* Writes the keys kept, if any, at the document's top level. */
void gs_top_keys__write(const struct gs_top_keys *k, struct gs_json *j);
void gs_top_keys__free(struct gs_top_keys *k);

#endif /* GS_TOP_KEYS_H */
