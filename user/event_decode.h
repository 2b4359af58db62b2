/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* event_decode.h: validation of ring-buffer records before any field is trusted. */
#ifndef GS_EVENT_DECODE_H
#define GS_EVENT_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

/*
 * Checks a record of size bytes from the ring buffer: a whole header, a hdr.size that fits
 * in the record, and at least the fixed part of its type (for allocations, also the frames
 * it claims). Returns its type, or -EINVAL for a malformed record and -ENOENT for a type
 * this build does not know.
 */
int gs_event_decode(const void *data, size_t size);

/*
 * For a record type with a native stack (__u64 frames[] after a __u16 nr_frames): where
 * both are. False for any other type.
 */
bool gs_event_frames_layout(int type, size_t *frames_off, size_t *nr_off);

/*
 * The name every report and trace gives a loss counter (enum gs_stat), e.g. "ringbuf_full";
 * NULL for the counters one profiler reports on its own (CPU sampling).
 */
const char *gs_stat_name(int stat);

#endif /* GS_EVENT_DECODE_H */
