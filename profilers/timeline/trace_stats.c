// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* trace_stats.c: bounded per-(process, name) tables of trace rows, printed three ways. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/timeline/gpu_summary.h"
#include "profilers/timeline/record_summary.h"
#include "profilers/timeline/trace_stats.h"
#include "profilers/cuda/api.h"
#include "profilers/cuda/gpu_activity.h"
#include "profilers/leak_report.h"
#include "user/addr_map.h"
#include "user/histogram.h"
#include "user/json.h"
#include "user/text_escape.h"

/* distinct (process, name) keys per table (4 KiB of histogram each); later ones: OTHER */
#define MAX_KEYS     4096
#define MAX_LABELS   4096
#define MAX_NAME_LEN 4096 /* longer names are cut: a hostile trace's 1 GB name costs 4 KiB */
#define MAX_OPEN     4096 /* async ranges begun and not yet ended */
#define OTHER	     "[other]"

enum table_id { T_API, T_KERNEL, T_GPU_COPY, T_COPY, T_MEM, T_NVTX, T__NR };

/* what a table's histogram holds: durations (ns) or sizes (bytes) */
enum value_kind { V_DURATION, V_SIZE };

static const struct table_desc {
	const char *id, *title;
	enum value_kind value;
	const char *who; /* "process" or "device" */
} descs[T__NR] = {
	[T_API] = { "cuda_api", "CUDA API calls", V_DURATION, "process" },
	[T_KERNEL] = { "gpu_kernels", "GPU kernels by device time", V_DURATION, "device" },
	[T_GPU_COPY] = { "gpu_copies", "GPU copies and memsets by device time", V_DURATION,
			 "device" },
	[T_COPY] = { "copies", "Copies by kind and size (API calls)", V_SIZE, "process" },
	[T_MEM] = { "memory", "Memory operations by size", V_SIZE, "process" },
	[T_NVTX] = { "nvtx", "NVTX ranges by time", V_DURATION, "process" },
};

struct entry {
	int64_t pid;
	char *name;
	uint64_t failed;
	const struct gs_cuda_api *api; /* T_API: the API of that name, looked up once */
	bool api_known;
	struct gs_histogram h;
};

struct table {
	struct entry **e; /* each alone: pointers stay put as the array grows */
	size_t nr, cap;
	struct gs_addr_map *index; /* (pid, hash of name + probe) -> position + 1 */
	struct entry *other;	   /* keys past MAX_KEYS */
};

struct label {
	int64_t pid;
	char *name;
};

/* an async NVTX range begun ('b'), waiting for its end ('e') */
struct open_range {
	int64_t pid;
	uint64_t id;
	int64_t ts_ns;
	char *name;
};

struct gs_trace_stats {
	struct table t[T__NR];
	struct open_range open[MAX_OPEN]; /* name NULL: a free slot */
	size_t nr_open;
	uint64_t unended; /* begun, never ended, or begun past MAX_OPEN */
	struct label *labels;
	size_t nr_labels, cap_labels;
	struct gs_record_summary *cpu; /* record's summary, fed from the same rows */
	struct gs_gpu_summary *gpu;
	uint64_t rows;
};

struct gs_trace_stats *gs_trace_stats__new(void)
{
	struct gs_trace_stats *s = calloc(1, sizeof(*s));
	bool ok = s;

	for (int i = 0; ok && i < T__NR; i++)
		ok = (s->t[i].index = gs_addr_map__new()) != NULL;
	if (ok) {
		s->cpu = gs_record_summary__new();
		s->gpu = gs_gpu_summary__new();
		ok = s->cpu && s->gpu;
	}
	if (!ok) {
		gs_trace_stats__free(s);
		return NULL;
	}
	return s;
}

static void free_entry(struct entry *e)
{
	if (e)
		free(e->name);
	free(e);
}

void gs_trace_stats__free(struct gs_trace_stats *s)
{
	if (!s)
		return;
	for (int i = 0; i < T__NR; i++) {
		for (size_t k = 0; k < s->t[i].nr; k++)
			free_entry(s->t[i].e[k]);
		free(s->t[i].e);
		gs_addr_map__free(s->t[i].index);
	}
	for (size_t i = 0; i < s->nr_labels; i++)
		free(s->labels[i].name);
	free(s->labels);
	for (size_t i = 0; i < MAX_OPEN; i++)
		free(s->open[i].name);
	gs_record_summary__free(s->cpu);
	gs_gpu_summary__free(s->gpu);
	free(s);
}

