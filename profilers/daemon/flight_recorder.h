/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* flight_recorder.h: per process, the last seconds of CUDA memory events before a trigger. */
#ifndef GS_FLIGHT_RECORDER_H
#define GS_FLIGHT_RECORDER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum gs_flight_kind {
	GS_FLIGHT_ALLOC,  /* a successful allocation */
	GS_FLIGHT_FAILED, /* an allocation call that returned an error */
	GS_FLIGHT_FREE,
};

struct gs_flight_event {
	uint64_t ts_ns;	      /* allocations: return; frees: entry (CLOCK_MONOTONIC) */
	uint64_t entry_ts_ns; /* allocations: entry; frees: ts_ns */
	uint64_t ptr;
	uint64_t size; /* frees: the size of what was freed, 0 when unknown */
	uint32_t tid;
	uint32_t stack_id; /* allocations: the caller's stack in the session's stack table */
	int32_t ret;
	uint16_t api;
	uint8_t kind; /* enum gs_flight_kind */
};

struct gs_flight_recorder;

/*
 * Keeps, per process, the events of the last window_ns, at most max_events of them (the
 * oldest go first). NULL with errno set; the caller frees with gs_flight_recorder__free().
 */
struct gs_flight_recorder *gs_flight_recorder__new(uint64_t window_ns, size_t max_events);
/* Appends e (its ts_ns no older than the process's last). Returns 0 or -ENOMEM. */
int gs_flight_recorder__add(struct gs_flight_recorder *fr, pid_t pid,
			    const struct gs_flight_event *e);
/* Calls fn for each event of pid in the window ending at now_ns, oldest first. */
void gs_flight_recorder__each(const struct gs_flight_recorder *fr, pid_t pid, uint64_t now_ns,
			      void (*fn)(void *ctx, const struct gs_flight_event *e), void *ctx);
/* Drops what pid had (it exited). */
void gs_flight_recorder__forget(struct gs_flight_recorder *fr, pid_t pid);
void gs_flight_recorder__free(struct gs_flight_recorder *fr);

#endif /* GS_FLIGHT_RECORDER_H */
