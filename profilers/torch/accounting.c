// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* accounting.c: tensors and segments per process, allocated vs reserved per device, OOMs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/torch/accounting.h"
#include "profilers/torch/syms.h"
#include "user/array.h"
#include "user/log.h"
#include "user/proc_maps.h"
#include "user/stack_table.h"
#include "user/symcache.h"

#define MIN_BLOCK_SIZE 512 /* kMinBlockSize of CUDACachingAllocator.cpp */

uint64_t gs_torch_block_size(uint64_t requested)
{
	if (requested < MIN_BLOCK_SIZE)
		return MIN_BLOCK_SIZE;
	return (requested + MIN_BLOCK_SIZE - 1) / MIN_BLOCK_SIZE * MIN_BLOCK_SIZE;
}

void gs_torch_device_name(uint16_t key, char *buf, size_t len)
{
	if (key == GS_TORCH_DEV_UNKNOWN)
		snprintf(buf, len, "cuda:?");
	else if (key >> 8 == GS_TORCH_DEV_CPU)
		snprintf(buf, len, "cpu");
	else if (key >> 8 == GS_TORCH_DEV_CUDA)
		snprintf(buf, len, "cuda:%d", (int)(int8_t)(key & 0xff));
	else
		snprintf(buf, len, "device%d:%d", key >> 8, (int)(int8_t)(key & 0xff));
}

void gs_torch_acct__init(struct gs_torch_acct *m, struct gs_stack_table *stacks,
			 struct gs_symcache *symcache)
{
	memset(m, 0, sizeof(*m));
	m->stacks = stacks;
	m->symcache = symcache;
}

static void free_proc(struct gs_torch_proc *p)
{
	gs_alloc_table__free(p->blocks);
	gs_alloc_table__free(p->segments);
	free(p);
}

void gs_torch_acct__release(struct gs_torch_acct *m)
{
	for (size_t i = 0; i < m->nr_procs; i++)
		free_proc(m->procs[i]);
	free(m->procs);
	gs_pid_index__release(&m->index);
	memset(m, 0, sizeof(*m));
}

struct gs_torch_proc *gs_torch_acct__find(const struct gs_torch_acct *m, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&m->index, pid, &pos) ? m->procs[pos] : NULL;
}

/* the install's version, from the libc10 the process maps (read once) */
static void read_version(struct gs_torch_acct *m, struct gs_torch_proc *p)
{
	const struct gs_maps *maps = gs_symcache__maps(m->symcache, p->pid);
	char root[64];

	snprintf(root, sizeof(root), "/proc/%d/root", (int)p->pid);
	for (size_t i = 0; maps && i < maps->nr; i++) {
		const struct gs_mapping *mp = &maps->mappings[i];

		if (mp->path && gs_is_c10_name(mp->path)) {
			gs_torch_read_version(root, mp->path, p->version, sizeof(p->version));
			return;
		}
	}
}

static struct gs_torch_proc *get_proc(struct gs_torch_acct *m, pid_t pid)
{
	struct gs_torch_proc *p = gs_torch_acct__find(m, pid);

	if (p)
		return p;
	if (GS_ARRAY_RESERVE(m->procs, m->nr_procs, m->cap_procs, 8))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->blocks = gs_alloc_table__new();
	p->segments = gs_alloc_table__new();
	if (!p->blocks || !p->segments || gs_pid_index__set(&m->index, pid, m->nr_procs)) {
		free_proc(p);
		return NULL;
	}
	m->procs[m->nr_procs++] = p;
	read_version(m, p);
	return p;
}

void gs_torch_acct__remove(struct gs_torch_acct *m, struct gs_torch_proc *p)
{
	size_t pos;

	if (!gs_pid_index__get(&m->index, p->pid, &pos) || m->procs[pos] != p)
		return;
	gs_pid_index__remove(&m->index, p->pid);
	free_proc(p);
	/* the last entry fills the hole; its index entry follows (it exists: no allocation) */
	m->procs[pos] = m->procs[--m->nr_procs];
	if (pos < m->nr_procs)
		gs_pid_index__set(&m->index, m->procs[pos]->pid, pos);
}

