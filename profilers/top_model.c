// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* top_model.c: `gpusnoop top`'s rows: per-process call counters, their rates, sort orders. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cuda/api.h"
#include "profilers/cuda/call.h"
#include "profilers/top_model.h"

void gs_top_counts__add_call(struct gs_top_counts *c, const struct gs_cuda_api *api,
			     const struct gs_cuda_call *e)
{
	struct gs_copy copy;

	if (!api)
		return;
	switch (api->family) {
	case GS_FAM_LAUNCH:
		c->launches++;
		break;
	case GS_FAM_SYNC:
		c->syncs++;
		/* a return stamped before its entry is a hostile or broken record: no time */
		if (e->hdr.ts_ns > e->entry_ts_ns)
			c->sync_ns += e->hdr.ts_ns - e->entry_ts_ns;
		break;
	case GS_FAM_COPY:
		if (!e->ret && gs_decode_copy(api, e, &copy)) {
			c->copies++;
			c->copy_bytes += copy.bytes;
		}
		break;
	default:
		break;
	}
}

void gs_top_model__init(struct gs_top_model *m, uint64_t start_ns)
{
	memset(m, 0, sizeof(*m));
	m->last_sample_ns = start_ns;
}

void gs_top_model__release(struct gs_top_model *m)
{
	for (size_t i = 0; i < m->nr_procs; i++)
		free(m->procs[i]);
	free(m->procs);
	gs_pid_index__release(&m->index);
	memset(m, 0, sizeof(*m));
}

static struct gs_top_proc *add_proc(struct gs_top_model *m, pid_t pid)
{
	struct gs_top_proc *p;

	if (m->nr_procs >= GS_TOP_MAX_PROCS) {
		m->refused++;
		return NULL;
	}
	if (m->nr_procs == m->cap_procs) {
		size_t cap = m->cap_procs ? m->cap_procs * 2 : 16;
		struct gs_top_proc **procs = realloc(m->procs, cap * sizeof(*procs));

		if (!procs)
			return NULL;
		m->procs = procs;
		m->cap_procs = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	if (gs_pid_index__set(&m->index, pid, m->nr_procs)) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	p->rank = p->local_rank = -1;
	m->procs[m->nr_procs++] = p;
	return p;
}

struct gs_top_proc *gs_top_model__proc(struct gs_top_model *m, pid_t pid, bool create)
{
	size_t pos;

