// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* nvtx_rows.c: NVTX ranges, marks and thread names as trace rows (nvtx_rows.h). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/timeline/nvtx_rows.h"
#include "profilers/timeline/proc_ids.h"
#include "profilers/timeline/vocab.h"
#include "bpf/gs_nvtx.h"
#include "user/addr_map.h"
#include "user/log.h"

#define CAT	    GS_TL_CAT_NVTX
#define UNNAMED	    "[unnamed range]"
#define MAX_OPEN    16384 /* push ranges open at once, over all threads */
#define MAX_ASYNC   16384 /* start/end ranges open at once */
#define MAX_HELD    1024  /* of each kind, per process: one cannot fill the others' room */
#define ASYNC_KEY   0	  /* procs key: the process's number in async ids (proc_ids.h) */
#define PUSHES_HELD 1	  /* procs key: its open push ranges */
#define STARTS_HELD 2	  /* ... its open start/end ranges */
#define NAMES_GIVEN 3	  /* ... the thread names it gave, at most MAX_HELD */

/* an open range: the call that opened it, copied */
struct open {
	struct gs_nvtx_event ev;
};

struct counts {
	uint64_t events, ranges, async_ranges, marks, domains, thread_names;
	uint64_t unmatched_pops, unmatched_ends, unfinished, beyond_cap, truncated, malformed;
};

struct gs_nvtx_rows {
	struct gs_nvtx_rows_emit emit;
	struct open *open; /* push ranges, in the order they were pushed */
	size_t nr_open;
	struct open *async; /* start/end ranges, unordered */
	size_t nr_async;
	/* (pid, ASYNC_KEY) -> its number in async ids; (pid, *_HELD) -> its open ranges */
	struct gs_addr_map *procs;
	uint64_t procs_seen;
	struct counts n;
};

struct gs_nvtx_rows *gs_nvtx_rows__new(const struct gs_nvtx_rows_emit *emit)
{
	struct gs_nvtx_rows *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->emit = *emit;
	n->open = calloc(MAX_OPEN, sizeof(*n->open));
	n->async = calloc(MAX_ASYNC, sizeof(*n->async));
	n->procs = gs_addr_map__new();
	if (!n->open || !n->async || !n->procs) {
		gs_nvtx_rows__free(n);
		errno = ENOMEM;
		return NULL;
	}
	return n;
}

void gs_nvtx_rows__free(struct gs_nvtx_rows *n)
{
	if (!n)
		return;
	free(n->open);
	free(n->async);
	gs_addr_map__free(n->procs);
	free(n);
}

/* The id of pid's start/end range in the trace: the process's number above NVTX's id. */
static uint64_t async_id(struct gs_nvtx_rows *n, pid_t pid, uint64_t range_id)
{
	return gs_proc_id(n->procs, ASYNC_KEY, &n->procs_seen, pid, range_id);
}

static uint64_t held(const struct gs_nvtx_rows *n, __u32 pid, uint64_t key)
{
	uint64_t nr = 0;

	gs_addr_map__get(n->procs, (pid_t)pid, key, &nr);
	return nr;
}

static void add_held(struct gs_nvtx_rows *n, __u32 pid, uint64_t key, int delta)
{
	gs_addr_map__set(n->procs, (pid_t)pid, key, held(n, pid, key) + (uint64_t)(int64_t)delta);
}

static void args(struct gs_json *j, const struct gs_nvtx_event *e, bool unfinished)
{
	char color[16];

	gs_json__begin_object(j, "args");
	if (e->domain_name[0])
		gs_json__string(j, "domain", e->domain_name);
	if (e->category_name[0])
		gs_json__string(j, "category", e->category_name);
	else if (e->category)
		gs_json__u64(j, "category", e->category);
	if (e->has_color) {
		snprintf(color, sizeof(color), "#%06" PRIx32, e->color & 0xffffff);
		gs_json__string(j, "color", color);
	}
	switch (e->payload_type) {
	case GS_NVTX_PAYLOAD_U64:
		gs_json__u64(j, "payload", e->payload);
		break;
	case GS_NVTX_PAYLOAD_I64:
		gs_json__i64(j, "payload", (int64_t)e->payload);
		break;
	case GS_NVTX_PAYLOAD_U32:
		gs_json__u64(j, "payload", (uint32_t)e->payload);
		break;
	case GS_NVTX_PAYLOAD_I32:
		gs_json__i64(j, "payload", (int32_t)(uint32_t)e->payload);
		break;
	case GS_NVTX_PAYLOAD_DOUBLE: {
		double d;

		memcpy(&d, &e->payload, sizeof(d));
		gs_json__double(j, "payload", d);
		break;
	}
	case GS_NVTX_PAYLOAD_FLOAT: {
		uint32_t bits = (uint32_t)e->payload;
		float f;

		memcpy(&f, &bits, sizeof(f));
		gs_json__double(j, "payload", (double)f);
		break;
	}
	default:
		break;
	}
	if (unfinished)
		gs_json__bool(j, "unfinished", true);
	gs_json__end_object(j);
}

