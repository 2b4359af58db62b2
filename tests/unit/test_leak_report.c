// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_leak_report.c: grouping, --min-age, --top, failures; the JSON keys of gpusnoop-leaks(8). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>
#include "profilers/cuda/api.h"
#include "profilers/leak_report.h"
#include "profilers/mem_model.h"
#include "tests/unit/harness.h"
#include "user/stack_table.h"
#include "user/symcache.h"

/* above PID_MAX_LIMIT: never a live process, so stacks stay unsymbolized and fast */
#define NO_PID 0x7ffffff0
#define S      1000000000ULL

/*
 * Allocation failures on demand, for the error paths: while armed, the fail_at-th call of
 * malloc/calloc/realloc from now returns NULL; live counts blocks made minus blocks freed.
 */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);

static struct {
	bool armed;
	long calls, fail_at, live;
} inject;

static bool should_fail(void)
{
	return inject.armed && inject.calls++ == inject.fail_at;
}

void *malloc(size_t n)
{
	void *p = should_fail() ? NULL : __libc_malloc(n);

	inject.live += inject.armed && p;
	if (!p)
		errno = ENOMEM;
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p = should_fail() ? NULL : __libc_calloc(n, size);

	inject.live += inject.armed && p;
	if (!p)
		errno = ENOMEM;
	return p;
}

void *realloc(void *old, size_t n)
{
	void *p = should_fail() ? NULL : __libc_realloc(old, n);

	inject.live += inject.armed && p && !old;
	if (!p)
		errno = ENOMEM;
	return p;
}

void free(void *p)
{
	inject.live -= inject.armed && p;
	__libc_free(p);
}

static void arm(long fail_at)
{
	inject = (typeof(inject)){ .armed = true, .fail_at = fail_at };
}

struct fixture {
	struct gs_symcache *cache;
	struct gs_stack_table *stacks;
	struct gs_mem_model m;
};

static bool fixture_open(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	fx->cache = gs_symcache__new();
	fx->stacks = fx->cache ? gs_stack_table__new(fx->cache) : NULL;
	if (!fx->stacks)
		return false;
	gs_mem_model__init(&fx->m, fx->stacks, fx->cache, true);
	return true;
}

static void fixture_close(struct fixture *fx)
{
	if (fx->stacks)
		gs_mem_model__release(&fx->m);
	gs_stack_table__free(fx->stacks);
	gs_symcache__free(fx->cache);
}

static uint16_t api_id(const char *name)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 0; i < nr; i++)
		if (!strcmp(apis[i].name, name))
			return apis[i].id;
	return 0;
}

/* an allocation call returning at ts from the stack whose only frame is site */
static void alloc(struct fixture *fx, const char *api, uint64_t ts, uint64_t ptr, uint64_t size,
		  int32_t ret, uint64_t site)
{
	struct gs_mem_alloc e = {
		.hdr = { .type = GS_EV_MEM_ALLOC, .ts_ns = ts, .pid = NO_PID, .tid = 1 },
		.ptr = ret ? 0 : ptr,
		.size = size,
		.ret = ret,
		.api = api_id(api),
		.nr_frames = 1,
		.frames = { site },
	};
	struct gs_mem_effect effect;

	GS_EXPECT_EQ(gs_mem_model__alloc(&fx->m, &e, &effect), 0);
}

static void cuda_free(struct fixture *fx, uint64_t ptr, int32_t ret)
{
	struct gs_mem_free e = { .hdr = { .pid = NO_PID, .tid = 1 }, .ptr = ptr };
	struct gs_mem_free_ret r = { .hdr = { .pid = NO_PID, .tid = 1 }, .ptr = ptr, .ret = ret };
	struct gs_mem_effect effect;

	gs_mem_model__free(&fx->m, &e, &effect);
	gs_mem_model__free_ret(&fx->m, &r, &effect);
}

static void tensor(struct fixture *fx, uint8_t device_type, uint64_t ptr, uint64_t size)
{
	struct gs_torch_mem e = {
		.hdr = { .ts_ns = 1 * S, .pid = NO_PID, .tid = 1 },
		.ptr = ptr,
		.size = size,
		.source = device_type == GS_TORCH_DEV_CPU ? GS_TORCH_SRC_CPU : GS_TORCH_SRC_USDT,
		.op = GS_TORCH_OP_ALLOC,
		.device_type = device_type,
		.nr_frames = 1,
		.frames = { 0x7000 },
	};
	struct gs_mem_effect effect;

	GS_EXPECT_EQ(gs_mem_model__tensor(&fx->m, &e, &effect), 0);
}

