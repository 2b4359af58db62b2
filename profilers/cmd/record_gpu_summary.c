// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record_gpu_summary.c: per-kernel GPU time, device busy fraction, copy throughput. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cmd/record_gpu_summary.h"
#include "profilers/leak_report.h"
#include "user/addr_map.h"
#include "user/histogram.h"
#include "user/text_escape.h"

#define TOP_KERNELS 20
#define MAX_DEVICES 64
#define COPY_KINDS  256

struct kernel_time {
	char *name;
	struct gs_histogram h;
};

struct interval {
	uint64_t start, end;
};

struct device_busy {
	struct interval *iv;
	size_t nr, cap;
};

struct copy_total {
	uint64_t count, bytes, ns;
};

struct gs_gpu_summary {
	struct gs_addr_map *by_name; /* (0, hash of name) -> index + 1 in kernels */
	struct kernel_time *kernels;
	size_t nr_kernels;
	struct device_busy devices[MAX_DEVICES];
	struct copy_total copies[COPY_KINDS];
	uint64_t records;
};

struct gs_gpu_summary *gs_gpu_summary__new(void)
{
	struct gs_gpu_summary *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->by_name = gs_addr_map__new();
	if (!s->by_name) {
		free(s);
		return NULL;
	}
	return s;
}

void gs_gpu_summary__free(struct gs_gpu_summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_kernels; i++)
		free(s->kernels[i].name);
	free(s->kernels);
	for (size_t i = 0; i < MAX_DEVICES; i++)
		free(s->devices[i].iv);
	gs_addr_map__free(s->by_name);
	free(s);
}

static uint64_t name_hash(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ULL;
	return h;
}

static struct kernel_time *kernel_of(struct gs_gpu_summary *s, const char *name)
{
	uint64_t h = name_hash(name), idx;
	struct kernel_time *grown;

	if (gs_addr_map__get(s->by_name, 0, h, &idx))
		return &s->kernels[idx - 1];
	grown = realloc(s->kernels, (s->nr_kernels + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	s->kernels = grown;
	grown = &s->kernels[s->nr_kernels];
	grown->name = strdup(name);
	if (!grown->name || gs_addr_map__set(s->by_name, 0, h, s->nr_kernels + 1)) {
		free(grown->name);
		return NULL;
	}
	gs_histogram__init(&grown->h);
	s->nr_kernels++;
	return grown;
}

static int add_interval(struct device_busy *d, uint64_t start, uint64_t end)
{
	struct interval *grown;

	if (d->nr == d->cap) {
		size_t cap = d->cap ? d->cap * 2 : 256;

		grown = realloc(d->iv, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		d->iv = grown;
		d->cap = cap;
	}
	d->iv[d->nr++] = (struct interval){ start, end };
	return 0;
}

int gs_gpu_summary__add(struct gs_gpu_summary *s, const struct gs_gpu_op *op)
{
	uint64_t ns = op->end_ns - op->start_ns;
	struct kernel_time *k;

	s->records++;
	if (op->kind == GS_GPU_KERNEL) {
		k = kernel_of(s, op->name ? op->name : "[unnamed]");
		if (!k)
			return -ENOMEM;
		gs_histogram__add(&k->h, ns);
	} else if (op->kind == GS_GPU_MEMCPY) {
		s->copies[op->copy_kind].count++;
		s->copies[op->copy_kind].bytes += op->bytes;
		s->copies[op->copy_kind].ns += ns;
	}
	if (op->device >= MAX_DEVICES)
		return 0;
	return add_interval(&s->devices[op->device], op->start_ns, op->end_ns);
}

static int cmp_total(const void *a, const void *b)
{
	const struct kernel_time *x = a, *y = b;

	if (x->h.sum != y->h.sum)
		return x->h.sum > y->h.sum ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void print_kernels(struct gs_gpu_summary *s, FILE *f)
{
	qsort(s->kernels, s->nr_kernels, sizeof(*s->kernels), cmp_total);
	gs_addr_map__free(s->by_name); /* indexes are stale now; nothing is added after print */
	s->by_name = NULL;
	fprintf(f, "  GPU kernels by device time:\n"
		   "       count    total ms     mean us      p99 us  name\n");
	for (size_t i = 0; i < s->nr_kernels && i < TOP_KERNELS; i++) {
		const struct gs_histogram *h = &s->kernels[i].h;

		fprintf(f, "    %8" PRIu64 " %11.3f %11.3f %11.3f  ", h->count,
			(double)h->sum / 1e6, (double)h->sum / (double)h->count / 1e3,
			(double)gs_histogram__quantile(h, 0.99) / 1e3);
		/* kernel names come from the traced process: no raw escapes to the terminal */
		gs_text_write(f, s->kernels[i].name);
		fputc('\n', f);
	}
	if (s->nr_kernels > TOP_KERNELS)
		fprintf(f, "    ... %zu more kernels\n", s->nr_kernels - TOP_KERNELS);
}

static int cmp_start(const void *a, const void *b)
{
	const struct interval *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* busy: the union of the intervals; span: first start to last end */
static void device_busy(struct device_busy *d, uint64_t *busy, uint64_t *span)
{
	uint64_t cur_start, cur_end, last = 0;

	qsort(d->iv, d->nr, sizeof(*d->iv), cmp_start);
	*busy = 0;
	cur_start = d->iv[0].start;
	cur_end = d->iv[0].end;
	for (size_t i = 0; i < d->nr; i++) {
		if (d->iv[i].end > last)
			last = d->iv[i].end;
		if (d->iv[i].start > cur_end) {
			*busy += cur_end - cur_start;
			cur_start = d->iv[i].start;
			cur_end = d->iv[i].end;
		} else if (d->iv[i].end > cur_end) {
			cur_end = d->iv[i].end;
		}
	}
	*busy += cur_end - cur_start;
	*span = last - d->iv[0].start;
}

void gs_gpu_summary__print(struct gs_gpu_summary *s, FILE *f)
{
	uint64_t busy, span;
	char bytes[32];

	if (!s->records)
		return;
	if (s->nr_kernels)
		print_kernels(s, f);
	for (size_t i = 0; i < MAX_DEVICES; i++) {
		if (!s->devices[i].nr)
			continue;
		device_busy(&s->devices[i], &busy, &span);
		fprintf(f, "  GPU %zu: busy %.1f%% of %.3f ms (first to last record)\n", i,
			span ? 100.0 * (double)busy / (double)span : 100.0, (double)span / 1e6);
	}
	for (size_t k = 0; k < COPY_KINDS; k++) {
		const struct copy_total *c = &s->copies[k];

		if (!c->count)
			continue;
		gs_format_bytes(c->bytes, bytes, sizeof(bytes));
		fprintf(f, "  GPU copies %-5s %4" PRIu64 " x, %10s in %.3f ms: %.2f GB/s\n",
			gs_gpu_copy_kind_name((uint8_t)k), c->count, bytes, (double)c->ns / 1e6,
			c->ns ? (double)c->bytes / (double)c->ns : 0.0);
	}
}
