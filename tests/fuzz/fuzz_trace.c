// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_trace.c: libFuzzer harness for the streaming Chrome trace reader (stitch/trace_parse.c). */
#include <errno.h>
#include "stitch/trace_parse.h"
#include "tests/fuzz/fuzz.h"

struct ctx {
	uint64_t stop_at; /* the event whose callback fails, as a writer's error would */
	uint64_t events;
	unsigned int sum; /* reads every byte handed over, so ASan sees each one */
};

static void touch(struct ctx *c, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		c->sum += (unsigned char)s[i];
}

static int on_event(void *arg, const struct gs_trace_event *ev)
{
	struct ctx *c = arg;

	GS_FUZZ_CHECK(ev->index == c->events);
	c->events++;
	GS_FUZZ_CHECK(strnlen(ev->ph, sizeof(ev->ph)) < sizeof(ev->ph));
	GS_FUZZ_CHECK(ev->rest && ev->rest[ev->rest_len] == '\0');
	touch(c, ev->rest, ev->rest_len);
	/* a writer puts {"pid":P,"ts":T before rest: each field brings its own comma */
	GS_FUZZ_CHECK(!ev->rest_len || ev->rest[0] == ',');
	GS_FUZZ_CHECK(ev->args_start <= ev->args_end && ev->args_end <= ev->rest_len);
	/* what stitch cuts out to rename a process: the whole field, key and all */
	if (ev->args_end > ev->args_start)
		GS_FUZZ_CHECK(!strncmp(ev->rest + ev->args_start, ",\"args\":", 8));
	if (ev->has_ts)
		GS_FUZZ_CHECK(ev->ts_ns <= GS_TRACE_TS_MAX_NS && ev->ts_ns >= -GS_TRACE_TS_MAX_NS);
	if (ev->pid_is_str) {
		GS_FUZZ_CHECK(ev->has_pid && ev->pid_str);
		touch(c, ev->pid_str, strlen(ev->pid_str));
	}
	if (ev->args_name)
		touch(c, ev->args_name, strlen(ev->args_name));
	return ev->index == c->stop_at ? -ECANCELED : 0;
}

static int on_top_level(void *arg, const char *key, const char *json, size_t len)
{
	struct ctx *c = arg;

	touch(c, key, strlen(key));
	if (json) {
		GS_FUZZ_CHECK(len <= GS_TRACE_TOP_MAX);
		touch(c, json, len);
	}
	return 0;
}

/* Microseconds as written back into a merged trace must read as the same nanoseconds. */
static void check_us(const uint8_t *data, size_t size)
{
	char buf[64];
	int64_t ns, back;

	if (gs_parse_us_ns((const char *)data, size < 48 ? size : 48, &ns))
		return;
	gs_format_us_signed(ns, buf, sizeof(buf));
	GS_FUZZ_CHECK(!gs_parse_us_ns(buf, strlen(buf), &back) && back == ns);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c = { .stop_at = UINT64_MAX };
	struct gs_trace_parse_ops ops = {
		.ctx = &c,
		.event = on_event,
		.top_level = on_top_level,
	};
	size_t a = gs_fuzz_cut(data, size, 1), b = gs_fuzz_cut(data, size, 2), t;
	struct gs_trace_parser *p;
	int err = 0;

	check_us(data, size);
	if (size && data[size - 1] % 8 == 0)
		c.stop_at = data[0] % 4;
	if (a > b) {
		t = a;
		a = b;
		b = t;
	}
	p = gs_trace_parser__new(&ops);
	if (!p)
		return 0;
	/* three chunks, as a reader's buffer boundaries fall anywhere: in a key, a number... */
	err = gs_trace_parser__feed(p, data, a);
	if (!err)
		err = gs_trace_parser__feed(p, data + a, b - a);
	if (!err)
		err = gs_trace_parser__feed(p, data + b, size - b);
	if (!err)
		err = gs_trace_parser__finish(p);
	if (err) {
		const char *msg = gs_trace_parser__error(p);

		GS_FUZZ_CHECK(err == -EINVAL || err == -ECANCELED || err == -ENOMEM);
		GS_FUZZ_CHECK(msg && strlen(msg) < 256);
		GS_FUZZ_CHECK(gs_trace_parser__error_offset(p) <= size);
		/* sticky: nothing more is accepted */
		GS_FUZZ_CHECK(gs_trace_parser__feed(p, "{}", 2) == err);
		GS_FUZZ_CHECK(gs_trace_parser__finish(p) == err);
	} else {
		GS_FUZZ_CHECK(gs_trace_parser__bytes(p) == size);
	}
	GS_FUZZ_CHECK(gs_trace_parser__events(p) >= c.events);
	gs_trace_parser__free(p);
	return 0;
}