/* Renders the report of the one process at now, with min_age and top, into a string. */
static char *render(struct fixture *fx, uint64_t now, double min_age_s, size_t top, bool json)
{
	struct gs_leak_proc_report proc;
	struct gs_leak_report r = { .reason = "final",
				    .now_ns = now,
				    .min_age_s = min_age_s,
				    .top = top,
				    .procs = &proc,
				    .nr_procs = 1 };
	struct gs_mem_proc *p = gs_mem_model__proc(&fx->m, NO_PID, false);
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!p || gs_leak_proc_report__build(&proc, &fx->m, p, "worker", now,
					     (uint64_t)(min_age_s * 1e9)))
		return NULL;
	f = open_memstream(&text, &len);
	if (f && json)
		gs_leak_report__write_json(f, &r, fx->stacks);
	else if (f)
		gs_leak_report__write_text(f, &r, fx->stacks);
	if (f)
		fclose(f);
	gs_leak_proc_report__release(&proc);
	return text;
}

static yajl_val get(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };

	return yajl_tree_get(v, path, yajl_t_any);
}

static long long num(yajl_val v, const char *key)
{
	yajl_val n = get(v, key);

	return YAJL_IS_INTEGER(n) ? YAJL_GET_INTEGER(n) : -1;
}

/* the only process of a rendered JSON report; *doc to free */
static yajl_val json_proc(char *text, yajl_val *doc)
{
	yajl_val procs;

	*doc = text ? yajl_tree_parse(text, NULL, 0) : NULL;
	procs = get(*doc, "processes");
	return YAJL_IS_ARRAY(procs) && procs->u.array.len == 1 ? procs->u.array.values[0] : NULL;
}

static size_t array_len(yajl_val v, const char *key)
{
	yajl_val a = get(v, key);

	return YAJL_IS_ARRAY(a) ? a->u.array.len : (size_t)-1;
}

GS_TEST(groups_by_stack_and_api_largest_first)
{
	struct fixture fx;
	struct gs_leak_proc_report r = { 0 };
	struct gs_mem_proc *p;

	if (!GS_EXPECT(fixture_open(&fx)))
		goto out;
	alloc(&fx, "cudaMalloc", 3 * S, 0x1000, 100, 0, 0x1111);
	alloc(&fx, "cudaMalloc", 2 * S, 0x2000, 50, 0, 0x1111);
	alloc(&fx, "cudaMallocManaged", 4 * S, 0x3000, 120, 0, 0x1111); /* same stack, other API */
	alloc(&fx, "cudaMalloc", 5 * S, 0x4000, 400, 0, 0x2222);
	p = gs_mem_model__proc(&fx.m, NO_PID, false);
	if (!GS_EXPECT(p) ||
	    !GS_EXPECT_EQ(gs_leak_proc_report__build(&r, &fx.m, p, "w", 10 * S, 0), 0))
		goto out;
	GS_EXPECT_EQ(r.outstanding_bytes, 670);
	GS_EXPECT_EQ(r.outstanding_allocations, 4);
	if (!GS_EXPECT_EQ(r.nr_groups, 3))
		goto out;
	GS_EXPECT_EQ(r.groups[0].bytes, 400);
	GS_EXPECT_EQ(r.groups[1].bytes, 150);
	GS_EXPECT_EQ(r.groups[1].count, 2);
	GS_EXPECT_EQ(r.groups[1].oldest_ts_ns, 2 * S);
	GS_EXPECT_EQ(r.groups[1].api, api_id("cudaMalloc"));
	GS_EXPECT_EQ(r.groups[2].api, api_id("cudaMallocManaged"));
	GS_EXPECT_EQ(r.groups[1].stack_id, r.groups[2].stack_id);
	GS_EXPECT(r.groups[0].stack_id != r.groups[1].stack_id);
out:
	gs_leak_proc_report__release(&r);
	fixture_close(&fx);
}