uint64_t gs_trace_stats__rows(const struct gs_trace_stats *s)
{
	return s->rows;
}

uint64_t gs_trace_stats__unended(const struct gs_trace_stats *s)
{
	return s->unended + s->nr_open;
}

static uint64_t name_hash(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ULL;
	return h;
}

/* name cut at MAX_NAME_LEN bytes, in a new string; NULL on allocation failure */
static char *cut_name(const char *name)
{
	size_t n = strnlen(name, MAX_NAME_LEN);
	char *copy = malloc(n + 1);

	if (copy) {
		memcpy(copy, name, n);
		copy[n] = '\0';
	}
	return copy;
}

static struct entry *new_entry(int64_t pid, const char *name)
{
	struct entry *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->pid = pid;
	e->name = cut_name(name);
	if (!e->name) {
		free(e);
		return NULL;
	}
	gs_histogram__init(&e->h);
	return e;
}

static int append(struct table *t, struct entry *e)
{
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		struct entry **grown = realloc(t->e, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->e = grown;
		t->cap = cap;
	}
	t->e[t->nr++] = e;
	return 0;
}

/* The entry of (pid, name), made on first sight; past MAX_KEYS the one OTHER. NULL: ENOMEM */
static struct entry *entry_of(struct table *t, int64_t pid, const char *name)
{
	uint64_t h = name_hash(name), idx;
	struct entry *e;

	while (gs_addr_map__get(t->index, (pid_t)pid, h, &idx)) {
		e = t->e[idx - 1];
		if (e->pid == pid && !strncmp(e->name, name, MAX_NAME_LEN))
			return e;
		h++;
	}
	if (t->nr >= MAX_KEYS) {
		if (!t->other && (t->other = new_entry(-1, OTHER)) && append(t, t->other)) {
			free_entry(t->other);
			t->other = NULL;
		}
		return t->other;
	}
	e = new_entry(pid, name);
	if (!e || append(t, e)) {
		free_entry(e);
		return NULL;
	}
	if (gs_addr_map__set(t->index, (pid_t)pid, h, t->nr)) {
		t->nr--;
		free_entry(e);
		return NULL;
	}
	return e;
}

/* Counts value under (pid, name); the entry, or NULL on allocation failure. */
static struct entry *count_entry(struct gs_trace_stats *s, enum table_id id, int64_t pid,
				 const char *name, uint64_t value, bool failed)
{
	struct entry *e = entry_of(&s->t[id], pid, name);

	if (!e)
		return NULL;
	gs_histogram__add(&e->h, value);
	e->failed += failed;
	return e;
}

static int count(struct gs_trace_stats *s, enum table_id id, int64_t pid, const char *name,
		 uint64_t value, bool failed)
{
	return count_entry(s, id, pid, name, value, failed) ? 0 : -ENOMEM;
}

static const struct gs_cuda_api *api_by_name(const char *name)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 0; i < nr; i++)
		if (apis[i].name && !strcmp(apis[i].name, name))
			return &apis[i];
	return NULL;
}

/* enum gs_copy_kind of a name gs_copy_kind_name() gave; GS_COPY__MAX when none */
static unsigned int copy_kind(const char *name)
{
	for (unsigned int k = 0; k < GS_COPY__MAX; k++)
		if (!strcmp(gs_copy_kind_name(k), name))
			return k;
	return GS_COPY__MAX;
}

/* The CUPTI copy kind of a "Memcpy HtoD" row name; "other" for anything else. */
static uint8_t gpu_copy_kind(const char *name)
{
	if (!strncmp(name, "Memcpy ", 7))
		for (unsigned int k = 0; k < 256; k++)
			if (!strcmp(gs_gpu_copy_kind_name((uint8_t)k), name + 7))
				return (uint8_t)k;
	return 0;
}

