// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* chrome_trace.c: {"traceEvents":[...],"displayTimeUnit":"ns","metadata":{...}} streamed. */
#include <inttypes.h>
#include <string.h>
#include "stitch/chrome_trace.h"

enum { IN_EVENTS, AT_TOP, IN_METADATA, FINISHED };

void gs_chrome_trace_format_us(uint64_t ns, char *buf, size_t len)
{
	char text[32];
	size_t i = sizeof(text), n;
	uint64_t us = ns / 1000;

	/* integer arithmetic: a double loses nanoseconds on an uptime of days; and no snprintf,
	 * which was a thirtieth of record's time (twice an event: ts and dur) */
	text[--i] = '\0';
	for (unsigned int frac = (unsigned int)(ns % 1000), d = 0; d < 3; d++, frac /= 10)
		text[--i] = (char)('0' + frac % 10);
	text[--i] = '.';
	do
		text[--i] = (char)('0' + us % 10);
	while (us /= 10);
	n = sizeof(text) - i;
	if (!len)
		return;
	if (n > len) { /* as snprintf: cut, terminated */
		memcpy(buf, text + i, len - 1);
		buf[len - 1] = '\0';
		return;
	}
	memcpy(buf, text + i, n);
}

void gs_chrome_trace__begin(struct gs_chrome_trace *t, FILE *f)
{
	gs_json__init(&t->json, f);
	t->nr_events = 0;
	t->state = IN_EVENTS;
	gs_json__begin_object(&t->json, NULL);
	gs_json__string(&t->json, "displayTimeUnit", "ns");
	gs_json__begin_array(&t->json, "traceEvents");
}

struct gs_json *gs_chrome_trace__event(struct gs_chrome_trace *t, const char *ph, const char *name,
				       const char *cat, int64_t pid, int64_t tid, uint64_t ts_ns)
{
	struct gs_json *j = &t->json;
	char ts[32];

	if (!j->tape) /* one event per line: greppable, and diffs stay readable */
		putc_unlocked('\n', j->f);
	gs_json__begin_object(j, NULL);
	gs_json__string(j, "ph", ph);
	gs_json__string(j, "name", name);
	if (cat)
		gs_json__string(j, "cat", cat);
	gs_json__i64(j, "pid", pid);
	gs_json__i64(j, "tid", tid);
	gs_chrome_trace_format_us(ts_ns, ts, sizeof(ts));
	gs_json__raw(j, "ts", ts);
	/*
	 * An instant lasts nothing, and says so: Holistic Trace Analysis 0.5 keeps only rows
	 * with a "dur", and a trace without one (CPU samples only) fails to load (KeyError).
	 */
	if (ph[0] == 'i' && !ph[1])
		gs_json__raw(j, "dur", "0");
	return j;
}

void gs_chrome_trace__end_event(struct gs_chrome_trace *t)
{
	gs_json__end_object(&t->json);
	t->nr_events++;
}

void gs_chrome_trace__raw_event(struct gs_chrome_trace *t, const char *json, size_t len)
{
	struct gs_json *j = &t->json;

	fputc('\n', j->f);
	if (j->has_items[j->depth])
		fputc(',', j->f);
	j->has_items[j->depth] = true;
	fwrite(json, 1, len, j->f);
	t->nr_events++;
}

static void metadata_event(struct gs_chrome_trace *t, const char *what, int64_t pid, int64_t tid,
			   const char *name)
{
	struct gs_json *j = gs_chrome_trace__event(t, "M", what, NULL, pid, tid, 0);

	gs_json__begin_object(j, "args");
	gs_json__string(j, "name", name);
	gs_json__end_object(j);
	gs_chrome_trace__end_event(t);
}

void gs_chrome_trace__process_name(struct gs_chrome_trace *t, int64_t pid, const char *name)
{
	metadata_event(t, "process_name", pid, 0, name);
}

void gs_chrome_trace__thread_name(struct gs_chrome_trace *t, int64_t pid, int64_t tid,
				  const char *name)
{
	metadata_event(t, "thread_name", pid, tid, name);
}

void gs_chrome_trace__counter(struct gs_chrome_trace *t, int64_t pid, const char *name,
			      uint64_t ts_ns, const char *series, uint64_t value)
{
	/*
	 * A sample of a counter lasts nothing either, and has a category: Holistic Trace
	 * Analysis 0.5 keeps only rows with both, and a trace of counters alone (PyTorch's
	 * memory on a CPU-only build) was one it could not load (KeyError: 'dur').
	 */
	struct gs_json *j = gs_chrome_trace__event(t, "C", name, "counter", pid, 0, ts_ns);

	gs_json__raw(j, "dur", "0");
	gs_json__begin_object(j, "args");
	gs_json__u64(j, series, value);
	gs_json__end_object(j);
	gs_chrome_trace__end_event(t);
}

struct gs_json *gs_chrome_trace__top_level(struct gs_chrome_trace *t)
{
	if (t->state == IN_EVENTS) {
		fputc('\n', t->json.f);
		gs_json__end_array(&t->json);
		t->state = AT_TOP;
	}
	return &t->json;
}

struct gs_json *gs_chrome_trace__metadata(struct gs_chrome_trace *t)
{
	if (t->state == IN_EVENTS)
		gs_chrome_trace__top_level(t);
	if (t->state == AT_TOP) {
		gs_json__begin_object(&t->json, "metadata");
		t->state = IN_METADATA;
	}
	return &t->json;
}

void gs_chrome_trace__finish(struct gs_chrome_trace *t)
{
	if (t->state == FINISHED)
		return;
	if (t->state == IN_EVENTS) {
		fputc('\n', t->json.f);
		gs_json__end_array(&t->json);
	} else if (t->state == IN_METADATA) {
		gs_json__end_object(&t->json);
	}
	gs_json__end_object(&t->json);
	fputc('\n', t->json.f);
	t->state = FINISHED;
}
