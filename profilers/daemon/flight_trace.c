// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* flight_trace.c: the daemon's flight-recorder window written as a timeline. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "profilers/cuda/api.h"
#include "profilers/daemon/flight_recorder.h"
#include "profilers/daemon/flight_trace.h"
#include "profilers/leak_report.h"
#include "profilers/timeline/vocab.h"
#include "stitch/chrome_trace.h"
#include "user/clock.h"
#include "user/proc_info.h"
#include "user/stack_table.h"

struct writer {
	struct gs_chrome_trace trace;
	const struct gs_stack_table *stacks;
	pid_t pid;
	int64_t net; /* first pass: bytes the window added; second: running total */
	uint64_t events;
	uint32_t tids[64]; /* threads already named */
	size_t nr_tids;
};

/* what an event did to the device memory counter: pinned host memory is not the GPU's */
static int64_t delta(const struct gs_flight_event *e)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);

	if (api && api->mem_kind == GS_MEM_HOST)
		return 0;
	if (e->kind == GS_FLIGHT_ALLOC)
		return (int64_t)e->size;
	if (e->kind == GS_FLIGHT_FREE)
		return -(int64_t)e->size;
	return 0;
}

static void sum_deltas(void *ctx, const struct gs_flight_event *e)
{
	struct writer *w = ctx;

	w->net += delta(e);
}

static void name_thread(struct writer *w, uint32_t tid)
{
	char comm[32];

	for (size_t i = 0; i < w->nr_tids; i++)
		if (w->tids[i] == tid)
			return;
	if (w->nr_tids < sizeof(w->tids) / sizeof(w->tids[0]))
		w->tids[w->nr_tids++] = tid;
	gs_read_comm(w->pid, (pid_t)tid, comm, sizeof(comm));
	gs_chrome_trace__thread_name(&w->trace, w->pid, tid, comm);
}

static void write_event(void *ctx, const struct gs_flight_event *e)
{
	struct writer *w = ctx;
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);
	struct gs_json *j;
	char buf[1024];

	name_thread(w, e->tid);
	/* record's categories: the same call is the same row in either trace */
	j = gs_chrome_trace__event(&w->trace, "X", gs_cuda_api_name(e->api),
				   api && api->lib == GS_LIB_DRIVER ? GS_TL_CAT_CUDA_DRIVER
								    : GS_TL_CAT_CUDA_RUNTIME,
				   w->pid, e->tid, e->entry_ts_ns);
	gs_chrome_trace_format_us(e->ts_ns - e->entry_ts_ns, buf, sizeof(buf));
	gs_json__raw(j, "dur", buf);
	gs_json__begin_object(j, "args");
	gs_json__u64(j, "bytes", e->size);
	snprintf(buf, sizeof(buf), "0x%" PRIx64, e->ptr);
	gs_json__string(j, "ptr", buf);
	if (e->ret) {
		gs_json__i64(j, "error", e->ret);
		gs_json__string(j, "error_name",
				gs_cuda_error_name(api ? api->lib : GS_LIB_RUNTIME, e->ret));
	}
	if (e->kind != GS_FLIGHT_FREE) {
		const struct gs_stack *s = gs_stack_table__get(w->stacks, e->stack_id);

		gs_json__begin_array(j, "stack");
		for (uint32_t i = 0; s && i < s->nr_frames; i++) {
			gs_frame_format(&s->frames[i], buf, sizeof(buf));
			gs_json__string(j, NULL, buf);
		}
		gs_json__end_array(j);
	}
	gs_json__end_object(j);
	gs_chrome_trace__end_event(&w->trace);
	if (delta(e)) {
		w->net += delta(e);
		gs_chrome_trace__counter(&w->trace, w->pid, GS_TL_COUNTER_MEMORY, e->ts_ns, "bytes",
					 (uint64_t)w->net);
	}
	w->events++;
}

int gs_flight_trace__write(FILE *f, const struct gs_flight_recorder *fr, pid_t pid,
			   const char *comm, uint64_t now_ns, uint64_t outstanding_now,
			   const struct gs_stack_table *stacks, const struct gs_leak_trigger *t)
{
	struct writer w = { .stacks = stacks, .pid = pid };
	uint64_t real_ns = gs_clock_ns(CLOCK_REALTIME), mono_ns = gs_clock_ns(CLOCK_MONOTONIC);
	struct gs_json *j;
	char host[256];

	/* the counter starts at what the process held when the window opened */
	gs_flight_recorder__each(fr, pid, now_ns, sum_deltas, &w);
	w.net = (int64_t)outstanding_now - w.net;
	gs_chrome_trace__begin(&w.trace, f);
	gs_chrome_trace__process_name(&w.trace, pid, comm);
	if (w.net < 0)
		w.net = 0; /* frees of memory allocated before the daemon saw the process */
	gs_flight_recorder__each(fr, pid, now_ns, write_event, &w);
	j = gs_chrome_trace__event(&w.trace, "i", t->kind, GS_TL_CAT_TRIGGER, pid, pid, now_ns);
	gs_json__string(j, "s", "p");
	gs_chrome_trace__end_event(&w.trace);
	j = gs_chrome_trace__metadata(&w.trace);
	if (gethostname(host, sizeof(host)))
		snprintf(host, sizeof(host), "?");
	host[sizeof(host) - 1] = '\0';
	gs_json__string(j, "tool", "gpusnoop daemon flight recorder");
	gs_json__string(j, "gpusnoop_version", GS_VERSION);
	gs_json__string(j, "host", host);
	gs_json__string(j, "trigger", t->kind);
	gs_json__i64(j, "pid", pid);
	gs_json__u64(j, "events", w.events);
	gs_json__u64(j, "outstanding_bytes", outstanding_now);
	gs_json__i64(j, "monotonic_to_realtime_ns", (int64_t)(real_ns - mono_ns));
	gs_chrome_trace__finish(&w.trace);
	if (fflush(f) || ferror(f))
		return -(errno ? errno : EIO);
	return 0;
}
