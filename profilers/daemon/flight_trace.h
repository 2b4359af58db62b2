/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* flight_trace.h: a process's flight-recorder window as a Chrome/Perfetto trace. */
#ifndef GS_FLIGHT_TRACE_H
#define GS_FLIGHT_TRACE_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct gs_flight_recorder;
struct gs_leak_trigger;
struct gs_stack_table;

/*
 * Writes the events pid had in the window ending at now_ns: one slice per call on its
 * thread (API, bytes, pointer, error, stack) and the process's outstanding CUDA memory as a
 * counter, ending at outstanding_now. Returns 0 or -errno of the stream.
 */
int gs_flight_trace__write(FILE *f, const struct gs_flight_recorder *fr, pid_t pid,
			   const char *comm, uint64_t now_ns, uint64_t outstanding_now,
			   const struct gs_stack_table *stacks, const struct gs_leak_trigger *t);

#endif /* GS_FLIGHT_TRACE_H */