	if (gs_pid_index__get(&m->index, pid, &pos))
		return m->procs[pos];
	return create ? add_proc(m, pid) : NULL;
}

void gs_top_model__remove(struct gs_top_model *m, pid_t pid)
{
	size_t pos, last;

	if (!gs_pid_index__get(&m->index, pid, &pos))
		return;
	free(m->procs[pos]);
	gs_pid_index__remove(&m->index, pid);
	last = --m->nr_procs;
	if (pos != last) {
		m->procs[pos] = m->procs[last];
		/* the moved entry keeps its index slot; only its position changes (no -ENOMEM) */
		gs_pid_index__set(&m->index, m->procs[pos]->pid, pos);
	}
}

void gs_top_model__remove_gone(struct gs_top_model *m)
{
	for (size_t i = m->nr_procs; i-- > 0;)
		if (m->procs[i]->gone)
			gs_top_model__remove(m, m->procs[i]->pid);
}

void gs_top_proc__launch(struct gs_top_proc *p, const char *kernel)
{
	const char *name = kernel ? kernel : GS_TOP_GRAPH_KERNEL;
	struct gs_top_kernel *k;

	for (size_t i = 0; i < p->nr_kernels; i++) {
		if (!strncmp(p->kernels[i].name, name, sizeof(p->kernels[i].name) - 1)) {
			p->kernels[i].launches++;
			return;
		}
	}
	if (p->nr_kernels == GS_TOP_MAX_KERNELS) {
		p->other_kernel_launches++;
		return;
	}
	k = &p->kernels[p->nr_kernels++];
	/* a longer name is cut: its launches count with any that share the first bytes */
	strncpy(k->name, name, sizeof(k->name) - 1);
	k->name[sizeof(k->name) - 1] = '\0';
	k->launches = 1;
}

static int kernel_cmp(const void *a, const void *b)
{
	const struct gs_top_kernel *x = a, *y = b;

	if (x->launches != y->launches)
		return x->launches < y->launches ? 1 : -1;
	return strcmp(x->name, y->name);
}

size_t gs_top_proc__kernels(const struct gs_top_proc *p, struct gs_top_kernel *out, size_t max)
{
	struct gs_top_kernel all[GS_TOP_MAX_KERNELS + 1];
	size_t nr = p->nr_kernels;

	memcpy(all, p->kernels, nr * sizeof(all[0]));
	if (p->other_kernel_launches) {
		strcpy(all[nr].name, GS_TOP_OTHER_KERNELS);
		all[nr++].launches = p->other_kernel_launches;
	}
	qsort(all, nr, sizeof(all[0]), kernel_cmp);
	if (nr > max)
		nr = max;
	memcpy(out, all, nr * sizeof(all[0]));
	return nr;
}

const struct gs_top_kernel *gs_top_proc__top_kernel(const struct gs_top_proc *p)
{
	const struct gs_top_kernel *best = NULL;

	for (size_t i = 0; i < p->nr_kernels; i++)
		if (!best || kernel_cmp(&p->kernels[i], best) < 0)
			best = &p->kernels[i];
	return best;
}

void gs_top_model__sample(struct gs_top_model *m, uint64_t now_ns)
{
	double secs = now_ns > m->last_sample_ns ? (double)(now_ns - m->last_sample_ns) / 1e9 : 0;

	for (size_t i = 0; i < m->nr_procs; i++) {
		struct gs_top_proc *p = m->procs[i];

		if (secs > 0) {
			p->launch_rate = (double)(p->total.launches - p->prev.launches) / secs;
			p->sync_rate = (double)(p->total.sync_ns - p->prev.sync_ns) / 1e9 / secs;
			p->copy_rate = (double)(p->total.copies - p->prev.copies) / secs;
		}
		p->prev = p->total;
		p->sampled = true;
	}
	m->last_sample_ns = now_ns;
}

/* a row's value under key, as a double: every column compares the same way */
static double sort_value(const struct gs_top_proc *p, enum gs_top_sort key)
{
	switch (key) {
	case GS_TOP_SORT_PID:
		return p->pid;
	case GS_TOP_SORT_RANK:
		return p->rank;
	case GS_TOP_SORT_MEM:
		return (double)p->mem_bytes;
	case GS_TOP_SORT_TORCH:
		return (double)p->torch_allocated;
	case GS_TOP_SORT_TENSORS:
		return (double)p->tensors;
	case GS_TOP_SORT_LAUNCHES:
		return p->launch_rate;
	case GS_TOP_SORT_SYNC:
		return p->sync_rate;
	case GS_TOP_SORT_COPIES:
		return p->copy_rate;
	case GS_TOP_SORT_OOMS:
		return (double)p->total.ooms;
	case GS_TOP_SORT__MAX:
		break;
	}
	return 0;
}

struct sort_ctx {
	enum gs_top_sort key;
	bool reverse;
};

/* a rate's tie (idle processes: 0/s each) is broken by the total: the busiest ever first */
static double tie_value(const struct gs_top_proc *p, enum gs_top_sort key)
{
	switch (key) {
	case GS_TOP_SORT_LAUNCHES:
		return (double)p->total.launches;
	case GS_TOP_SORT_SYNC:
		return (double)p->total.sync_ns;
	case GS_TOP_SORT_COPIES:
		return (double)p->total.copies;
	default:
		return 0;
	}
}

static bool before(const struct gs_top_proc *a, const struct gs_top_proc *b,
		   const struct sort_ctx *c)
{
	double x = sort_value(a, c->key), y = sort_value(b, c->key);

	if (x == y) {
		x = tie_value(a, c->key);
		y = tie_value(b, c->key);
	}
	if (x != y)
		return c->reverse ? x < y : x > y;
	return a->pid < b->pid;
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct gs_top_proc *x = *(struct gs_top_proc *const *)a;
	const struct gs_top_proc *y = *(struct gs_top_proc *const *)b;

	return before(x, y, ctx) ? -1 : before(y, x, ctx) ? 1 : 0;
}

size_t gs_top_model__rows(const struct gs_top_model *m, enum gs_top_sort key, bool reverse,
			  struct gs_top_proc **out, size_t max)
{
	struct sort_ctx c = { .key = key, .reverse = reverse };
	struct gs_top_proc **all;
	size_t nr = m->nr_procs < max ? m->nr_procs : max;

	if (!nr)
		return 0;
	/* all of them sorted, then the first max: n log n for -a's thousands of processes */
	all = malloc(m->nr_procs * sizeof(*all));
	if (!all)
		return 0;
	memcpy(all, m->procs, m->nr_procs * sizeof(*all));
	qsort_r(all, m->nr_procs, sizeof(*all), row_cmp, &c);
	memcpy(out, all, nr * sizeof(*out));
	free(all);
	return nr;
}

static const char *const sort_names[GS_TOP_SORT__MAX] = {
	[GS_TOP_SORT_PID] = "pid",	   [GS_TOP_SORT_RANK] = "rank",
	[GS_TOP_SORT_MEM] = "mem",	   [GS_TOP_SORT_TORCH] = "torch",
	[GS_TOP_SORT_TENSORS] = "tensors", [GS_TOP_SORT_LAUNCHES] = "launches",
	[GS_TOP_SORT_SYNC] = "sync",	   [GS_TOP_SORT_COPIES] = "copies",
	[GS_TOP_SORT_OOMS] = "ooms",
};

const char *gs_top_sort_name(enum gs_top_sort key)
{
	return (unsigned int)key < GS_TOP_SORT__MAX ? sort_names[key] : NULL;
}

int gs_top_sort_parse(const char *name)
{
	for (int i = 0; i < GS_TOP_SORT__MAX; i++)
		if (!strcmp(name, sort_names[i]))
			return i;
	return -EINVAL;
}
