// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* merge.c: two passes per input (metadata, then events) and a reorder window across them. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "stitch/id_map.h"
#include "stitch/merge.h"
#include "stitch/trace_writer.h"
#include "stitch/trace_parse.h"
#include "stitch/top_keys.h"
#include "user/array.h"
#include "user/text_escape.h"

#define CHUNK	      65536
#define KINETO_BATCH  1024
#define HOST_MAX      256
#define PID_SEEN      1
#define PID_NAMED     2
#define TEXT_MAX      (64 << 20) /* one event's text */
#define DAY_NS	      (86400ULL * 1000000000ULL)
#define ORDER_KEY(ts) ((uint64_t)(ts) ^ (1ULL << 63)) /* int64 order as uint64 order */

enum format { FMT_UNKNOWN, FMT_GPUSNOOP, FMT_KINETO };

struct text {
	char *p;
	size_t len, cap;
	bool oom;
};

struct pid_entry {
	int64_t pid;
	unsigned int flags;
};

/* pids of one clock domain, sorted, with what we know of each */
struct pid_set {
	struct pid_entry *v;
	size_t nr, cap;
};

struct domain {
	char host[HOST_MAX];
	char label[HOST_MAX + 16];
	bool has_offset;
	int64_t offset; /* monotonic_to_realtime_ns */
	int64_t pid_base;
	struct pid_set pids;
};

/* a Kineto event, read whole and sorted */
struct krec {
	int64_t ts;
	uint64_t seq;
	size_t len;
	char text[];
};

struct src {
	const struct gs_stitch_input *in;
	enum format fmt;
	/* pass 1 */
	struct text meta; /* gpusnoop: the "metadata" object */
	struct text top;  /* every top-level value but traceEvents: "k":v,... */
	bool kineto_keys; /* schemaVersion, baseTimeNanoseconds... */
	char host[HOST_MAX];
	bool has_offset, has_base, gpusnoop_tool;
	int64_t offset, base_ns;
	uint64_t dropped;
	bool has_events;
	int64_t min_ts;		 /* raw, of the timed (non-M) events */
	struct pid_set *p1_pids; /* pass 1: its pids, before its domain is known */
	uint64_t size;		 /* bytes of JSON text */
	struct domain *dom;
	int64_t shift; /* output ns = raw ns + shift */
	/* pass 2 */
	struct gs_trace_parser *parser;
	bool eof;
	int64_t watermark; /* output ns of the latest event read */
	struct krec **recs;
	size_t nr_recs, cap_recs, next_rec;
	uint64_t written;
};

struct stitch {
	const struct gs_stitch_opts *opts;
	struct src *srcs;
	size_t nr;
	struct domain *doms;
	size_t nr_doms;
	bool multi; /* more than one domain: name hosts */
	int64_t base;
	struct src *cur;		/* the input being parsed */
	struct gs_trace_writer *writer; /* the output, in timestamp order */
	struct gs_top_keys top_keys;	/* distributedInfo, deviceProperties */
	struct gs_id_map ids;		/* flow/async ids: (input, id) -> output id */
	struct text ev;			/* the event being built */
	struct gs_stitch_stats *stats;
	char *err;
	size_t errlen;
};

static void text_add(struct text *t, const char *s, size_t len)
{
	if (t->oom)
		return;
	if (t->len + len + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 256;
		char *p;

		while (cap < t->len + len + 1)
			cap *= 2;
		p = realloc(t->p, cap);
		if (!p) {
			t->oom = true;
			return;
		}
		t->p = p;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, len);
	t->len += len;
	t->p[t->len] = '\0';
}

static void text_adds(struct text *t, const char *s)
{
	text_add(t, s, strlen(s));
}

/* s as a JSON string literal */
/* A JSON string of s, always valid UTF-8 (user/text_escape.h): names come from traced binaries. */
static void text_add_jstring(struct text *t, const char *s)
{
	size_t n = strlen(s);

	text_add(t, "\"", 1);
	while (n) {
		size_t run = gs_json_plain_run(s, n), used, len;
		char esc[GS_JSON_ESC_MAX];

		text_add(t, s, run);
		s += run;
		n -= run;
		if (!n)
			break;
		len = gs_json_escape_char(s, n, esc, &used);
		text_add(t, esc, len);
		s += used;
		n -= used;
	}
	text_add(t, "\"", 1);
}

