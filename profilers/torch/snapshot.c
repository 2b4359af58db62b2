// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* snapshot.c: PyTorch's memory snapshot pickle: segments, blocks, a ring of trace entries. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "profilers/torch/accounting.h"
#include "profilers/torch/snapshot.h"
#include "user/array.h"
#include "user/clock.h"
#include "user/pickle_writer.h"
#include "user/stack_table.h"

/* PyTorch's small pool: blocks up to 1 MiB, in 2 MiB segments (kSmallBuffer) */
#define SMALL_SEGMENT (2ULL << 20)
/* what a frame says where gpusnoop could not see the allocation */
#define BEFORE_ATTACH	  "<allocated before gpusnoop attached>"
#define SEG_BEFORE_ATTACH "<segment allocated before gpusnoop attached>"

void gs_torch_snap__init(struct gs_torch_snap *s, size_t max_entries)
{
	memset(s, 0, sizeof(*s));
	if (!max_entries)
		max_entries = GS_SNAP_DEFAULT_ENTRIES;
	s->max_entries = max_entries > GS_SNAP_MAX_ENTRIES ? GS_SNAP_MAX_ENTRIES : max_entries;
}

static void free_proc(struct gs_snap_proc *p)
{
	if (p && p->ring)
		munmap(p->ring, p->cap * sizeof(*p->ring));
	free(p);
}

void gs_torch_snap__release(struct gs_torch_snap *s)
{
	for (size_t i = 0; i < s->nr_procs; i++)
		free_proc(s->procs[i]);
	free(s->procs);
	gs_pid_index__release(&s->index);
	memset(s, 0, sizeof(*s));
}

struct gs_snap_proc *gs_torch_snap__find(const struct gs_torch_snap *s, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&s->index, pid, &pos) ? s->procs[pos] : NULL;
}

static struct gs_snap_proc *get_proc(struct gs_torch_snap *s, pid_t pid)
{
	struct gs_snap_proc *p = gs_torch_snap__find(s, pid);

	if (p)
		return p;
	if (GS_ARRAY_RESERVE(s->procs, s->nr_procs, s->cap_procs, 8))
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	if (gs_pid_index__set(&s->index, pid, s->nr_procs)) {
		free_proc(p);
		return NULL;
	}
	s->procs[s->nr_procs++] = p;
	return p;
}

