// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record_summary.c: bounded counters: one entry per kernel name and per process. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/leak_report.h"
#include "profilers/timeline/record_summary.h"
#include "user/array.h"
#include "user/pid_index.h"
#include "user/text_escape.h"

#define TOP_KERNELS 10

struct kernel_count {
	char *name;
	uint64_t launches;
};

struct proc_sync {
	pid_t pid;
	char comm[64]; /* the trace's process name: "comm (rank R)" */
	struct gs_histogram durations;
};

struct gs_record_summary {
	struct kernel_count *kernels; /* open addressing by name */
	size_t nr_kernels, nr_slots;
	struct proc_sync *syncs; /* in order of first sync */
	size_t nr_syncs, cap_syncs;
	struct gs_pid_index sync_index; /* pid -> position in syncs */
	uint64_t copy_bytes[GS_COPY__MAX], copy_calls[GS_COPY__MAX];
	uint64_t tensor_allocs, tensor_frees, torch_ooms; /* torch-mem */
};

struct gs_record_summary *gs_record_summary__new(void)
{
	struct gs_record_summary *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->nr_slots = 64;
	s->kernels = calloc(s->nr_slots, sizeof(*s->kernels));
	if (!s->kernels) {
		free(s);
		return NULL;
	}
	return s;
}

void gs_record_summary__free(struct gs_record_summary *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nr_slots; i++)
		free(s->kernels[i].name);
	free(s->kernels);
	free(s->syncs);
	gs_pid_index__release(&s->sync_index);
	free(s);
}

static size_t name_hash(const char *name, size_t nr_slots)
{
	uint64_t h = 1469598103934665603ULL;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	return (size_t)h & (nr_slots - 1);
}

static struct kernel_count *slot_for(struct kernel_count *slots, size_t nr_slots, const char *name)
{
	size_t i = name_hash(name, nr_slots);

	while (slots[i].name && strcmp(slots[i].name, name))
		i = (i + 1) & (nr_slots - 1);
	return &slots[i];
}

static void grow_kernels(struct gs_record_summary *s)
{
	size_t nr_slots = s->nr_slots * 2;
	struct kernel_count *slots = calloc(nr_slots, sizeof(*slots));

	if (!slots)
		return; /* keep the old table: it still has room, only denser */
	for (size_t i = 0; i < s->nr_slots; i++)
		if (s->kernels[i].name)
			*slot_for(slots, nr_slots, s->kernels[i].name) = s->kernels[i];
	free(s->kernels);
	s->kernels = slots;
	s->nr_slots = nr_slots;
}

void gs_record_summary__launch(struct gs_record_summary *s, const char *kernel)
{
	struct kernel_count *k;

	if ((s->nr_kernels + 1) * 2 > s->nr_slots)
		grow_kernels(s);
	k = slot_for(s->kernels, s->nr_slots, kernel);
	if (!k->name) {
		if (s->nr_kernels + 1 >= s->nr_slots || !(k->name = strdup(kernel)))
			return;
		s->nr_kernels++;
	}
	k->launches++;
}

void gs_record_summary__sync(struct gs_record_summary *s, pid_t pid, const char *comm,
			     uint64_t dur_ns)
{
	struct proc_sync *p;
	size_t pos;

	if (gs_pid_index__get(&s->sync_index, pid, &pos)) {
		p = &s->syncs[pos];
	} else {
		if (GS_ARRAY_RESERVE(s->syncs, s->nr_syncs, s->cap_syncs, 16) ||
		    gs_pid_index__set(&s->sync_index, pid, s->nr_syncs))
			return;
		p = &s->syncs[s->nr_syncs++];
		p->pid = pid;
		snprintf(p->comm, sizeof(p->comm), "%s", comm);
		gs_histogram__init(&p->durations);
	}
	gs_histogram__add(&p->durations, dur_ns);
}

void gs_record_summary__copy(struct gs_record_summary *s, unsigned int kind, uint64_t bytes)
{
	if (kind >= GS_COPY__MAX)
		return;
	s->copy_bytes[kind] += bytes;
	s->copy_calls[kind]++;
}