GS_TEST(min_age_leaves_young_allocations_out)
{
	struct fixture fx;
	yajl_val doc = NULL, p;
	char *text = NULL;

	if (!GS_EXPECT(fixture_open(&fx)))
		goto out;
	alloc(&fx, "cudaMalloc", 1 * S, 0x1000, 100, 0, 0x1111);
	alloc(&fx, "cudaMalloc", 9 * S, 0x2000, 7, 0, 0x1111);
	alloc(&fx, "cudaMalloc", 9 * S, 0x3000, 9, 0, 0x2222);
	text = render(&fx, 10 * S, 5.0, 0, true);
	p = json_proc(text, &doc);
	if (!GS_EXPECT(p))
		goto out;
	GS_EXPECT_EQ(num(p, "outstanding_bytes"), 100);
	GS_EXPECT_EQ(num(p, "outstanding_allocations"), 1);
	GS_EXPECT_EQ(num(p, "stacks_total"), 1);
	GS_EXPECT(YAJL_IS_DOUBLE(get(doc, "min_age_s")) &&
		  YAJL_GET_DOUBLE(get(doc, "min_age_s")) == 5.0);
	/* exactly the age: in */
	free(text);
	text = render(&fx, 10 * S, 1.0, 0, true);
	yajl_tree_free(doc);
	p = json_proc(text, &doc);
	GS_EXPECT_EQ(num(p, "outstanding_bytes"), 116);
out:
	yajl_tree_free(doc);
	free(text);
	fixture_close(&fx);
}

GS_TEST(top_cuts_the_stacks_shown_not_the_totals)
{
	struct fixture fx;
	yajl_val doc = NULL, p;
	char *text = NULL;

	if (!GS_EXPECT(fixture_open(&fx)))
		goto out;
	alloc(&fx, "cudaMalloc", 1 * S, 0x1000, 300, 0, 0x1111);
	alloc(&fx, "cudaMalloc", 1 * S, 0x2000, 200, 0, 0x2222);
	alloc(&fx, "cudaMalloc", 1 * S, 0x3000, 100, 0, 0x3333);
	text = render(&fx, 2 * S, 0, 1, true);
	p = json_proc(text, &doc);
	if (!GS_EXPECT(p))
		goto out;
	GS_EXPECT_EQ(num(p, "stacks_total"), 3);
	if (GS_EXPECT_EQ(array_len(p, "stacks"), 1))
		GS_EXPECT_EQ(num(get(p, "stacks")->u.array.values[0], "bytes"), 300);
	GS_EXPECT_EQ(num(p, "outstanding_bytes"), 600);
	free(text);
	text = render(&fx, 2 * S, 0, 1, false);
	GS_EXPECT(text && strstr(text, "... 2 more stacks (--top)\n"));
	free(text);
	text = render(&fx, 2 * S, 0, 0, false); /* 0: all */
	GS_EXPECT(text && !strstr(text, "more stacks"));
out:
	yajl_tree_free(doc);
	free(text);
	fixture_close(&fx);
}

GS_TEST(failed_free_restores_unknown_free_is_counted)
{
	struct fixture fx;
	yajl_val doc = NULL, p, stacks;
	char *text = NULL;

	if (!GS_EXPECT(fixture_open(&fx)))
		goto out;
	alloc(&fx, "cudaMalloc", 1 * S, 0x1000, 64, 0, 0x1111);
	cuda_free(&fx, 0x1000, 1); /* cudaErrorInvalidValue: the memory is still held */
	cuda_free(&fx, 0xdead, 0); /* never seen allocated */
	text = render(&fx, 3 * S, 0, 0, true);
	p = json_proc(text, &doc);
	if (!GS_EXPECT(p))
		goto out;
	GS_EXPECT_EQ(num(p, "outstanding_bytes"), 64);
	GS_EXPECT_EQ(num(p, "failed_frees"), 1);
	GS_EXPECT_EQ(num(p, "unknown_frees"), 1);
	stacks = get(p, "stacks");
	if (GS_EXPECT(YAJL_IS_ARRAY(stacks) && stacks->u.array.len == 1))
		GS_EXPECT(YAJL_GET_DOUBLE(get(stacks->u.array.values[0], "oldest_age_s")) == 2.0);
out:
	yajl_tree_free(doc);
	free(text);
	fixture_close(&fx);
}

/* the (api, error, count) of failure i, as "cudaMalloc 2 x3" */
static void failure_line(yajl_val p, size_t i, char *buf, size_t len)
{
	yajl_val f = get(p, "failures"), g;

	buf[0] = '\0';
	if (!YAJL_IS_ARRAY(f) || i >= f->u.array.len)
		return;
	g = f->u.array.values[i];
	snprintf(buf, len, "%s %lld x%lld %lld", YAJL_GET_STRING(get(g, "api")), num(g, "error"),
		 num(g, "count"), num(g, "bytes_requested"));
}