void gs_torch_acct__clear(struct gs_torch_proc *p)
{
	gs_alloc_table__clear(p->blocks);
	gs_alloc_table__clear(p->segments);
	p->nr_devs = 0;
	p->unknown_device_segments = 0;
	p->source = 0;
	p->cpu = false;
}

static struct gs_torch_device *device(struct gs_torch_proc *p, uint16_t key)
{
	for (size_t i = 0; i < p->nr_devs; i++)
		if (p->devs[i].key == key)
			return &p->devs[i];
	if (p->nr_devs == sizeof(p->devs) / sizeof(p->devs[0]))
		return NULL;
	p->devs[p->nr_devs] = (struct gs_torch_device){ .key = key };
	return &p->devs[p->nr_devs++];
}

const struct gs_torch_device *gs_torch_proc__device(const struct gs_torch_proc *p, uint16_t key)
{
	for (size_t i = 0; i < p->nr_devs; i++)
		if (p->devs[i].key == key)
			return &p->devs[i];
	return NULL;
}

/*
 * Segments of unknown device under the block [ptr, ptr + size) learn their device from it
 * (an expandable segment's block can span several mapped pages).
 */
static void infer_segment_device(struct gs_torch_proc *p, uint64_t ptr, uint64_t size, uint16_t key)
{
	uint64_t end = ptr + (size ? size : 1);

	for (size_t i = 0; p->unknown_device_segments && i < gs_alloc_table__slots(p->segments);
	     i++) {
		struct gs_alloc *s = (struct gs_alloc *)gs_alloc_table__at(p->segments, i);
		struct gs_torch_device *from, *to;

		if (!s || s->api != GS_TORCH_DEV_UNKNOWN || end <= s->ptr ||
		    ptr >= s->ptr + s->size)
			continue;
		from = device(p, GS_TORCH_DEV_UNKNOWN);
		to = device(p, key);
		if (!from || !to)
			return;
		from->seg_bytes -= s->size;
		from->segments--;
		to->seg_bytes += s->size;
		to->segments++;
		s->api = key;
		p->unknown_device_segments--;
	}
}

/*
 * The device of the segment that holds ptr: a block placed at an address (2.15's
 * mallocWithAddress, symbol source) comes with none of its own.
 */
static uint16_t segment_device(const struct gs_torch_proc *p, uint64_t ptr)
{
	for (size_t i = 0, n = gs_alloc_table__slots(p->segments); i < n; i++) {
		const struct gs_alloc *s = gs_alloc_table__at(p->segments, i);

		if (s && ptr >= s->ptr && ptr - s->ptr < s->size)
			return s->api;
	}
	return GS_TORCH_DEV_UNKNOWN;
}

int gs_torch_acct__tensor(struct gs_torch_acct *m, const struct gs_torch_mem *e)
{
	struct gs_torch_proc *p = get_proc(m, (pid_t)e->hdr.pid);
	uint16_t key = GS_TORCH_DEV_KEY(e->device_type, e->device);
	bool cpu = e->device_type == GS_TORCH_DEV_CPU;
	struct gs_torch_device *d;
	struct gs_alloc a;
	bool replaced;
	int64_t id;

	if (!p)
		return -ENOMEM;
	if (cpu) {
		p->cpu = true;
		key = GS_TORCH_DEV_KEY(GS_TORCH_DEV_CPU, 0);
	} else if (!p->source) {
		p->source = e->source;
	} else if (p->source != e->source) {
		return 0; /* one source per process (-a may probe a file with two) */
	}
	if (!cpu && e->device < 0 && e->op == GS_TORCH_OP_ALLOC)
		key = segment_device(p, e->ptr);
	if (e->op == GS_TORCH_OP_FREE) {
		if (!gs_alloc_table__remove(p->blocks, e->ptr, &a)) {
			p->unknown_frees++;
		} else if ((d = device(p, a.api))) {
			d->block_bytes -= a.size;
			d->tensors--;
		}
	} else {
		id = gs_stack_table__intern(m->stacks, p->pid, (const uint64_t *)e->frames,
					    e->nr_frames);
		if (id < 0)
			return (int)id;
		a = (struct gs_alloc){
			.ptr = e->ptr,
			.size = cpu || (e->flags & GS_TORCH_F_TOTALS)
					? e->size
					: gs_torch_block_size(e->size),
			.ts_ns = e->hdr.ts_ns,
			.stack_id = (uint32_t)id,
			.api = key,
		};
		if (gs_alloc_table__insert(p->blocks, &a, &replaced))
			return -ENOMEM;
		if (replaced)
			gs_dbg("pid %u: tensor 0x%llx allocated again without a free we saw",
			       e->hdr.pid, (unsigned long long)e->ptr);
		d = device(p, key);
		if (d && !replaced) {
			d->block_bytes += a.size;
			d->tensors++;
		}
		if (!cpu)
			infer_segment_device(p, a.ptr, a.size, key);
	}
	d = e->flags & GS_TORCH_F_TOTALS ? device(p, key) : NULL;
	if (d) {
		d->totals = true;
		d->allocated = e->total_allocated;
		d->reported_reserved = e->total_reserved;
		d->seg_bytes_at_report = d->seg_bytes;
	}
	return 0;
}