static int cmp_launches(const void *a, const void *b)
{
	const struct kernel_count *x = a, *y = b;

	if (x->launches != y->launches)
		return x->launches > y->launches ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void print_kernels(const struct gs_record_summary *s, FILE *f)
{
	struct kernel_count *sorted = calloc(s->nr_kernels + 1, sizeof(*sorted));
	size_t n = 0;

	if (!sorted)
		return;
	for (size_t i = 0; i < s->nr_slots; i++)
		if (s->kernels[i].name)
			sorted[n++] = s->kernels[i];
	qsort(sorted, n, sizeof(*sorted), cmp_launches);
	fprintf(f, "  kernels by launches:\n");
	/* kernel names come from the traced binary: no raw escapes to the terminal */
	for (size_t i = 0; i < n && i < TOP_KERNELS; i++) {
		fprintf(f, "    %10" PRIu64 "  ", sorted[i].launches);
		gs_text_write(f, sorted[i].name);
		fputc('\n', f);
	}
	if (n > TOP_KERNELS)
		fprintf(f, "    ... %zu more kernels\n", n - TOP_KERNELS);
	free(sorted);
}

void gs_record_summary__name(struct gs_record_summary *s, pid_t pid, const char *comm)
{
	size_t pos;

	if (gs_pid_index__get(&s->sync_index, pid, &pos))
		snprintf(s->syncs[pos].comm, sizeof(s->syncs[pos].comm), "%s", comm);
}

void gs_record_summary__torch_mem(struct gs_record_summary *s, bool alloc)
{
	if (alloc)
		s->tensor_allocs++;
	else
		s->tensor_frees++;
}

void gs_record_summary__torch_oom(struct gs_record_summary *s)
{
	s->torch_ooms++;
}

void gs_record_summary__print(const struct gs_record_summary *s, FILE *f, uint64_t events,
			      uint64_t dropped, double seconds)
{
	fprintf(f, "gpusnoop record: %" PRIu64 " events in %.1f s, %" PRIu64 " dropped\n", events,
		seconds, dropped);
	gs_record_summary__print_tables(s, f);
	gs_record_summary__print_torch(s, f);
	if (dropped)
		fprintf(f, "  WARNING: %" PRIu64 " events were lost: the trace is incomplete\n",
			dropped);
}

void gs_record_summary__print_tables(const struct gs_record_summary *s, FILE *f)
{
	char bytes[32], comm[GS_TEXT_SAFE_LEN(64)];

	if (s->nr_kernels)
		print_kernels(s, f);
	for (size_t i = 0; i < s->nr_syncs; i++) {
		const struct gs_histogram *h = &s->syncs[i].durations;

		fprintf(f,
			"  sync: pid %d (%s): %" PRIu64 " call%s, total %.3f ms, p50 %.3f ms, "
			"p99 %.3f ms\n",
			(int)s->syncs[i].pid, gs_text_safe(s->syncs[i].comm, comm, sizeof(comm)),
			h->count, h->count == 1 ? "" : "s", (double)h->sum / 1e6,
			(double)gs_histogram__quantile(h, 0.50) / 1e6,
			(double)gs_histogram__quantile(h, 0.99) / 1e6);
	}
	for (unsigned int k = 0; k < GS_COPY__MAX; k++) {
		if (!s->copy_calls[k])
			continue;
		gs_format_bytes(s->copy_bytes[k], bytes, sizeof(bytes));
		fprintf(f, "  copies %-7s %12s in %" PRIu64 " call%s\n", gs_copy_kind_name(k),
			bytes, s->copy_calls[k], s->copy_calls[k] == 1 ? "" : "s");
	}
}

void gs_record_summary__print_torch(const struct gs_record_summary *s, FILE *f)
{
	if (s->tensor_allocs || s->tensor_frees || s->torch_ooms)
		fprintf(f,
			"  torch-mem: %" PRIu64 " tensor allocations, %" PRIu64 " frees, %" PRIu64
			" out-of-memory\n",
			s->tensor_allocs, s->tensor_frees, s->torch_ooms);
}