GS_TEST(failures_grouped_by_stack_and_error)
{
	struct fixture fx;
	yajl_val doc = NULL, p;
	char *text = NULL, line[128];

	if (!GS_EXPECT(fixture_open(&fx)))
		goto out;
	alloc(&fx, "cudaMalloc", 1 * S, 0, 100, GS_CUDA_ERROR_OUT_OF_MEMORY, 0x1111);
	alloc(&fx, "cudaMalloc", 1 * S, 0, 200, GS_CUDA_ERROR_OUT_OF_MEMORY, 0x1111);
	alloc(&fx, "cudaMalloc", 1 * S, 0, 300, GS_CUDA_ERROR_OUT_OF_MEMORY, 0x1111);
	alloc(&fx, "cudaMalloc", 1 * S, 0, 5, 1, 0x1111); /* other error */
	alloc(&fx, "cudaMalloc", 1 * S, 0, 7, GS_CUDA_ERROR_OUT_OF_MEMORY, 0x2222); /* stack */
	alloc(&fx, "cudaMalloc", 1 * S, 0, 7, GS_CUDA_ERROR_OUT_OF_MEMORY, 0x2222);
	text = render(&fx, 2 * S, 0, 0, true);
	p = json_proc(text, &doc);
	if (!GS_EXPECT(p))
		goto out;
	GS_EXPECT_EQ(num(p, "failed_allocations"), 6);
	GS_EXPECT_EQ(num(p, "outstanding_allocations"), 0);
	GS_EXPECT_EQ(array_len(p, "failures"), 3);
	failure_line(p, 0, line, sizeof(line));
	GS_EXPECT_STR_EQ(line, "cudaMalloc 2 x3 600");
	failure_line(p, 1, line, sizeof(line));
	GS_EXPECT_STR_EQ(line, "cudaMalloc 2 x2 14");
	failure_line(p, 2, line, sizeof(line));
	GS_EXPECT_STR_EQ(line, "cudaMalloc 1 x1 5");
	free(text);
	text = render(&fx, 2 * S, 0, 0, false);
	GS_EXPECT(text && strstr(text, "  FAILED 3x cudaMalloc (600 B requested): error 2 "
				       "cudaErrorMemoryAllocation\n"));
out:
	yajl_tree_free(doc);
	free(text);
	fixture_close(&fx);
}

/* A build that runs out of memory part-way leaves nothing for its caller to free. */
GS_TEST(failed_build_leaves_nothing_allocated)
{
	struct fixture fx;
	struct gs_leak_proc_report r;
	struct gs_mem_proc *p;
	long calls, leaked_at = -1;
	int err;

	if (!GS_EXPECT(fixture_open(&fx)))
		goto out;
	alloc(&fx, "cudaMalloc", 1 * S, 0x1000, 10, 0, 0x1111);
	tensor(&fx, GS_TORCH_DEV_CUDA, 0x5000, 100);
	p = gs_mem_model__proc(&fx.m, NO_PID, false);
	if (!GS_EXPECT(p))
		goto out;
	/* how many allocations a whole build makes, then fail each of them in turn */
	arm(-1);
	err = gs_leak_proc_report__build(&r, &fx.m, p, "w", 2 * S, 0);
	calls = inject.calls;
	gs_leak_proc_report__release(&r);
	inject.armed = false;
	GS_EXPECT_EQ(err, 0);
	GS_EXPECT(calls >= 4); /* two tables, each an index and its groups */
	for (long k = 0; k < calls; k++) {
		arm(k);
		err = gs_leak_proc_report__build(&r, &fx.m, p, "w", 2 * S, 0);
		inject.armed = false;
		if (err != -ENOMEM || inject.live || r.groups || r.tensor_groups)
			leaked_at = k;
	}
	GS_EXPECT_EQ(leaked_at, -1);
out:
	inject.armed = false;
	fixture_close(&fx);
}

#define MAX_KEYS 256
#define KEY_LEN	 48

struct keys {
	char k[MAX_KEYS][KEY_LEN];
	size_t nr;
};

static void add_key(struct keys *ks, const char *k, size_t len)
{
	for (size_t i = 0; i < ks->nr; i++)
		if (strlen(ks->k[i]) == len && !strncmp(ks->k[i], k, len))
			return;
	if (ks->nr < MAX_KEYS && len < KEY_LEN) {
		memcpy(ks->k[ks->nr], k, len);
		ks->k[ks->nr++][len] = '\0';
	}
}