static const char *name_of(const struct gs_nvtx_event *e)
{
	return e->message[0] ? e->message : UNNAMED;
}

/* The X row of a push range, from its push to end_ns. */
static void render_range(struct gs_nvtx_rows *n, const struct gs_nvtx_event *push, uint64_t end_ns,
			 bool unfinished)
{
	pid_t pid = (pid_t)push->hdr.pid;
	struct gs_chrome_trace *t = n->emit.begin(n->emit.ctx, pid, push->hdr.ts_ns);
	struct gs_json *j = gs_chrome_trace__event(t, "X", name_of(push), CAT, pid, push->hdr.tid,
						   push->hdr.ts_ns);
	char dur[32];

	gs_chrome_trace_format_us(end_ns > push->hdr.ts_ns ? end_ns - push->hdr.ts_ns : 0, dur,
				  sizeof(dur));
	gs_json__raw(j, "dur", dur);
	args(j, push, unfinished);
	gs_chrome_trace__end_event(t);
	n->emit.end(n->emit.ctx);
	n->n.ranges++;
	n->n.unfinished += unfinished;
}

/* The "b" (start) or "e" (end) of a start/end range; e is the range's start. */
static void render_async(struct gs_nvtx_rows *n, const char *ph, const struct gs_nvtx_event *e,
			 pid_t tid, uint64_t ts_ns, bool unfinished)
{
	pid_t pid = (pid_t)e->hdr.pid;
	uint64_t id = async_id(n, pid, e->range_id);
	struct gs_chrome_trace *t;
	struct gs_json *j;

	if (!id)
		return;
	t = n->emit.begin(n->emit.ctx, pid, ts_ns);
	j = gs_chrome_trace__event(t, ph, name_of(e), CAT, pid, tid, ts_ns);
	gs_json__u64(j, "id", id);
	if (*ph == 'b' || unfinished)
		args(j, e, unfinished);
	gs_chrome_trace__end_event(t);
	n->emit.end(n->emit.ctx);
}

static void render_mark(struct gs_nvtx_rows *n, const struct gs_nvtx_event *e)
{
	struct gs_chrome_trace *t = n->emit.begin(n->emit.ctx, (pid_t)e->hdr.pid, e->hdr.ts_ns);
	struct gs_json *j = gs_chrome_trace__event(t, "i", name_of(e), CAT, e->hdr.pid, e->hdr.tid,
						   e->hdr.ts_ns);

	gs_json__string(j, "s", "t");
	args(j, e, false);
	gs_chrome_trace__end_event(t);
	n->emit.end(n->emit.ctx);
	n->n.marks++;
}

/* A pop closes its thread's newest push of the same domain. */
static void pop(struct gs_nvtx_rows *n, const struct gs_nvtx_event *e)
{
	for (size_t i = n->nr_open; i-- > 0;) {
		const struct gs_nvtx_event *o = &n->open[i].ev;

		if (o->hdr.pid != e->hdr.pid || o->hdr.tid != e->hdr.tid || o->domain != e->domain)
			continue;
		render_range(n, o, e->hdr.ts_ns, false);
		memmove(&n->open[i], &n->open[i + 1], (n->nr_open - i - 1) * sizeof(*n->open));
		n->nr_open--;
		add_held(n, e->hdr.pid, PUSHES_HELD, -1);
		return;
	}
	n->n.unmatched_pops++; /* pushed before the recording began, or past MAX_OPEN */
}

static void end(struct gs_nvtx_rows *n, const struct gs_nvtx_event *e)
{
	for (size_t i = 0; i < n->nr_async; i++) {
		struct open *o = &n->async[i];

		if (o->ev.hdr.pid != e->hdr.pid || o->ev.range_id != e->range_id)
			continue;
		render_async(n, "e", &o->ev, (pid_t)e->hdr.tid, e->hdr.ts_ns, false);
		n->n.async_ranges++;
		*o = n->async[--n->nr_async];
		add_held(n, e->hdr.pid, STARTS_HELD, -1);
		return;
	}
	n->n.unmatched_ends++;
}

/* Keeps an open range while the recording and its process have room (key: its kind). */
static void keep(struct gs_nvtx_rows *n, struct open *slots, size_t *nr, size_t cap, uint64_t key,
		 const struct gs_nvtx_event *e)
{
	if (*nr == cap || held(n, e->hdr.pid, key) >= MAX_HELD) {
		n->n.beyond_cap++;
		return;
	}
	slots[(*nr)++].ev = *e;
	add_held(n, e->hdr.pid, key, 1);
}

/* Whether tid is a thread of pid now (a name the target gives goes to its own rows only). */
static bool has_thread(pid_t pid, pid_t tid)
{
	char path[64];

	return (size_t)snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid) <
		       sizeof(path) &&
	       !access(path, F_OK);
}