static int add_label(struct gs_trace_stats *s, int64_t pid, const char *name)
{
	char *copy;

	for (size_t i = 0; i < s->nr_labels; i++) {
		if (s->labels[i].pid != pid)
			continue;
		if (!(copy = strndup(name, 256)))
			return -ENOMEM;
		free(s->labels[i].name); /* the last name given (after an exec) */
		s->labels[i].name = copy;
		return 0;
	}
	if (s->nr_labels >= MAX_LABELS)
		return 0;
	if (s->nr_labels == s->cap_labels) {
		size_t cap = s->cap_labels ? s->cap_labels * 2 : 16;
		struct label *grown = realloc(s->labels, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		s->labels = grown;
		s->cap_labels = cap;
	}
	if (!(copy = strndup(name, 256)))
		return -ENOMEM;
	s->labels[s->nr_labels++] = (struct label){ pid, copy };
	return 0;
}

static const char *label_of(const struct gs_trace_stats *s, int64_t pid)
{
	for (size_t i = 0; i < s->nr_labels; i++)
		if (s->labels[i].pid == pid)
			return s->labels[i].name;
	return "";
}

/* A CUDA API slice: the API table, and copies, memory operations, launches and syncs. */
static int add_api(struct gs_trace_stats *s, const struct gs_stats_row *row)
{
	struct entry *e = count_entry(s, T_API, row->pid, row->name, row->dur_ns, row->error);
	const struct gs_cuda_api *api;
	unsigned int kind;

	if (!e)
		return -ENOMEM;
	if (row->kernel)
		gs_record_summary__launch(s->cpu, row->kernel);
	if (row->kind) {
		kind = copy_kind(row->kind);
		if (!row->error && kind < GS_COPY__MAX)
			gs_record_summary__copy(s->cpu, kind, row->bytes);
		return count(s, T_COPY, row->pid, row->kind, row->bytes, row->error);
	}
	if (!e->api_known) { /* a row's API by its name: once per (process, name) */
		e->api = api_by_name(row->name);
		e->api_known = e->pid >= 0; /* OTHER holds many names: each row looks its up */
	}
	api = e->api;
	if (!api)
		return 0;
	if (api->shape == GS_SHAPE_SYNC)
		gs_record_summary__sync(s->cpu, (pid_t)row->pid, "", row->dur_ns);
	if (api->family == GS_FAM_MEM)
		return count(s, T_MEM, row->pid, row->name, row->has_bytes ? row->bytes : 0,
			     row->error);
	return 0;
}

static int add_gpu(struct gs_trace_stats *s, const struct gs_stats_row *row, bool kernel)
{
	struct gs_gpu_op op = {
		.kind = kernel				  ? GS_GPU_KERNEL
			: !strcmp(row->cat, "gpu_memcpy") ? GS_GPU_MEMCPY
							  : GS_GPU_MEMSET,
		.start_ns = (uint64_t)row->ts_ns,
		.end_ns = (uint64_t)row->ts_ns + row->dur_ns,
		.device = (uint32_t)row->pid,
		.name = row->name,
		.bytes = row->bytes,
	};
	int err;

	if (op.kind == GS_GPU_MEMCPY)
		op.copy_kind = gpu_copy_kind(row->name);
	err = gs_gpu_summary__add(s->gpu, &op);
	return err
		       ?: count(s, kernel ? T_KERNEL : T_GPU_COPY, row->pid, row->name, row->dur_ns,
				false);
}

static struct open_range *find_open(struct gs_trace_stats *s, int64_t pid, uint64_t id)
{
	for (size_t i = 0, seen = 0; i < MAX_OPEN && seen < s->nr_open; i++) {
		if (!s->open[i].name)
			continue;
		seen++;
		if (s->open[i].pid == pid && s->open[i].id == id)
			return &s->open[i];
	}
	return NULL;
}

/* An async range: 'b' waits (bounded), 'e' counts it under its begin's name. */
static int add_async(struct gs_trace_stats *s, const struct gs_stats_row *row)
{
	struct open_range *r = find_open(s, row->pid, row->id);
	int err;

	if (row->ph == 'e') {
		if (!r)
			return 0; /* an end without its begin: nothing to measure */
		s->rows++;
		err = count(s, T_NVTX, r->pid, r->name,
			    row->ts_ns > r->ts_ns ? (uint64_t)(row->ts_ns - r->ts_ns) : 0, false);
		free(r->name);
		r->name = NULL;
		s->nr_open--;
		return err;
	}
	if (r || !row->name) { /* the same id begun again: the first one never ended */
		s->unended += r != NULL;
		return 0;
	}
	for (size_t i = 0; i < MAX_OPEN; i++) {
		if (s->open[i].name)
			continue;
		s->open[i] =
			(struct open_range){ row->pid, row->id, row->ts_ns, cut_name(row->name) };
		if (!s->open[i].name)
			return -ENOMEM;
		s->nr_open++;
		return 0;
	}
	s->unended++;
	return 0;
}

int gs_trace_stats__add(struct gs_trace_stats *s, const struct gs_stats_row *row)
{
	if (row->ph == 'M')
		return row->label && row->name && !strcmp(row->name, "process_name")
			       ? add_label(s, row->pid, row->label)
			       : 0;
	if ((row->ph == 'b' || row->ph == 'e') && row->cat && !strcmp(row->cat, "nvtx"))
		return add_async(s, row);
	if (row->ph != 'X' || !row->cat || !row->name)
		return 0;
	s->rows++;
	if (!strcmp(row->cat, "cuda_runtime") || !strcmp(row->cat, "cuda_driver"))
		return add_api(s, row);
	if (!strcmp(row->cat, "kernel"))
		return add_gpu(s, row, true);
	if (!strcmp(row->cat, "gpu_memcpy") || !strcmp(row->cat, "gpu_memset"))
		return add_gpu(s, row, false);
	if (!strcmp(row->cat, "nvtx"))
		return count(s, T_NVTX, row->pid, row->name, row->dur_ns, false);
	s->rows--;
	return 0;
}

struct gs_record_summary *gs_trace_stats__record_summary(struct gs_trace_stats *s)
{
	return s->cpu;
}

void gs_trace_stats__print_summary(struct gs_trace_stats *s, FILE *f)
{
	for (size_t i = 0; i < s->nr_labels; i++)
		gs_record_summary__name(s->cpu, (pid_t)s->labels[i].pid, s->labels[i].name);
	gs_record_summary__print_tables(s->cpu, f);
	gs_gpu_summary__print(s->gpu, f);
}

static int cmp_total(const void *a, const void *b)
{
	const struct entry *x = *(const struct entry *const *)a,
			   *y = *(const struct entry *const *)b;

	if (x->h.sum != y->h.sum)
		return x->h.sum > y->h.sum ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* the figures of one entry, in the table's unit (ns or bytes) */
struct figures {
	uint64_t count, total, mean, p50, p99, max, failed;
};

static struct figures figures_of(const struct entry *e)
{
	const struct gs_histogram *h = &e->h;

	return (struct figures){
		.count = h->count,
		.total = h->sum,
		.mean = h->count ? h->sum / h->count : 0,
		.p50 = gs_histogram__quantile(h, 0.50),
		.p99 = gs_histogram__quantile(h, 0.99),
		.max = h->count ? h->max : 0,
		.failed = e->failed,
	};
}

static void text_who(FILE *f, const struct gs_trace_stats *s, const struct entry *e)
{
	char who[64], label[GS_TEXT_SAFE_LEN(24)];

	if (e->pid < 0)
		snprintf(who, sizeof(who), "-");
	else
		snprintf(who, sizeof(who), "%" PRId64 " %.24s", e->pid, label_of(s, e->pid));
	fprintf(f, "  %-28s", gs_text_safe(who, label, sizeof(label)));
}

static void text_table(FILE *f, const struct gs_trace_stats *s, enum table_id id)
{
	const struct table *t = &s->t[id];
	bool dur = descs[id].value == V_DURATION;

	fprintf(f, "%s:\n  %-28s %9s %12s %11s %11s %11s %8s  %s\n", descs[id].title, descs[id].who,
		"count", dur ? "total ms" : "total bytes", dur ? "mean us" : "mean B",
		dur ? "p50 us" : "p50 B", dur ? "p99 us" : "p99 B", "failed", "name");
	for (size_t i = 0; i < t->nr; i++) {
		struct figures g = figures_of(t->e[i]);

		text_who(f, s, t->e[i]);
		if (dur)
			fprintf(f, " %9" PRIu64 " %12.3f %11.3f %11.3f %11.3f", g.count,
				(double)g.total / 1e6, (double)g.mean / 1e3, (double)g.p50 / 1e3,
				(double)g.p99 / 1e3);
		else
			fprintf(f,
				" %9" PRIu64 " %12" PRIu64 " %11" PRIu64 " %11" PRIu64
				" %11" PRIu64,
				g.count, g.total, g.mean, g.p50, g.p99);
		fprintf(f, " %8" PRIu64 "  ", g.failed);
		gs_text_write(f, t->e[i]->name);
		fputc('\n', f);
	}
	fputc('\n', f);
}

/* A CSV field: quoted when it holds a separator, a quote or a line break; no control bytes. */
static void csv_field(FILE *f, const char *s)
{
	char safe[GS_TEXT_SAFE_LEN(MAX_NAME_LEN)];

	s = gs_text_safe(s, safe, sizeof(safe));
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_table(FILE *f, const struct gs_trace_stats *s, enum table_id id)
{
	const struct table *t = &s->t[id];

	for (size_t i = 0; i < t->nr; i++) {
		struct figures g = figures_of(t->e[i]);

		fprintf(f, "%s,%s,%" PRId64 ",", descs[id].id, descs[id].who, t->e[i]->pid);
		csv_field(f, label_of(s, t->e[i]->pid));
		fputc(',', f);
		csv_field(f, t->e[i]->name);
		fprintf(f,
			",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 "\n",
			descs[id].value == V_DURATION ? "ns" : "bytes", g.count, g.total, g.mean,
			g.p50, g.p99, g.max, g.failed);
	}
}

static void json_table(struct gs_json *j, const struct gs_trace_stats *s, enum table_id id)
{
	const struct table *t = &s->t[id];

	gs_json__begin_object(j, descs[id].id);
	gs_json__string(j, "title", descs[id].title);
	gs_json__string(j, "unit", descs[id].value == V_DURATION ? "ns" : "bytes");
	gs_json__begin_array(j, "rows");
	for (size_t i = 0; i < t->nr; i++) {
		struct figures g = figures_of(t->e[i]);

		gs_json__begin_object(j, NULL);
		gs_json__i64(j, descs[id].who, t->e[i]->pid);
		gs_json__string(j, "label", label_of(s, t->e[i]->pid));
		gs_json__string(j, "name", t->e[i]->name);
		gs_json__u64(j, "count", g.count);
		gs_json__u64(j, "total", g.total);
		gs_json__u64(j, "mean", g.mean);
		gs_json__u64(j, "p50", g.p50);
		gs_json__u64(j, "p99", g.p99);
		gs_json__u64(j, "max", g.max);
		gs_json__u64(j, "failed", g.failed);
		gs_json__end_object(j);
	}
	gs_json__end_array(j);
	gs_json__end_object(j);
}

int gs_trace_stats__print(struct gs_trace_stats *s, FILE *f, enum gs_stats_format fmt)
{
	struct gs_json j;

	for (int id = 0; id < T__NR; id++)
		if (s->t[id].nr)
			qsort(s->t[id].e, s->t[id].nr, sizeof(*s->t[id].e), cmp_total);
	if (fmt == GS_STATS_JSON) {
		gs_json__init(&j, f);
		gs_json__begin_object(&j, NULL);
		gs_json__u64(&j, "rows", s->rows);
		gs_json__u64(&j, "nvtx_unended", gs_trace_stats__unended(s));
		gs_json__begin_object(&j, "tables");
		for (int id = 0; id < T__NR; id++)
			json_table(&j, s, (enum table_id)id);
		gs_json__end_object(&j);
		gs_json__end_object(&j);
		fputc('\n', f);
	} else if (fmt == GS_STATS_CSV) {
		fprintf(f, "table,by,id,label,name,unit,count,total,mean,p50,p99,max,failed\n");
		for (int id = 0; id < T__NR; id++)
			csv_table(f, s, (enum table_id)id);
	} else {
		for (int id = 0; id < T__NR; id++)
			if (s->t[id].nr)
				text_table(f, s, (enum table_id)id);
		if (!s->rows)
			fprintf(f, "no CUDA, GPU or NVTX rows in the trace\n");
		if (gs_trace_stats__unended(s))
			fprintf(f, "%" PRIu64 " NVTX ranges begun and never ended: not counted\n",
				gs_trace_stats__unended(s));
	}
	return fflush(f) || ferror(f) ? -EIO : 0;
}