/* "stacks[].memory" -> "memory", "frames[]" -> "frames"; NULL for what is no key name */
static const char *key_name(const char *tok, size_t len, size_t *out_len)
{
	const char *dot = memrchr(tok, '.', len);

	if (dot) {
		len -= (size_t)(dot + 1 - tok);
		tok = dot + 1;
	}
	if (len > 2 && !strncmp(tok + len - 2, "[]", 2))
		len -= 2;
	if (!len || strspn(tok, "abcdefghijklmnopqrstuvwxyz_*") < len)
		return NULL;
	*out_len = len;
	return tok;
}

/* The `backticked` names in one table row: its first cell only, or the whole row. */
static void row_keys(const char *row, bool first_cell, struct keys *ks)
{
	const char *end = first_cell ? strchr(row + 1, '|') : row + strlen(row);

	for (const char *t = strchr(row, '`'); t && t < end; t = strchr(t, '`')) {
		const char *close = strchr(t + 1, '`');
		const char *name;
		size_t len;

		if (!close || close > end)
			break;
		name = key_name(t + 1, (size_t)(close - t - 1), &len);
		if (name)
			add_key(ks, name, len);
		t = close + 1;
	}
}

/* The key names of the tables in the man page section under heading (up to the next). */
static bool readme_keys(const char *readme, const char *heading, bool first_cell, struct keys *ks)
{
	const char *line = strstr(readme, heading);

	if (!line)
		return false;
	for (line = strchr(line, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		const char *row = line + 1;

		if (!strncmp(row, "## ", 3) || !strncmp(row, "### ", 4))
			break;
		if (row[0] == '|' && strncmp(row, "|---", 4) && strncmp(row, "| field |", 9)) {
			char buf[2048];
			size_t len = strcspn(row, "\n");

			snprintf(buf, sizeof(buf), "%.*s", (int)len, row);
			row_keys(buf, first_cell, ks);
		}
	}
	return true;
}

/* Every object key of the document; the "lost" counters are gs_stat_name()'s, not these. */
static void json_keys(yajl_val v, struct keys *ks)
{
	if (YAJL_IS_ARRAY(v)) {
		for (size_t i = 0; i < v->u.array.len; i++)
			json_keys(v->u.array.values[i], ks);
	} else if (YAJL_IS_OBJECT(v)) {
		for (size_t i = 0; i < v->u.object.len; i++) {
			add_key(ks, v->u.object.keys[i], strlen(v->u.object.keys[i]));
			if (strcmp(v->u.object.keys[i], "lost"))
				json_keys(v->u.object.values[i], ks);
		}
	}
}

/* key is k, or k is a "prefix_*" that covers it */
static bool covers(const char *k, const char *key)
{
	size_t len = strlen(k);

	if (len && k[len - 1] == '*')
		return !strncmp(k, key, len - 1);
	return !strcmp(k, key);
}

static bool any_covers(const struct keys *ks, const char *key, bool documented)
{
	for (size_t i = 0; i < ks->nr; i++)
		if (documented ? covers(ks->k[i], key) : covers(key, ks->k[i]))
			return true;
	return false;
}

static char *read_readme(void)
{
	FILE *f = fopen("scripts/man/sections/gpusnoop-leaks.8.md", "re");
	char *text = f ? calloc(1, 1 << 20) : NULL;

	if (text && !fread(text, 1, (1 << 20) - 1, f)) {
		free(text);
		text = NULL;
	}
	if (f)
		fclose(f);
	return text;
}

/* The leak report's JSON writes exactly the keys gpusnoop-leaks(8)'s tables name. */
GS_TEST(json_keys_are_the_man_page_tables)
{
	static const char *const sections[] = { "### JSON report", "### What `leaks` shows" };
	struct keys *documented = calloc(1, sizeof(*documented));
	struct keys *named = calloc(1, sizeof(*named)), *written = calloc(1, sizeof(*written));
	char *readme = read_readme(), *text = NULL, missing[1024] = "", unwritten[1024] = "";
	struct fixture fx;
	yajl_val doc = NULL;

	if (!GS_EXPECT(readme && documented && named && written) || !GS_EXPECT(fixture_open(&fx)))
		goto out;
	for (size_t i = 0; i < 2; i++) {
		GS_EXPECT(readme_keys(readme, sections[i], false, documented));
		readme_keys(readme, sections[i], true, named);
	}
	alloc(&fx, "cudaMalloc", 1 * S, 0x1000, 64, 0, 0x1111);
	alloc(&fx, "cudaMalloc", 1 * S, 0, 64, GS_CUDA_ERROR_OUT_OF_MEMORY, 0x1111);
	tensor(&fx, GS_TORCH_DEV_CUDA, 0x5000, 100);
	tensor(&fx, GS_TORCH_DEV_CPU, 0x9000, 100);
	text = render(&fx, 2 * S, 0, 0, true);
	if (!GS_EXPECT(json_proc(text, &doc)))
		goto out;
	json_keys(doc, written);
	for (size_t i = 0; i < written->nr; i++)
		if (!any_covers(documented, written->k[i], true))
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 " %s", written->k[i]);
	for (size_t i = 0; i < named->nr; i++)
		if (!any_covers(written, named->k[i], false))
			snprintf(unwritten + strlen(unwritten),
				 sizeof(unwritten) - strlen(unwritten), " %s", named->k[i]);
	GS_EXPECT_STR_EQ(missing, "");	 /* written, but in no table */
	GS_EXPECT_STR_EQ(unwritten, ""); /* a table's field the report does not write */
	GS_EXPECT(written->nr > 40);
out:
	yajl_tree_free(doc);
	free(text);
	fixture_close(&fx);
	free(readme);
	free(documented);
	free(named);
	free(written);
}