void gs_nvtx_rows__event(struct gs_nvtx_rows *n, const struct gs_event_hdr *hdr, size_t size)
{
	struct gs_nvtx_event e;

	if (hdr->type != GS_EV_NVTX || size < sizeof(e)) {
		n->n.malformed++;
		return;
	}
	memcpy(&e, hdr, sizeof(e));
	/* from the target, through BPF: terminated here whatever came */
	e.message[sizeof(e.message) - 1] = '\0';
	e.domain_name[sizeof(e.domain_name) - 1] = '\0';
	e.category_name[sizeof(e.category_name) - 1] = '\0';
	n->n.events++;
	n->n.truncated += !!e.flags;
	if (e.kind <= GS_NVTX_MARK)
		n->emit.track(n->emit.ctx, (pid_t)e.hdr.pid, (pid_t)e.hdr.tid, e.hdr.ts_ns);
	switch (e.kind) {
	case GS_NVTX_PUSH:
		keep(n, n->open, &n->nr_open, MAX_OPEN, PUSHES_HELD, &e);
		break;
	case GS_NVTX_POP:
		pop(n, &e);
		break;
	case GS_NVTX_START:
		render_async(n, "b", &e, (pid_t)e.hdr.tid, e.hdr.ts_ns, false);
		keep(n, n->async, &n->nr_async, MAX_ASYNC, STARTS_HELD, &e);
		break;
	case GS_NVTX_END:
		end(n, &e);
		break;
	case GS_NVTX_MARK:
		render_mark(n, &e);
		break;
	case GS_NVTX_DOMAIN_CREATE:
		n->n.domains++;
		break;
	case GS_NVTX_NAME_THREAD:
		/* the caller itself or a thread of its process: the id comes from the target */
		if (held(n, e.hdr.pid, NAMES_GIVEN) >= MAX_HELD) {
			n->n.beyond_cap++;
		} else if (e.message[0] && e.range_id && e.range_id <= INT_MAX &&
			   (e.range_id == e.hdr.tid ||
			    has_thread((pid_t)e.hdr.pid, (pid_t)e.range_id))) {
			n->emit.name_thread(n->emit.ctx, (pid_t)e.hdr.pid, (pid_t)e.range_id,
					    e.message, e.hdr.ts_ns);
			add_held(n, e.hdr.pid, NAMES_GIVEN, 1);
			n->n.thread_names++;
		}
		break;
	default:
		break;
	}
}

/* Ends pid's open ranges (every process's for pid 0) at now_ns. */
static void close_open(struct gs_nvtx_rows *n, pid_t pid, uint64_t now_ns)
{
	size_t kept = 0;

	for (size_t i = 0; i < n->nr_open; i++) {
		if (pid && n->open[i].ev.hdr.pid != (__u32)pid)
			n->open[kept++] = n->open[i];
		else
			render_range(n, &n->open[i].ev, now_ns, true);
	}
	n->nr_open = kept;
	kept = 0;
	for (size_t i = 0; i < n->nr_async; i++) {
		const struct gs_nvtx_event *e = &n->async[i].ev;

		if (pid && e->hdr.pid != (__u32)pid) {
			n->async[kept++] = n->async[i];
			continue;
		}
		render_async(n, "e", e, (pid_t)e->hdr.tid, now_ns, true);
		n->n.async_ranges++;
		n->n.unfinished++;
	}
	n->nr_async = kept;
}

void gs_nvtx_rows__proc_gone(struct gs_nvtx_rows *n, pid_t pid, uint64_t now_ns)
{
	if (!n || pid <= 0)
		return;
	close_open(n, pid, now_ns);
	gs_addr_map__forget_pid(n->procs, pid, NULL);
}

void gs_nvtx_rows__finish(struct gs_nvtx_rows *n, uint64_t now_ns)
{
	if (n)
		close_open(n, 0, now_ns);
}

void gs_nvtx_rows__metadata(const struct gs_nvtx_rows *n, struct gs_json *j)
{
	gs_json__begin_object(j, "nvtx");
	gs_json__u64(j, "events", n->n.events);
	gs_json__u64(j, "ranges", n->n.ranges);
	gs_json__u64(j, "async_ranges", n->n.async_ranges);
	gs_json__u64(j, "marks", n->n.marks);
	gs_json__u64(j, "domains", n->n.domains);
	gs_json__u64(j, "thread_names", n->n.thread_names);
	gs_json__u64(j, "unfinished", n->n.unfinished);
	gs_json__u64(j, "unmatched_pops", n->n.unmatched_pops);
	gs_json__u64(j, "unmatched_ends", n->n.unmatched_ends);
	gs_json__u64(j, "beyond_open_cap", n->n.beyond_cap);
	gs_json__u64(j, "names_truncated", n->n.truncated);
	gs_json__u64(j, "malformed", n->n.malformed);
	gs_json__end_object(j);
}

void gs_nvtx_rows__summary(const struct gs_nvtx_rows *n, FILE *f, bool named)
{
	if (!n || (!n->n.events && !named))
		return;
	if (!n->n.events) {
		fprintf(f, "  NVTX: none: no traced process made an NVTX call with the injection "
			   "library loaded (NVTX_INJECTION64_PATH at its start)\n");
		return;
	}
	fprintf(f,
		"  NVTX: %" PRIu64 " push/pop ranges, %" PRIu64 " start/end ranges, %" PRIu64
		" marks\n",
		n->n.ranges, n->n.async_ranges, n->n.marks);
}