static void add_segment(struct gs_torch_proc *p, uint64_t ptr, uint64_t size, uint64_t ts_ns)
{
	struct gs_alloc a = {
		.ptr = ptr, .size = size, .ts_ns = ts_ns, .api = GS_TORCH_DEV_UNKNOWN
	};
	struct gs_torch_device *d;
	bool replaced;

	if (gs_alloc_table__insert(p->segments, &a, &replaced) || replaced)
		return;
	d = device(p, GS_TORCH_DEV_UNKNOWN);
	if (d) {
		d->seg_bytes += size;
		d->segments++;
		p->unknown_device_segments++;
	}
}

static bool remove_segment(struct gs_torch_proc *p, uint64_t ptr)
{
	struct gs_torch_device *d;
	struct gs_alloc a;

	if (!gs_alloc_table__remove(p->segments, ptr, &a))
		return false;
	if (a.api == GS_TORCH_DEV_UNKNOWN)
		p->unknown_device_segments--;
	d = device(p, a.api);
	if (d) {
		d->seg_bytes -= a.size;
		d->segments--;
	}
	return true;
}

/* the return address of the CUDA call is in libc10_cuda: the caching allocator made it */
static bool from_caching_allocator(struct gs_torch_acct *m, pid_t pid, const __u64 *frames,
				   uint16_t nr)
{
	struct gs_frame f;

	if (!nr)
		return false;
	gs_symcache__resolve(m->symcache, pid, frames[0], &f);
	return f.module && gs_is_c10_cuda_name(f.module);
}

bool gs_torch_acct__segment_alloc(struct gs_torch_acct *m, const struct gs_mem_alloc *e)
{
	struct gs_torch_proc *p;

	if (!from_caching_allocator(m, (pid_t)e->hdr.pid, e->frames, e->nr_frames))
		return false;
	p = get_proc(m, (pid_t)e->hdr.pid);
	if (!p)
		return false;
	if (e->ret) {
		/* the allocator frees its cache and retries: not an OOM yet */
		p->failed_segments++;
		p->failed_segment_tid = e->hdr.tid;
		p->failed_segment_size = e->size;
		return true;
	}
	if (e->ptr)
		add_segment(p, e->ptr, e->size, e->hdr.ts_ns);
	return true;
}

bool gs_torch_acct__segment_free(struct gs_torch_acct *m, const struct gs_mem_free *e)
{
	struct gs_torch_proc *p = gs_torch_acct__find(m, (pid_t)e->hdr.pid);

	return p && remove_segment(p, e->ptr);
}

bool gs_torch_acct__segment_map(struct gs_torch_acct *m, const struct gs_event_hdr *hdr,
				uint64_t ptr, uint64_t size, const __u64 *frames, uint16_t nr)
{
	struct gs_torch_proc *p;

	if (!ptr || !from_caching_allocator(m, (pid_t)hdr->pid, frames, nr))
		return false;
	p = get_proc(m, (pid_t)hdr->pid);
	if (p)
		add_segment(p, ptr, size, hdr->ts_ns);
	return true;
}