int gs_torch_snap__record(struct gs_torch_snap *s, pid_t pid, const struct gs_snap_entry *e)
{
	struct gs_snap_proc *p = get_proc(s, pid);

	if (!p)
		return -ENOMEM;
	if (!p->ring) {
		/*
		 * Reserved whole, committed page by page as entries come: RSS is what was written,
		 * and all of it goes back at the process's end (a realloc'd ring would leave the
		 * daemon's heap fragmented by every PyTorch process it saw).
		 */
		void *ring = mmap(NULL, s->max_entries * sizeof(*p->ring), PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (ring == MAP_FAILED)
			return -ENOMEM;
		p->ring = ring;
		p->cap = s->max_entries;
	}
	if (p->nr < s->max_entries) {
		p->ring[p->nr++] = *e;
		p->head = p->nr % s->max_entries;
		return 0;
	}
	p->ring[p->head] = *e;
	p->head = (p->head + 1) % s->max_entries;
	p->dropped++;
	return 0;
}

void gs_torch_snap__proc_gone(struct gs_torch_snap *s, pid_t pid, bool exec)
{
	struct gs_snap_proc *p = gs_torch_snap__find(s, pid);
	size_t pos;

	if (!p)
		return;
	if (exec) {
		p->nr = p->head = 0;
		p->dropped = 0;
		if (p->ring) /* the pages go back; the mapping stays for the new image */
			madvise(p->ring, p->cap * sizeof(*p->ring), MADV_DONTNEED);
		return;
	}
	gs_pid_index__get(&s->index, pid, &pos);
	gs_pid_index__remove(&s->index, pid);
	free_proc(p);
	s->procs[pos] = s->procs[--s->nr_procs];
	if (pos < s->nr_procs)
		gs_pid_index__set(&s->index, s->procs[pos]->pid, pos);
}

/* one snapshot being written */
struct writer {
	struct gs_pickle pk;
	const struct gs_stack_table *stacks;
	uint32_t *stack_memo; /* memo index + 1 of each stack's frame list, 0: not written yet */
	size_t nr_stack_memo;
	uint32_t empty_memo, before_memo, seg_before_memo; /* + 1, 0: not written yet */
	int ndev;					   /* CUDA device indices 0..ndev-1 */
	int cpu_index; /* device_traces index of CPU tensors, -1: none */
	int ntraces;
	int64_t real_offset_ns;	 /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	struct gs_alloc *blocks; /* the CUDA blocks, by address */
	size_t nr_blocks;
	struct gs_alloc *known; /* addresses of known CUDA device, by address (entry_dev) */
	size_t nr_known;
	struct gs_snap_entry *allocs; /* the ring's allocations, by address and time */
	size_t nr_allocs;
};

static bool is_cpu(uint16_t key)
{
	return key != GS_TORCH_DEV_UNKNOWN && key >> 8 == GS_TORCH_DEV_CPU;
}

/* the CUDA device index of key, -1 when it has none (unknown, CPU, out of range) */
static int cuda_index(uint16_t key)
{
	int idx = (int8_t)(key & 0xff);

	if (key == GS_TORCH_DEV_UNKNOWN || key >> 8 != GS_TORCH_DEV_CUDA)
		return -1;
	return idx >= 0 && idx < GS_TORCH_MAX_DEVICES ? idx : -1;
}

/*
 * The device_traces index of key. CPU tensors come after the CUDA devices, where PyTorch's
 * own _profile_to_snapshot (torch/cuda/_memory_viz.py) puts them; a segment whose device was
 * never learned (no tensor seen in it) is drawn on device 0.
 */
static int dev_index(const struct writer *w, uint16_t key)
{
	int idx = cuda_index(key);

	if (is_cpu(key))
		return w->cpu_index >= 0 ? w->cpu_index : 0;
	return idx >= 0 ? idx : 0;
}

static void see_key(struct writer *w, uint16_t key)
{
	int idx = cuda_index(key);

	if (is_cpu(key) && w->cpu_index < 0)
		w->cpu_index = 0; /* placed after the CUDA devices below */
	if (idx >= w->ndev)
		w->ndev = idx + 1;
}

static void scan_devices(struct writer *w, const struct gs_torch_proc *tp,
			 const struct gs_snap_proc *sp)
{
	const struct gs_alloc_table *tables[2] = { tp ? tp->blocks : NULL,
						   tp ? tp->segments : NULL };

	w->ndev = 1;
	w->cpu_index = -1;
	for (size_t t = 0; t < 2; t++)
		for (size_t i = 0; tables[t] && i < gs_alloc_table__slots(tables[t]); i++) {
			const struct gs_alloc *a = gs_alloc_table__at(tables[t], i);

			if (a)
				see_key(w, a->api);
		}
	for (size_t i = 0; sp && i < sp->nr; i++)
		see_key(w, sp->ring[i].dev);
	if (w->cpu_index >= 0)
		w->cpu_index = w->ndev;
	w->ntraces = w->ndev + (w->cpu_index >= 0);
}

static void memo_or_get(struct writer *w, uint32_t *memo)
{
	if (*memo)
		gs_pickle__get(&w->pk, *memo - 1);
	else
		*memo = gs_pickle__put(&w->pk) + 1;
}

static void frame(struct writer *w, const char *file, int line, const char *name)
{
	gs_pickle__dict_begin(&w->pk);
	gs_pickle__key(&w->pk, "filename");
	gs_pickle__cstr(&w->pk, file ? file : "??");
	gs_pickle__key(&w->pk, "line");
	gs_pickle__int(&w->pk, line > 0 ? line : 0);
	gs_pickle__key(&w->pk, "name");
	gs_pickle__cstr(&w->pk, name ? name : "??");
	gs_pickle__dict_end(&w->pk);
}

/* a constant frame list: [] or one frame saying what is missing */
static void const_frames(struct writer *w, uint32_t *memo, const char *what)
{
	if (*memo) {
		gs_pickle__get(&w->pk, *memo - 1);
		return;
	}
	gs_pickle__list_begin(&w->pk);
	if (what)
		frame(w, "??", 0, what);
	gs_pickle__list_end(&w->pk);
	memo_or_get(w, memo);
}

/*
 * A stack as PyTorch's frames, innermost first as PyTorch writes them: Python frames with
 * their file and line, native ones with the function and the file mapped there.
 */
static void stack_frames(struct writer *w, uint32_t stack_id)
{
	const struct gs_stack *st = gs_stack_table__get(w->stacks, stack_id);
	uint32_t *memo = stack_id < w->nr_stack_memo ? &w->stack_memo[stack_id] : NULL;
	uint32_t none = 0;
	char name[64];

	if (!st) {
		const_frames(w, &w->empty_memo, NULL);
		return;
	}
	if (memo && *memo) {
		gs_pickle__get(&w->pk, *memo - 1);
		return;
	}
	gs_pickle__list_begin(&w->pk);
	for (uint32_t i = 0; i < st->nr_frames; i++) {
		const struct gs_frame *f = &st->frames[i];

		if (f->kind == GS_FRAME_PYTHON) {
			frame(w, f->file, f->line, f->symbol);
			continue;
		}
		if (!f->symbol)
			snprintf(name, sizeof(name), "0x%llx", (unsigned long long)f->address);
		frame(w, f->module, 0, f->symbol ? f->symbol : name);
	}
	gs_pickle__list_end(&w->pk);
	memo_or_get(w, memo ? memo : &none);
}

static int cmp_ptr(const void *a, const void *b)
{
	const struct gs_alloc *x = a, *y = b;

	return x->ptr < y->ptr ? -1 : x->ptr > y->ptr;
}

/* the entries of t whose device is CPU (cpu) or not, sorted by address; NULL and 0 if none */
static struct gs_alloc *sorted_copy(const struct gs_alloc_table *t, bool cpu, size_t *n)
{
	size_t count = t ? gs_alloc_table__count(t) : 0;
	struct gs_alloc *out = count ? calloc(count, sizeof(*out)) : NULL;

	*n = 0;
	for (size_t i = 0; out && i < gs_alloc_table__slots(t); i++) {
		const struct gs_alloc *a = gs_alloc_table__at(t, i);

		if (a && is_cpu(a->api) == cpu && *n < count)
			out[(*n)++] = *a;
	}
	if (*n)
		qsort(out, *n, sizeof(*out), cmp_ptr);
	return out;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct gs_snap_entry *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* The ring's allocations, sorted for requested(). 0 or -ENOMEM. */
static int ring_allocs(struct writer *w, const struct gs_snap_proc *sp)
{
	w->allocs = sp && sp->nr ? calloc(sp->nr, sizeof(*w->allocs)) : NULL;
	if (sp && sp->nr && !w->allocs)
		return -ENOMEM;
	for (size_t i = 0; sp && i < sp->nr; i++)
		if (sp->ring[i].action == GS_SNAP_ALLOC && sp->ring[i].requested)
			w->allocs[w->nr_allocs++] = sp->ring[i];
	if (w->nr_allocs)
		qsort(w->allocs, w->nr_allocs, sizeof(*w->allocs), cmp_entry);
	return 0;
}

/*
 * What block b's allocation asked for (PyTorch rounds it up to the block's size), from its
 * entry in the ring (same address, same time); its size when the ring no longer has it.
 */
static uint64_t requested(const struct writer *w, const struct gs_alloc *b, uint64_t size)
{
	struct gs_snap_entry key = { .addr = b->ptr, .ts_ns = b->ts_ns };
	const struct gs_snap_entry *e =
		w->nr_allocs ? bsearch(&key, w->allocs, w->nr_allocs, sizeof(key), cmp_entry)
			     : NULL;

	return e && e->requested <= size ? e->requested : size;
}

static void block(struct writer *w, uint64_t addr, uint64_t size, const struct gs_alloc *b)
{
	gs_pickle__dict_begin(&w->pk);
	gs_pickle__key(&w->pk, "address");
	gs_pickle__uint(&w->pk, addr);
	gs_pickle__key(&w->pk, "size");
	gs_pickle__uint(&w->pk, size);
	gs_pickle__key(&w->pk, "requested_size");
	gs_pickle__uint(&w->pk, b ? requested(w, b, size) : 0);
	gs_pickle__key(&w->pk, "state");
	gs_pickle__cstr(&w->pk, b ? "active_allocated" : "inactive");
	gs_pickle__key(&w->pk, "frames");
	if (b)
		stack_frames(w, b->stack_id);
	else
		const_frames(w, &w->empty_memo, NULL);
	gs_pickle__dict_end(&w->pk);
}

/*
 * Whether block b (the next by address) is drawn in segment s after what ends at *cursor, and
 * its size there: a block overlapping the one before (a free we missed) is left out, one
 * running past the segment's end is cut at it. The blocks then tile the segment, as
 * MemoryViz.js assumes (each block's address is the sum of the sizes before it).
 */
static bool tile(const struct gs_alloc *s, const struct gs_alloc *b, uint64_t cursor,
		 uint64_t *size)
{
	uint64_t end = s->ptr + s->size;

	if (b->ptr < cursor || b->ptr >= end)
		return false;
	*size = b->size > end - b->ptr ? end - b->ptr : b->size;
	return true;
}

/* the blocks of segment s: b[0..n) by address, the gaps between them inactive */
static void segment_blocks(struct writer *w, const struct gs_alloc *s, const struct gs_alloc *b,
			   size_t n)
{
	uint64_t cursor = s->ptr, end = s->ptr + s->size, size;

	gs_pickle__list_begin(&w->pk);
	for (size_t i = 0; i < n; i++) {
		if (!tile(s, &b[i], cursor, &size))
			continue;
		if (b[i].ptr > cursor)
			block(w, cursor, b[i].ptr - cursor, NULL);
		block(w, b[i].ptr, size, &b[i]);
		cursor = b[i].ptr + size;
	}
	if (cursor < end)
		block(w, cursor, end - cursor, NULL);
	gs_pickle__list_end(&w->pk);
}

/* One segment; orphan: a block whose segment was allocated before gpusnoop attached. */
static void segment(struct writer *w, const struct gs_alloc *s, const struct gs_alloc *b, size_t n,
		    bool orphan)
{
	uint64_t used = 0, asked = 0, cursor = s->ptr, size;

	for (size_t i = 0; i < n; i++) {
		if (!tile(s, &b[i], cursor, &size))
			continue;
		used += size;
		asked += requested(w, &b[i], size);
		cursor = b[i].ptr + size;
	}
	gs_pickle__dict_begin(&w->pk);
	gs_pickle__key(&w->pk, "device");
	gs_pickle__int(&w->pk, dev_index(w, s->api));
	gs_pickle__key(&w->pk, "address");
	gs_pickle__uint(&w->pk, s->ptr);
	gs_pickle__key(&w->pk, "total_size");
	gs_pickle__uint(&w->pk, s->size);
	gs_pickle__key(&w->pk, "stream");
	gs_pickle__int(&w->pk, 0);
	gs_pickle__key(&w->pk, "segment_type");
	gs_pickle__cstr(&w->pk, s->size <= SMALL_SEGMENT && !is_cpu(s->api) ? "small" : "large");
	gs_pickle__key(&w->pk, "segment_pool_id");
	gs_pickle__int(&w->pk, 0);
	gs_pickle__int(&w->pk, 0);
	gs_pickle__tuple2(&w->pk);
	gs_pickle__key(&w->pk, "allocated_size");
	gs_pickle__uint(&w->pk, used);
	gs_pickle__key(&w->pk, "active_size");
	gs_pickle__uint(&w->pk, used);
	gs_pickle__key(&w->pk, "requested_size");
	gs_pickle__uint(&w->pk, asked);
	gs_pickle__key(&w->pk, "frames");
	if (orphan)
		const_frames(w, &w->seg_before_memo, SEG_BEFORE_ATTACH);
	else
		const_frames(w, &w->empty_memo, NULL);
	gs_pickle__key(&w->pk, "blocks");
	segment_blocks(w, s, b, n);
	gs_pickle__dict_end(&w->pk);
}

/*
 * Segments by address with the blocks inside each. A block in no segment we saw sits in one
 * the allocator made before gpusnoop attached: it gets a segment of its own, its extent
 * unknown (frames say so). CPU tensors are a segment each: c10::alloc_cpu has no cache.
 */
static int segments(struct writer *w, const struct gs_torch_proc *tp)
{
	size_t nseg = 0, ncpu = 0, j = 0;
	struct gs_alloc *segs = sorted_copy(tp ? tp->segments : NULL, false, &nseg);
	struct gs_alloc *cpu = sorted_copy(tp ? tp->blocks : NULL, true, &ncpu);
	const struct gs_alloc *b = w->blocks;

	/* each copy is made whenever its table holds anything */
	if ((!segs && tp && gs_alloc_table__count(tp->segments)) ||
	    (!cpu && tp && gs_alloc_table__count(tp->blocks))) {
		free(segs);
		free(cpu);
		return -ENOMEM;
	}
	gs_pickle__list_begin(&w->pk);
	for (size_t i = 0; i <= nseg; i++) {
		uint64_t start = i < nseg ? segs[i].ptr : UINT64_MAX;
		size_t k;

		for (; j < w->nr_blocks && b[j].ptr < start; j++)
			segment(w, &b[j], &b[j], 1, true);
		if (i == nseg)
			break;
		for (k = j; k < w->nr_blocks && b[k].ptr - start < segs[i].size; k++)
			;
		segment(w, &segs[i], b + j, k - j, false);
		j = k;
	}
	for (size_t i = 0; i < ncpu; i++)
		segment(w, &cpu[i], &cpu[i], 1, false);
	gs_pickle__list_end(&w->pk);
	free(segs);
	free(cpu);
	return 0;
}

/*
 * What tells a segment's device, learned after its cudaMalloc from the tensors placed in it:
 * the CUDA blocks now, the ring's allocations and its segment frees (the segment table knew
 * the device by then). Sorted by address into w->known.
 */
static int known_devices(struct writer *w, const struct gs_snap_proc *sp)
{
	size_t n = w->nr_blocks + (sp ? sp->nr : 0);

	w->known = n ? calloc(n, sizeof(*w->known)) : NULL;
	if (n && !w->known)
		return -ENOMEM;
	for (size_t i = 0; i < w->nr_blocks; i++)
		w->known[w->nr_known++] = w->blocks[i];
	for (size_t i = 0; sp && i < sp->nr; i++) {
		const struct gs_snap_entry *e = &sp->ring[i];

		if (cuda_index(e->dev) >= 0 &&
		    (e->action == GS_SNAP_ALLOC || e->action == GS_SNAP_SEGMENT_FREE ||
		     e->action == GS_SNAP_SEGMENT_UNMAP))
			w->known[w->nr_known++] =
				(struct gs_alloc){ .ptr = e->addr, .api = e->dev };
	}
	if (w->nr_known)
		qsort(w->known, w->nr_known, sizeof(*w->known), cmp_ptr);
	return 0;
}

/* a segment entry's device, when only known from what w->known says about its range */
static int entry_dev(const struct writer *w, const struct gs_torch_proc *tp,
		     const struct gs_snap_entry *e)
{
	const struct gs_alloc *seg;
	size_t lo = 0, hi = w->nr_known;

	if (e->dev != GS_TORCH_DEV_UNKNOWN ||
	    (e->action != GS_SNAP_SEGMENT_ALLOC && e->action != GS_SNAP_SEGMENT_FREE &&
	     e->action != GS_SNAP_SEGMENT_MAP && e->action != GS_SNAP_SEGMENT_UNMAP))
		return dev_index(w, e->dev);
	seg = tp ? gs_alloc_table__find(tp->segments, e->addr) : NULL;
	if (seg && seg->api != GS_TORCH_DEV_UNKNOWN)
		return dev_index(w, seg->api);
	while (lo < hi) { /* the first address at or after the segment's start */
		size_t mid = lo + (hi - lo) / 2;

		if (w->known[mid].ptr < e->addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < w->nr_known && w->known[lo].ptr - e->addr < (e->size ? e->size : 1))
		return dev_index(w, w->known[lo].api);
	return 0;
}

static const char *action_name(uint8_t action, bool completed)
{
	switch (action) {
	case GS_SNAP_ALLOC:
		return "alloc";
	case GS_SNAP_FREE:
		return completed ? "free_completed" : "free_requested";
	case GS_SNAP_SEGMENT_ALLOC:
		return "segment_alloc";
	case GS_SNAP_SEGMENT_FREE:
		return "segment_free";
	case GS_SNAP_OOM:
		return "oom";
	case GS_SNAP_SEGMENT_MAP:
		return "segment_map";
	case GS_SNAP_SEGMENT_UNMAP:
		return "segment_unmap";
	default:
		return "snapshot";
	}
}

static void entry(struct writer *w, const struct gs_snap_entry *e, bool completed)
{
	int64_t real = (int64_t)e->ts_ns + w->real_offset_ns;

	gs_pickle__dict_begin(&w->pk);
	gs_pickle__key(&w->pk, "action");
	gs_pickle__cstr(&w->pk, action_name(e->action, completed));
	if (e->action != GS_SNAP_OOM) {
		gs_pickle__key(&w->pk, "addr");
		gs_pickle__uint(&w->pk, e->addr);
	} else {
		/* what the driver said was free: gpusnoop does not see it */
		gs_pickle__key(&w->pk, "device_free");
		gs_pickle__int(&w->pk, 0);
	}
	gs_pickle__key(&w->pk, "size");
	gs_pickle__uint(&w->pk, e->size);
	gs_pickle__key(&w->pk, "stream");
	gs_pickle__uint(&w->pk, e->stream);
	gs_pickle__key(&w->pk, "time_us");
	gs_pickle__int(&w->pk, real > 0 ? real / 1000 : 0);
	gs_pickle__key(&w->pk, "frames");
	if (e->flags & GS_SNAP_F_UNKNOWN)
		const_frames(w, &w->before_memo, BEFORE_ATTACH);
	else if (e->flags & GS_SNAP_F_STACK)
		stack_frames(w, e->stack_id);
	else
		const_frames(w, &w->empty_memo, NULL);
	gs_pickle__dict_end(&w->pk);
}

/* device_traces: one list per device, each in the ring's order, oldest first */
static void traces(struct writer *w, const struct gs_torch_proc *tp, const struct gs_snap_proc *sp)
{
	size_t start = sp && sp->nr == sp->cap && sp->dropped ? sp->head : 0;

	gs_pickle__list_begin(&w->pk);
	for (int d = 0; d < w->ntraces; d++) {
		gs_pickle__list_begin(&w->pk);
		for (size_t i = 0; sp && i < sp->nr; i++) {
			const struct gs_snap_entry *e = &sp->ring[(start + i) % sp->nr];

			if (e->action != GS_SNAP_SNAPSHOT && entry_dev(w, tp, e) != d)
				continue;
			entry(w, e, false);
			if (e->action == GS_SNAP_FREE)
				entry(w, e, true);
		}
		gs_pickle__list_end(&w->pk);
	}
	gs_pickle__list_end(&w->pk);
}

/* what gpusnoop adds: whose snapshot, what each trace index is, what the ring dropped */
static void about(struct writer *w, pid_t pid, const struct gs_snap_proc *sp, size_t max)
{
	char name[32];

	gs_pickle__dict_begin(&w->pk);
	gs_pickle__key(&w->pk, "pid");
	gs_pickle__int(&w->pk, pid);
	gs_pickle__key(&w->pk, "devices");
	gs_pickle__list_begin(&w->pk);
	for (int d = 0; d < w->ntraces; d++) {
		if (d == w->cpu_index)
			snprintf(name, sizeof(name), "cpu");
		else
			snprintf(name, sizeof(name), "cuda:%d", d);
		gs_pickle__cstr(&w->pk, name);
	}
	gs_pickle__list_end(&w->pk);
	gs_pickle__key(&w->pk, "max_entries");
	gs_pickle__uint(&w->pk, max);
	gs_pickle__key(&w->pk, "trace_entries_dropped");
	gs_pickle__uint(&w->pk, sp ? sp->dropped : 0);
	gs_pickle__dict_end(&w->pk);
}

int gs_torch_snap__write(struct gs_torch_snap *s, pid_t pid, const struct gs_torch_proc *tp,
			 const struct gs_stack_table *stacks, uint64_t now_ns, FILE *f)
{
	struct gs_snap_entry mark = { .ts_ns = now_ns,
				      .dev = GS_TORCH_DEV_UNKNOWN,
				      .action = GS_SNAP_SNAPSHOT };
	struct writer w = { .stacks = stacks };
	const struct gs_snap_proc *sp;
	int err;

	/* the moment this snapshot was taken, in its own trace and every later one */
	err = gs_torch_snap__record(s, pid, &mark);
	if (err)
		return err;
	sp = gs_torch_snap__find(s, pid);
	w.real_offset_ns = (int64_t)(gs_clock_ns(CLOCK_REALTIME) - gs_clock_ns(CLOCK_MONOTONIC));
	w.nr_stack_memo = gs_stack_table__size(stacks);
	w.stack_memo = calloc(w.nr_stack_memo + 1, sizeof(*w.stack_memo));
	w.blocks = sorted_copy(tp ? tp->blocks : NULL, false, &w.nr_blocks);
	if (!w.stack_memo || (!w.blocks && tp && gs_alloc_table__count(tp->blocks)) ||
	    known_devices(&w, sp) || ring_allocs(&w, sp)) {
		err = -ENOMEM;
		goto out;
	}
	scan_devices(&w, tp, sp);
	gs_pickle__begin(&w.pk, f);
	gs_pickle__dict_begin(&w.pk);
	gs_pickle__key(&w.pk, "segments");
	err = segments(&w, tp);
	if (err)
		goto out;
	gs_pickle__key(&w.pk, "device_traces");
	traces(&w, tp, sp);
	gs_pickle__key(&w.pk, "gpusnoop");
	about(&w, pid, sp, s->max_entries);
	gs_pickle__dict_end(&w.pk);
	err = gs_pickle__end(&w.pk);
out:
	free(w.stack_memo);
	free(w.blocks);
	free(w.known);
	free(w.allocs);
	return err;
}