/* Renders the one process at 2 s with the given place in a process tree, as text or JSON. */
static char *render_in_tree(struct fixture *fx, pid_t ppid, int32_t rank, int32_t local_rank,
			    bool json)
{
	struct gs_leak_proc_report proc;
	struct gs_leak_report r = {
		.reason = "final", .now_ns = 2 * S, .procs = &proc, .nr_procs = 1
	};
	struct gs_mem_proc *p = gs_mem_model__proc(&fx->m, NO_PID, false);
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	if (!p || gs_leak_proc_report__build(&proc, &fx->m, p, "worker", 2 * S, 0))
		return NULL;
	GS_EXPECT(proc.ppid == 0 && proc.rank == -1 && proc.local_rank == -1); /* none by default */
	proc.ppid = ppid;
	proc.rank = rank;
	proc.local_rank = local_rank;
	f = open_memstream(&text, &len);
	if (f && json)
		gs_leak_report__write_json(f, &r, fx->stacks);
	else if (f)
		gs_leak_report__write_text(f, &r, fx->stacks);
	if (f)
		fclose(f);
	gs_leak_proc_report__release(&proc);
	return text;
}

/* A process of a followed tree shows its parent and ranks; a root or rankless one does not. */
GS_TEST(parent_and_ranks_of_a_process_tree)
{
	char *plain = NULL, *ranked = NULL, *local = NULL, *json = NULL;
	yajl_val doc = NULL, proc;
	struct fixture fx;

	if (!GS_EXPECT(fixture_open(&fx)))
		return;
	alloc(&fx, "cudaMalloc", 1 * S, 0x1000, 64, 0, 0x1111);
	plain = render_in_tree(&fx, 0, -1, -1, false);
	ranked = render_in_tree(&fx, 41, 3, -1, false);
	local = render_in_tree(&fx, 41, 3, 1, false);
	json = render_in_tree(&fx, 41, 3, 1, true);
	GS_EXPECT(plain && strstr(plain, "pid 2147483632 (worker): 64 B outstanding"));
	GS_EXPECT(ranked && strstr(ranked, "pid 2147483632 (worker, parent 41, rank 3): "));
	GS_EXPECT(local && strstr(local, "(worker, parent 41, rank 3, local rank 1): "));
	proc = json_proc(json, &doc);
	GS_EXPECT(proc && num(proc, "ppid") == 41 && num(proc, "rank") == 3 &&
		  num(proc, "local_rank") == 1);
	yajl_tree_free(doc);
	free(plain);
	free(ranked);
	free(local);
	free(json);
	fixture_close(&fx);
}

GS_TEST_MAIN(groups_by_stack_and_api_largest_first, min_age_leaves_young_allocations_out,
	     top_cuts_the_stacks_shown_not_the_totals, failed_free_restores_unknown_free_is_counted,
	     failures_grouped_by_stack_and_error, failed_build_leaves_nothing_allocated,
	     json_keys_are_the_man_page_tables, parent_and_ranks_of_a_process_tree)
