// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gpu_summary.c: per-kernel GPU time, device busy fraction, copy throughput. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/timeline/gpu_summary.h"
#include "profilers/leak_report.h"
#include "user/addr_map.h"
#include "user/busy_union.h"
#include "user/histogram.h"
#include "user/text_escape.h"

#define TOP_KERNELS 20
#define MAX_DEVICES 64
#define COPY_KINDS  256
/* distinct kernel names kept (4 KiB of histogram each); later ones go to OTHER_KERNELS */
#define MAX_KERNEL_NAMES 1024
#define OTHER_KERNELS	 "[other kernels]"

struct kernel_time {
	char *name;
	struct gs_histogram h;
};

struct copy_total {
	uint64_t count, bytes, ns;
};

struct gs_gpu_summary {
	/* (0, hash of name + probe) -> index + 1 in kernels; names compared in full */
	struct gs_addr_map *by_name;
	struct kernel_time *kernels;
	size_t nr_kernels;
	struct kernel_time *other; /* names beyond MAX_KERNEL_NAMES, once there are such */
	uint64_t other_names;	   /* launches of those names: the first of each is not told */
	struct gs_busy_union devices[MAX_DEVICES]; /* fixed memory, whatever the record count */
	uint64_t beyond_devices;		   /* records of devices >= MAX_DEVICES */
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

static struct kernel_time *append_kernel(struct gs_gpu_summary *s, const char *name)
{
	struct kernel_time *grown = realloc(s->kernels, (s->nr_kernels + 1) * sizeof(*grown));

	if (!grown)
		return NULL;
	s->kernels = grown;
	grown = &s->kernels[s->nr_kernels];
	grown->name = strdup(name);
	if (!grown->name)
		return NULL;
	gs_histogram__init(&grown->h);
	s->nr_kernels++;
	return grown;
}

/*
 * The entry of name: two names with one 64-bit hash stay apart (the next free key is
 * probed, each compared by its full string). Past MAX_KERNEL_NAMES, the one OTHER_KERNELS.
 */
static struct kernel_time *kernel_of(struct gs_gpu_summary *s, const char *name)
{
	uint64_t h = name_hash(name), idx;
	struct kernel_time *k;

	while (gs_addr_map__get(s->by_name, 0, h, &idx)) {
		if (!strcmp(s->kernels[idx - 1].name, name))
			return &s->kernels[idx - 1];
		h++;
	}
	if (s->nr_kernels >= MAX_KERNEL_NAMES) {
		if (!s->other) /* the last append: the pointer stays valid until print */
			s->other = append_kernel(s, OTHER_KERNELS);
		return s->other;
	}
	k = append_kernel(s, name);
	if (k && gs_addr_map__set(s->by_name, 0, h, s->nr_kernels)) {
		free(k->name);
		s->nr_kernels--;
		return NULL;
	}
	return k;
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
		s->other_names += k == s->other;
		gs_histogram__add(&k->h, ns);
	} else if (op->kind == GS_GPU_MEMCPY) {
		s->copies[op->copy_kind].count++;
		s->copies[op->copy_kind].bytes += op->bytes;
		s->copies[op->copy_kind].ns += ns;
	}
	if (op->device >= MAX_DEVICES) {
		s->beyond_devices++;
		return 0;
	}
	gs_busy_union__add(&s->devices[op->device], op->start_ns, op->end_ns);
	return 0;
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
	if (s->other_names)
		fprintf(f, "    %" PRIu64 " launches of names beyond the first %d are under %s\n",
			s->other_names, MAX_KERNEL_NAMES, OTHER_KERNELS);
}

/* "busy 80.0%", or "busy 79.2% to 80.0%" once merged pieces make it a range */
static void print_busy(size_t dev, const struct gs_busy_union *u, FILE *f)
{
	uint64_t busy = gs_busy_union__busy(u), span = u->last - u->first;
	double hi = span ? 100.0 * (double)busy / (double)span : 100.0;

	fprintf(f, "  GPU %zu: busy ", dev);
	if (u->err_ns && span)
		fprintf(f, "%.1f%% to ", 100.0 * (double)(busy - u->err_ns) / (double)span);
	fprintf(f, "%.1f%% of %.3f ms (first to last record)\n", hi, (double)span / 1e6);
}

void gs_gpu_summary__print(struct gs_gpu_summary *s, FILE *f)
{
	char bytes[32];

	if (!s->records)
		return;
	if (s->nr_kernels)
		print_kernels(s, f);
	for (size_t i = 0; i < MAX_DEVICES; i++) {
		if (s->devices[i].count)
			print_busy(i, &s->devices[i], f);
	}
	if (s->beyond_devices)
		fprintf(f, "  GPU devices beyond %d: %" PRIu64 " records not in a busy time\n",
			MAX_DEVICES, s->beyond_devices);
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