static void text_free(struct text *t)
{
	free(t->p);
	memset(t, 0, sizeof(*t));
}

static int failf(struct stitch *st, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int failf(struct stitch *st, int err, const char *fmt, ...)
{
	va_list ap;

	if (st->errlen && !st->err[0]) {
		va_start(ap, fmt);
		vsnprintf(st->err, st->errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* pid sets: few distinct pids, many lookups (the last one is cached by the caller) */
static struct pid_entry *pid_find(struct pid_set *s, int64_t pid, size_t *pos)
{
	size_t lo = 0, hi = s->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->v[mid].pid == pid)
			return &s->v[mid];
		if (s->v[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*pos = lo;
	return NULL;
}

static int pid_mark(struct pid_set *s, int64_t pid, unsigned int flags)
{
	struct pid_entry *e;
	size_t pos = 0;

	e = pid_find(s, pid, &pos);
	if (e) {
		e->flags |= flags;
		return 0;
	}
	if (GS_ARRAY_RESERVE(s->v, s->nr, s->cap, 64))
		return -ENOMEM;
	memmove(s->v + pos + 1, s->v + pos, (s->nr - pos) * sizeof(*s->v));
	s->v[pos] = (struct pid_entry){ .pid = pid, .flags = flags };
	s->nr++;
	return 0;
}

/* ---- pass 1: metadata, clocks and pids ---- */

static bool is_kineto_key(const char *key)
{
	static const char *const keys[] = { "schemaVersion",	"baseTimeNanoseconds",
					    "deviceProperties", "distributedInfo",
					    "traceName",	"cupti_version" };

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return false;
}

static int read_gpusnoop_metadata(struct src *s, const char *json)
{
	static const char *tool_path[] = { "tool", NULL };
	static const char *host_path[] = { "host", NULL };
	static const char *off_path[] = { "monotonic_to_realtime_ns", NULL };
	static const char *drop_path[] = { "dropped_events", NULL };
	char errbuf[128];
	yajl_val v, x;

	v = yajl_tree_parse(json, errbuf, sizeof(errbuf));
	if (!v)
		return 0; /* we wrote it ourselves from valid JSON; only memory can fail */
	x = yajl_tree_get(v, tool_path, yajl_t_string);
	s->gpusnoop_tool = x && x->u.string && !strcmp(x->u.string, "gpusnoop");
	x = yajl_tree_get(v, host_path, yajl_t_string);
	if (x && x->u.string)
		snprintf(s->host, sizeof(s->host), "%s", x->u.string);
	x = yajl_tree_get(v, off_path, yajl_t_number);
	if (x && YAJL_IS_INTEGER(x)) {
		s->offset = YAJL_GET_INTEGER(x);
		s->has_offset = true;
	}
	x = yajl_tree_get(v, drop_path, yajl_t_number);
	if (x && YAJL_IS_INTEGER(x) && YAJL_GET_INTEGER(x) > 0)
		s->dropped = (uint64_t)YAJL_GET_INTEGER(x);
	yajl_tree_free(v);
	return 0;
}

static int p1_top(void *ctx, const char *key, const char *json, size_t len)
{
	struct stitch *st = ctx;
	struct src *s = st->cur;
	int err;

	if (is_kineto_key(key))
		s->kineto_keys = true;
	if (!json)
		return 0; /* over the size cap: left out of the output's metadata */
	if (!strcmp(key, "metadata") && json[0] == '{') {
		s->meta.len = 0;
		text_add(&s->meta, json, len);
		read_gpusnoop_metadata(s, json);
	}
	if (!strcmp(key, "baseTimeNanoseconds")) {
		if (gs_parse_i64(json, len, &s->base_ns))
			return -EBADMSG;
		s->has_base = true;
	}
	err = gs_top_keys__add(&st->top_keys, key, json, len);
	if (err)
		return err;
	if (strcmp(key, "displayTimeUnit")) {
		if (s->top.len)
			text_add(&s->top, ",", 1);
		text_add_jstring(&s->top, key);
		text_add(&s->top, ":", 1);
		text_add(&s->top, json, len);
	}
	return s->top.oom || s->meta.oom ? -ENOMEM : 0;
}

/* The output's id of the current input's numeric id: 0, -E2BIG or -ENOMEM. */
static int output_id(struct stitch *st, const struct gs_trace_event *ev, int64_t *id)
{
	return gs_id_map__get(&st->ids, (uint32_t)(st->cur - st->srcs), ev->id, id);
}

/* Pass 1 needs the pids and the time span; the domain is not known yet (host comes last). */
static int p1_event(void *ctx, const struct gs_trace_event *ev)
{
	struct stitch *st = ctx;
	struct src *s = st->cur;
	struct pid_set *set = s->p1_pids;
	int err = 0;

	if (ev->has_ts && strcmp(ev->ph, "M")) {
		if (!s->has_events || ev->ts_ns < s->min_ts)
			s->min_ts = ev->ts_ns;
		s->has_events = true;
	}
	if (ev->has_pid && !ev->pid_is_str)
		err = pid_mark(set, ev->pid, PID_SEEN | (ev->is_process_name ? PID_NAMED : 0));
	if (!err && ev->has_id) /* numbered here, input by input: pass 2 finds them */
		err = output_id(st, ev, &(int64_t){ 0 });
	return err;
}

static int input_error(struct stitch *st, struct src *s, struct gs_trace_parser *p, int err)
{
	if (err == -ENOMEM)
		return failf(st, err, "%s: out of memory", s->in->name);
	if (err == -EINTR)
		return failf(st, err, "interrupted");
	if (err == -E2BIG)
		return failf(st, err, "%s: more than %zu distinct flow and async ids in all inputs",
			     s->in->name, st->ids.max);
	if (err == -EBADMSG)
		return failf(st, -EINVAL,
			     "%s: offset %" PRIu64 ": baseTimeNanoseconds is not an integer",
			     s->in->name, gs_trace_parser__error_offset(p));
	return failf(st, err, "%s: offset %" PRIu64 ": %s", s->in->name,
		     gs_trace_parser__error_offset(p),
		     gs_trace_parser__error(p) ? gs_trace_parser__error(p) : strerror(-err));
}

static int read_failed(struct stitch *st, struct src *s, uint64_t offset, long n)
{
	const char *why = s->in->read_error ? s->in->read_error(s->in->ctx) : NULL;

	return failf(st, n == -EINTR ? -EINTR : -EIO, "%s: offset %" PRIu64 ": read: %s",
		     s->in->name, offset, why ? why : strerror((int)-n));
}

static bool stopped(const struct stitch *st)
{
	return st->opts->stop && *st->opts->stop;
}

/* Feeds a whole input through a parser with the given callbacks. */
static int parse_all(struct stitch *st, struct src *s, const struct gs_trace_parse_ops *ops)
{
	struct gs_trace_parser *p = gs_trace_parser__new(ops);
	char *buf = malloc(CHUNK);
	int err = 0;

	if (!p || !buf) {
		err = failf(st, -ENOMEM, "%s: out of memory", s->in->name);
		goto out;
	}
	err = s->in->rewind(s->in->ctx);
	if (err) {
		err = failf(st, err, "%s: rewind: %s", s->in->name, strerror(-err));
		goto out;
	}
	for (;;) {
		long n = s->in->read(s->in->ctx, buf, CHUNK);

		if (stopped(st)) {
			err = failf(st, -EINTR, "interrupted");
			goto out;
		}
		if (n < 0) {
			err = read_failed(st, s, gs_trace_parser__bytes(p), n);
			goto out;
		}
		if (!gs_trace_parser__bytes(p) && gs_is_perfetto_data(buf, (size_t)n)) {
			err = failf(st, -EINVAL,
				    "%s: a Perfetto protobuf trace: stitch reads JSON only "
				    "(record it with --format json)",
				    s->in->name);
			goto out;
		}
		err = n ? gs_trace_parser__feed(p, buf, (size_t)n) : gs_trace_parser__finish(p);
		if (err) {
			err = input_error(st, s, p, err);
			goto out;
		}
		if (!n)
			break;
	}
	s->size = gs_trace_parser__bytes(p);
out:
	free(buf);
	gs_trace_parser__free(p);
	return err;
}

static struct domain *find_domain(struct stitch *st, const char *host, bool has_offset,
				  int64_t offset)
{
	for (size_t i = 0; i < st->nr_doms; i++) {
		struct domain *d = &st->doms[i];
		uint64_t diff;

		if (strcmp(d->host, host))
			continue;
		if (!has_offset || !d->has_offset)
			return d; /* a Kineto trace: any boot of its host */
		diff = d->offset > offset ? (uint64_t)(d->offset - offset)
					  : (uint64_t)(offset - d->offset);
		if (diff <= st->opts->same_boot_ns)
			return d;
	}
	return NULL;
}

static struct domain *add_domain(struct stitch *st, const char *host, bool has_offset,
				 int64_t offset)
{
	struct domain *d = &st->doms[st->nr_doms];
	int boots = 1;

	for (size_t i = 0; i < st->nr_doms; i++)
		boots += !strcmp(st->doms[i].host, host);
	memset(d, 0, sizeof(*d));
	snprintf(d->host, sizeof(d->host), "%s", host);
	if (boots > 1)
		snprintf(d->label, sizeof(d->label), "%s boot %d", host, boots);
	else
		snprintf(d->label, sizeof(d->label), "%s", host);
	d->has_offset = has_offset;
	d->offset = offset;
	d->pid_base = (int64_t)st->nr_doms * GS_STITCH_PID_STRIDE;
	st->nr_doms++;
	return d;
}

/* A gpusnoop trace (with its clock metadata) or a Kineto trace; else -EINVAL (in st->err). */
static int classify_input(struct stitch *st, struct src *s)
{
	if (s->gpusnoop_tool || (s->has_offset && s->host[0])) {
		s->fmt = FMT_GPUSNOOP;
		if (!s->has_offset || !s->host[0])
			return failf(st, -EINVAL,
				     "%s: offset %" PRIu64 ": gpusnoop metadata without %s",
				     s->in->name, s->size,
				     s->host[0] ? "monotonic_to_realtime_ns" : "host");
		return 0;
	}
	if (s->kineto_keys) {
		s->fmt = FMT_KINETO;
		return 0;
	}
	return failf(st, -EINVAL,
		     "%s: offset 0: neither a gpusnoop trace (no metadata.tool) nor a "
		     "Kineto trace (no schemaVersion or baseTimeNanoseconds)",
		     s->in->name);
}

/* Clock domains: gpusnoop inputs first, in order, then the Kineto ones join a host. */
static int assign_domains(struct stitch *st)
{
	const char *kineto_host = NULL;

	for (size_t i = 0; i < st->nr; i++) {
		struct src *s = &st->srcs[i];

		if (s->fmt != FMT_GPUSNOOP)
			continue;
		s->dom = find_domain(st, s->host, true, s->offset);
		if (!s->dom)
			s->dom = add_domain(st, s->host, true, s->offset);
		if (!kineto_host)
			kineto_host = s->dom->host;
	}
	if (!st->nr_doms)
		return failf(st, -EINVAL, "%s: a Kineto trace needs a gpusnoop trace to stitch to",
			     st->srcs[0].in->name);
	for (size_t i = 0; i < st->nr; i++) {
		struct src *s = &st->srcs[i];
		const char *host = s->in->kineto_host ? s->in->kineto_host : kineto_host;

		if (s->fmt != FMT_KINETO)
			continue;
		s->dom = find_domain(st, host, false, 0);
		if (!s->dom)
			s->dom = add_domain(st, host, false, 0);
		snprintf(s->host, sizeof(s->host), "%s", host);
	}
	st->multi = st->nr_doms > 1;
	return 0;
}

/* Output clock: the first domain's CLOCK_MONOTONIC, moved back if anything is earlier. */
static void set_clock_base(struct stitch *st)
{
	bool have_base = false;
	int64_t min_real = 0;

	st->base = st->doms[0].offset;
	for (size_t i = 0; i < st->nr; i++) {
		struct src *s = &st->srcs[i];
		int64_t to_real = s->fmt == FMT_GPUSNOOP ? s->dom->offset
							 : (s->has_base ? s->base_ns : 0) +
								   s->in->kineto_offset_ns;

		s->shift = to_real; /* made relative to base below */
		if (s->has_events && (!have_base || s->min_ts + to_real < min_real)) {
			min_real = s->min_ts + to_real;
			have_base = true;
		}
	}
	if (have_base && min_real < st->base)
		st->base = min_real;
	for (size_t i = 0; i < st->nr; i++)
		st->srcs[i].shift -= st->base;
}

/* The pids of each domain, and which have a name. */
static int mark_pids(struct stitch *st, const struct pid_set *sets)
{
	for (size_t i = 0; i < st->nr; i++) {
		struct pid_set *d = &st->srcs[i].dom->pids;

		for (size_t k = 0; k < sets[i].nr; k++)
			if (pid_mark(d, sets[i].v[k].pid, sets[i].v[k].flags))
				return failf(st, -ENOMEM, "out of memory");
	}
	return 0;
}

static int pass1(struct stitch *st)
{
	const struct gs_trace_parse_ops ops = { .ctx = st, .event = p1_event, .top_level = p1_top };
	struct pid_set *sets;
	int err = 0;

	sets = calloc(st->nr, sizeof(*sets));
	st->doms = calloc(st->nr + 1, sizeof(*st->doms));
	if (!sets || !st->doms) {
		free(sets);
		return failf(st, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < st->nr && !err; i++) {
		struct src *s = &st->srcs[i];

		st->cur = s;
		s->p1_pids = &sets[i];
		err = parse_all(st, s, &ops);
		s->p1_pids = NULL;
		err = err ?: classify_input(st, s);
	}
	err = err ?: assign_domains(st);
	if (!err) {
		set_clock_base(st);
		err = mark_pids(st, sets);
	}
	for (size_t i = 0; i < st->nr; i++)
		free(sets[i].v);
	free(sets);
	return err;
}

/* ---- pass 2: events ---- */

static void put_pid(struct stitch *st, struct text *t, const struct gs_trace_event *ev)
{
	char num[32];

	if (ev->pid_is_str) {
		char name[HOST_MAX + 300];

		if (st->multi)
			snprintf(name, sizeof(name), "%s (%s)", ev->pid_str, st->cur->dom->label);
		else
			snprintf(name, sizeof(name), "%s", ev->pid_str);
		text_add_jstring(t, name);
		return;
	}
	snprintf(num, sizeof(num), "%" PRId64, ev->pid + st->cur->dom->pid_base);
	text_adds(t, num);
}

/* The event's output text: pid and ts mapped, process names labelled with their host. */
static int build_event(struct stitch *st, const struct gs_trace_event *ev, int64_t out_ts)
{
	struct text *t = &st->ev;
	bool rename = st->multi && ev->is_process_name && ev->args_name && ev->has_pid &&
		      !ev->pid_is_str && ev->args_end > ev->args_start;
	char ts[40];
	int64_t id;
	int err;

	t->len = 0;
	text_add(t, "{", 1);
	if (ev->has_pid) {
		text_adds(t, "\"pid\":");
		put_pid(st, t, ev);
		text_add(t, ",", 1);
	}
	gs_format_us_signed(out_ts, ts, sizeof(ts));
	text_adds(t, "\"ts\":");
	text_adds(t, ts);
	if (ev->has_id) {
		char num[32];

		err = output_id(st, ev, &id);
		if (err)
			return err;
		snprintf(num, sizeof(num), ",\"id\":%" PRId64, id);
		text_adds(t, num);
	}
	if (rename) {
		char name[1024];

		text_add(t, ev->rest, ev->args_start);
		text_add(t, ev->rest + ev->args_end, ev->rest_len - ev->args_end);
		snprintf(name, sizeof(name), "%s (pid %" PRId64 " on %s)", ev->args_name, ev->pid,
			 st->cur->dom->label);
		text_adds(t, ",\"args\":{\"name\":");
		text_add_jstring(t, name);
		text_add(t, "}", 1);
	} else {
		text_add(t, ev->rest, ev->rest_len);
	}
	text_add(t, "}", 1);
	if (t->oom || t->len > TEXT_MAX)
		return -ENOMEM;
	return 0;
}

static int p2_event(void *ctx, const struct gs_trace_event *ev)
{
	struct stitch *st = ctx;
	struct src *s = st->cur;
	bool meta = !strcmp(ev->ph, "M");
	int64_t ts = meta ? 0 : ev->ts_ns + s->shift;
	int err;

	err = build_event(st, ev, ts);
	if (err)
		return err;
	s->written++;
	if (meta) {
		/* timeless: written at once */
		gs_chrome_trace__raw_event(gs_trace_writer__trace(st->writer), st->ev.p,
					   st->ev.len);
		return 0;
	}
	if (s->fmt == FMT_KINETO) {
		struct krec *r;

		if (GS_ARRAY_RESERVE(s->recs, s->nr_recs, s->cap_recs, 1024))
			return -ENOMEM;
		r = malloc(sizeof(*r) + st->ev.len);
		if (!r)
			return -ENOMEM;
		r->ts = ts;
		r->seq = s->nr_recs;
		r->len = st->ev.len;
		memcpy(r->text, st->ev.p, st->ev.len);
		s->recs[s->nr_recs++] = r;
		return 0;
	}
	if (ts > s->watermark)
		s->watermark = ts;
	return gs_trace_writer__push(st->writer, ORDER_KEY(ts), st->ev.p, st->ev.len);
}

static int krec_cmp(const void *a, const void *b)
{
	const struct krec *x = *(const struct krec *const *)a, *y = *(const struct krec *const *)b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Names, with their host, the processes that had events but no process_name. */
static void name_unnamed(struct stitch *st)
{
	for (size_t d = 0; d < st->nr_doms && st->multi; d++) {
		struct domain *dom = &st->doms[d];

		for (size_t i = 0; i < dom->pids.nr; i++) {
			struct pid_entry *e = &dom->pids.v[i];
			char name[HOST_MAX + 64];

			if (e->flags & PID_NAMED)
				continue;
			snprintf(name, sizeof(name), "pid %" PRId64 " on %s", e->pid, dom->label);
			gs_chrome_trace__process_name(gs_trace_writer__trace(st->writer),
						      e->pid + dom->pid_base, name);
		}
	}
}

static int open_sources(struct stitch *st)
{
	const struct gs_trace_parse_ops ops = { .ctx = st, .event = p2_event };
	int err;

	for (size_t i = 0; i < st->nr; i++) {
		struct src *s = &st->srcs[i];

		s->watermark = INT64_MIN;
		st->cur = s;
		if (s->fmt == FMT_KINETO) {
			/* Kineto writes CPU ops, then GPU activity: far from sorted, read whole */
			err = parse_all(st, s, &ops);
			if (err)
				return err;
			qsort(s->recs, s->nr_recs, sizeof(*s->recs), krec_cmp);
			continue;
		}
		err = s->in->rewind(s->in->ctx);
		if (err)
			return failf(st, err, "%s: rewind: %s", s->in->name, strerror(-err));
		s->parser = gs_trace_parser__new(&ops);
		if (!s->parser)
			return failf(st, -ENOMEM, "out of memory");
	}
	return 0;
}

/* Moves one input forward: a chunk of a gpusnoop file, or a batch of sorted Kineto events. */
static int step(struct stitch *st, struct src *s, char *buf)
{
	long n;
	int err;

	st->cur = s;
	if (s->fmt == FMT_KINETO) {
		size_t end = s->next_rec + KINETO_BATCH < s->nr_recs ? s->next_rec + KINETO_BATCH
								     : s->nr_recs;

		for (; s->next_rec < end; s->next_rec++) {
			struct krec *r = s->recs[s->next_rec];

			err = gs_trace_writer__push(st->writer, ORDER_KEY(r->ts), r->text, r->len);
			if (err)
				return failf(st, err, "out of memory");
			s->watermark = r->ts;
			free(r);
			s->recs[s->next_rec] = NULL;
		}
		s->eof = s->next_rec == s->nr_recs;
		return 0;
	}
	n = s->in->read(s->in->ctx, buf, CHUNK);
	if (n < 0)
		return read_failed(st, s, gs_trace_parser__bytes(s->parser), n);
	err = n ? gs_trace_parser__feed(s->parser, buf, (size_t)n)
		: gs_trace_parser__finish(s->parser);
	if (err)
		return input_error(st, s, s->parser, err);
	s->eof = !n;
	return 0;
}

static int pass2(struct stitch *st)
{
	char *buf = malloc(CHUNK);
	int err;

	if (!buf)
		return failf(st, -ENOMEM, "out of memory");
	err = open_sources(st);
	if (err)
		goto out;
	name_unnamed(st);
	for (;;) {
		struct src *next = NULL;
		int64_t now = INT64_MAX;

		if (stopped(st)) {
			err = failf(st, -EINTR, "interrupted");
			goto out;
		}
		for (size_t i = 0; i < st->nr; i++) {
			struct src *s = &st->srcs[i];

			if (!s->eof && (!next || s->watermark < next->watermark))
				next = s;
		}
		if (!next)
			break;
		err = step(st, next, buf);
		if (err)
			goto out;
		/* every input has read up to its watermark: what is a window older is final */
		for (size_t i = 0; i < st->nr; i++) {
			struct src *s = &st->srcs[i];

			if (!s->eof && s->watermark < now)
				now = s->watermark;
		}
		if (now != INT64_MAX && now != INT64_MIN)
			gs_trace_writer__advance(st->writer, ORDER_KEY(now));
	}
	gs_trace_writer__flush(st->writer);
out:
	free(buf);
	return err;
}

/* ---- metadata ---- */

static void write_metadata(struct stitch *st)
{
	struct gs_json *j;

	gs_trace_writer__flush(st->writer);
	/* Kineto's keys at the top, where HTA looks for the rank and the devices */
	gs_top_keys__write(&st->top_keys,
			   gs_chrome_trace__top_level(gs_trace_writer__trace(st->writer)));
	j = gs_trace_writer__metadata(st->writer);

	gs_json__string(j, "tool", "gpusnoop");
#ifdef GS_VERSION
	gs_json__string(j, "version", GS_VERSION);
#endif
	gs_json__bool(j, "stitched", true);
	gs_json__string(j, "host", st->doms[0].label);
	gs_json__string(j, "clock",
			"CLOCK_MONOTONIC of the first gpusnoop input's host, shifted "
			"back if needed; CLOCK_REALTIME = ts + monotonic_to_realtime_ns");
	gs_json__i64(j, "monotonic_to_realtime_ns", st->base);
	if (st->opts->argv) {
		gs_json__begin_array(j, "command_line");
		gs_json__string(j, NULL, "gpusnoop");
		/* argv as given: the CLI named argv[0] "gpusnoop stitch" for argp */
		for (int i = 0; i < st->opts->argc; i++) {
			const char *a = st->opts->argv[i];

			if (!i && !strncmp(a, "gpusnoop ", 9))
				a += 9;
			gs_json__string(j, NULL, a);
		}
		gs_json__end_array(j);
	}
	/* every event is in the document by now (the metadata comes last) */
	st->stats->events = gs_trace_writer__events(st->writer);
	gs_json__u64(j, "events", st->stats->events);
	gs_json__u64(j, "dropped_events", st->stats->dropped);
	gs_json__u64(j, "late_events", st->stats->late);
	gs_json__u64(j, "reorder_window_ns", st->opts->window_ns);
	gs_json__begin_array(j, "hosts");
	for (size_t i = 0; i < st->nr_doms; i++) {
		struct domain *d = &st->doms[i];

		gs_json__begin_object(j, NULL);
		gs_json__string(j, "host", d->host);
		gs_json__string(j, "label", d->label);
		if (d->has_offset)
			gs_json__i64(j, "monotonic_to_realtime_ns", d->offset);
		gs_json__i64(j, "pid_offset", d->pid_base);
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
	gs_json__begin_array(j, "inputs");
	for (size_t i = 0; i < st->nr; i++) {
		struct src *s = &st->srcs[i];

		gs_json__begin_object(j, NULL);
		gs_json__string(j, "file", s->in->name);
		gs_json__string(j, "format", s->fmt == FMT_GPUSNOOP ? "gpusnoop" : "kineto");
		gs_json__string(j, "host", s->dom->label);
		gs_json__i64(j, "shift_ns", s->shift);
		gs_json__u64(j, "events", s->written);
		if (s->fmt == FMT_GPUSNOOP) {
			gs_json__u64(j, "dropped_events", s->dropped);
			if (s->meta.len)
				gs_json__raw(j, "metadata", s->meta.p);
		} else {
			gs_json__i64(j, "base_time_ns", s->has_base ? s->base_ns : 0);
			gs_json__i64(j, "offset_ns", s->in->kineto_offset_ns);
			if (s->top.len) {
				gs_json__begin_object(j, "metadata");
				gs_json__raw(j, NULL, s->top.p); /* "k":v,... pairs */
				gs_json__end_object(j);
			}
		}
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
	gs_trace_writer__finish(st->writer);
}

static void check_kineto_clock(struct stitch *st)
{
	const struct src *ref = NULL;

	for (size_t i = 0; i < st->nr && !ref; i++)
		if (st->srcs[i].fmt == FMT_GPUSNOOP && st->srcs[i].has_events)
			ref = &st->srcs[i];
	/* a wall-clock trace of the same run starts within a day of the recording */
	for (size_t i = 0; i < st->nr && ref; i++) {
		const struct src *s = &st->srcs[i];
		int64_t a, b;
		uint64_t diff;

		if (s->fmt != FMT_KINETO || !s->has_events)
			continue;
		a = s->min_ts + s->shift;
		b = ref->min_ts + ref->shift;
		diff = a > b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
		if (diff > DAY_NS)
			snprintf(st->stats->warning, sizeof(st->stats->warning),
				 "%s: its timestamps are %.1f days from the gpusnoop trace's; are "
				 "they "
				 "wall-clock? (--kineto-offset)",
				 s->in->name, (double)diff / 86400e9);
	}
}

int gs_stitch(const struct gs_stitch_input *in, size_t nr, const struct gs_stitch_opts *opts,
	      FILE *out, struct gs_stitch_stats *stats, char *err, size_t errlen)
{
	struct stitch st = { .opts = opts, .nr = nr, .stats = stats, .err = err, .errlen = errlen };
	int ret;

	memset(stats, 0, sizeof(*stats));
	if (errlen)
		err[0] = '\0';
	if (!nr)
		return failf(&st, -EINVAL, "no input");
	st.srcs = calloc(nr, sizeof(*st.srcs));
	if (!st.srcs)
		return failf(&st, -ENOMEM, "out of memory");
	for (size_t i = 0; i < nr; i++)
		st.srcs[i].in = &in[i];
	gs_id_map__init(&st.ids, opts->max_ids ? opts->max_ids : GS_STITCH_IDS_MAX);
	ret = pass1(&st);
	if (ret)
		goto out;
	for (size_t i = 0; i < nr; i++)
		stats->dropped += st.srcs[i].dropped;
	stats->domains = st.nr_doms;
	st.writer = gs_trace_writer__new(out, opts->window_ns);
	if (!st.writer) {
		ret = failf(&st, -ENOMEM, "out of memory");
		goto out;
	}
	ret = pass2(&st);
	if (ret)
		goto out;
	stats->late = gs_trace_writer__late(st.writer);
	stats->max_held = gs_trace_writer__max_held(st.writer);
	write_metadata(&st);
	check_kineto_clock(&st);
out:
	for (size_t i = 0; i < nr; i++) {
		struct src *s = &st.srcs[i];

		gs_trace_parser__free(s->parser);
		for (size_t k = s->next_rec; k < s->nr_recs; k++)
			free(s->recs[k]);
		free(s->recs);
		text_free(&s->meta);
		text_free(&s->top);
	}
	for (size_t i = 0; i < st.nr_doms; i++)
		free(st.doms[i].pids.v);
	free(st.doms);
	text_free(&st.ev);
	gs_top_keys__free(&st.top_keys);
	gs_id_map__release(&st.ids);
	gs_trace_writer__free(st.writer);
	free(st.srcs);
	return ret;
}