bool gs_torch_acct__segment_unmap(struct gs_torch_acct *m, const struct gs_event_hdr *hdr,
				  uint64_t ptr)
{
	struct gs_torch_proc *p = gs_torch_acct__find(m, (pid_t)hdr->pid);

	return p && remove_segment(p, ptr);
}

int gs_torch_acct__oom(struct gs_torch_acct *m, const struct gs_torch_oom *e,
		       struct gs_torch_oom_info *out)
{
	struct gs_torch_proc *p = get_proc(m, (pid_t)e->hdr.pid);
	int64_t id;

	if (!p)
		return -ENOMEM;
	if (e->source == GS_TORCH_OOM_THROW && p->oom_reported_tid == e->hdr.tid) {
		p->oom_reported_tid = 0; /* the throw that follows the hook: the same OOM */
		return 0;
	}
	id = gs_stack_table__intern(m->stacks, p->pid, (const uint64_t *)e->frames, e->nr_frames);
	if (id < 0)
		return (int)id;
	p->ooms++;
	*out = (struct gs_torch_oom_info){
		.pid = p->pid,
		.source = e->source,
		.requested = e->size,
		.device = e->device < 0 ? GS_TORCH_DEV_UNKNOWN
					: GS_TORCH_DEV_KEY(e->device_type, e->device),
		.stack_id = (uint32_t)id,
		.allocated = e->total_allocated,
		.reserved = e->total_reserved,
	};
	if (e->source == GS_TORCH_OOM_REPORT) {
		/* PyTorch's counters; kept when they are the process's source anyway */
		struct gs_torch_device *d =
			p->source == GS_TORCH_SRC_REPORT ? device(p, out->device) : NULL;

		p->oom_reported_tid = e->hdr.tid;
		if (d) {
			d->totals = true;
			d->allocated = e->total_allocated;
			d->reported_reserved = e->total_reserved;
			d->seg_bytes_at_report = d->seg_bytes;
		}
	} else if (!out->requested && p->failed_segment_tid == e->hdr.tid) {
		out->requested = p->failed_segment_size;
		out->requested_is_segment = true;
	}
	return 1;
}

/* cached segments holding no tensor: what torch.cuda.empty_cache() would give back */
static uint64_t largest_free_segment(const struct gs_torch_proc *p, uint16_t key)
{
	uint64_t best = 0;

	for (size_t i = 0; i < gs_alloc_table__slots(p->segments); i++) {
		const struct gs_alloc *s = gs_alloc_table__at(p->segments, i);
		bool used = false;

		if (!s || s->api != key || s->size <= best)
			continue;
		for (size_t j = 0; j < gs_alloc_table__slots(p->blocks) && !used; j++) {
			const struct gs_alloc *b = gs_alloc_table__at(p->blocks, j);

			used = b && b->ptr >= s->ptr && b->ptr < s->ptr + s->size;
		}
		if (!used)
			best = s->size;
	}
	return best;
}

void gs_torch_proc__update(struct gs_torch_proc *p)
{
	/* entries that hold nothing (a free's unknown device, all segments placed) go */
	for (size_t i = 0; i < p->nr_devs;) {
		struct gs_torch_device *d = &p->devs[i];

		if (!d->totals && !d->tensors && !d->segments && !d->block_bytes && !d->seg_bytes)
			*d = p->devs[--p->nr_devs];
		else
			i++;
	}
	for (size_t i = 0; i < p->nr_devs; i++) {
		struct gs_torch_device *d = &p->devs[i];

		if (d->totals) {
			/* PyTorch's last word, moved by the segments given back or taken since */
			d->reserved = d->reported_reserved + d->seg_bytes - d->seg_bytes_at_report;
		} else {
			d->allocated = d->block_bytes;
			d->reserved = d->seg_bytes;
		}
		d->largest_free_segment = largest_free_segment(p, d->key);
	}
}
