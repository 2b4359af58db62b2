// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python.c: per-process CPython state for the BPF walk, and Python frames merged into stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "user/array.h"
#include "user/log.h"
#include "user/pid_index.h"
#include "user/python.h"
#include "user/python_code.h"
#include "user/python_merge.h"
#include "user/python_names.h"
#include "user/python_proc.h"
#include "user/stack_marks.h"
#include "user/symcache.h"

#define PYSTACK_SLOTS 64 /* threads whose stack waits for its record at once */
#define REFUSED_FILES 16 /* interpreter files whose refusal was logged (then: every one) */

enum target_state { TARGET_ACTIVE = 1, TARGET_UNSUPPORTED };

struct target {
	pid_t pid;
	enum target_state state;
	struct gs_py_interp interp;
	struct gs_py_codes *codes;
};

/*
 * The frames of a GS_EV_PYSTACK record, named when it arrives: the process may be gone by
 * the time the record it belongs to comes (BPF wakes the reader for code objects it did
 * not send before, not for that record).
 */
struct pystack_slot {
	__u32 tid;
	__u64 ts_ns; /* 0: used */
	struct gs_py_stack_event e;
	__u64 named[GS_PY_MAX_FRAMES]; /* stand-in addresses; 0: not nameable */
	size_t nr_named;
};

struct gs_python {
	int map_fd;
	int pids_fd; /* py_pids: active targets per pid slot, so that others skip map_fd */
	struct gs_symcache *symcache; /* borrowed */
	struct target **targets;      /* pointers: each holds its interp, which codes borrows */
	size_t nr_targets, cap_targets;
	struct gs_pid_index target_index; /* pid -> position in targets */
	struct pystack_slot *slots;	  /* PYSTACK_SLOTS */
	size_t next_slot;
	char refused[REFUSED_FILES][sizeof(((struct gs_py_interp *)0)->path)];
	size_t nr_refused;
};

struct gs_python *gs_python__new(struct gs_symcache *symcache)
{
	struct gs_python *py = calloc(1, sizeof(*py));
	int err;

	if (!py)
		return NULL;
	py->symcache = symcache;
	py->slots = calloc(PYSTACK_SLOTS, sizeof(*py->slots));
	py->map_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "py_procs", sizeof(__u32),
				    sizeof(struct gs_py_proc), GS_PY_MAX_PROCS, NULL);
	py->pids_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "py_pids", sizeof(__u32), sizeof(__u32),
				     GS_PY_PID_SLOTS, NULL);
	if (!py->slots || py->map_fd < 0 || py->pids_fd < 0) {
		err = py->map_fd < 0 ? py->map_fd : py->pids_fd < 0 ? py->pids_fd : -ENOMEM;
		gs_python__free(py);
		errno = -err;
		return NULL;
	}
	return py;
}

static void free_target(struct target *t)
{
	if (!t)
		return;
	gs_py_codes__free(t->codes);
	free(t);
}

void gs_python__free(struct gs_python *py)
{
	if (!py)
		return;
	for (size_t i = 0; i < py->nr_targets; i++)
		free_target(py->targets[i]);
	free(py->targets);
	gs_pid_index__release(&py->target_index);
	free(py->slots);
	if (py->map_fd >= 0)
		close(py->map_fd);
	if (py->pids_fd >= 0)
		close(py->pids_fd);
	free(py);
}

int gs_python__share_maps(struct gs_python *py, struct bpf_object *obj)
{
	struct bpf_map *procs, *pids;

	if (!py)
		return 0;
	procs = bpf_object__find_map_by_name(obj, "py_procs");
	pids = bpf_object__find_map_by_name(obj, "py_pids");
	if (!procs || !pids)
		return -ENOENT;
	return bpf_map__reuse_fd(procs, py->map_fd) ?: bpf_map__reuse_fd(pids, py->pids_fd);
}

/* Adds delta to the count of active targets in pid's slot of py_pids */
static int count_pid(struct gs_python *py, pid_t pid, int delta)
{
	__u32 slot = (__u32)pid & (GS_PY_PID_SLOTS - 1), nr = 0;

	if (bpf_map_lookup_elem(py->pids_fd, &slot, &nr))
		return -errno;
	nr += delta;
	return bpf_map_update_elem(py->pids_fd, &slot, &nr, BPF_ANY) ? -errno : 0;
}

static struct target *find_target(const struct gs_python *py, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&py->target_index, pid, &pos) ? py->targets[pos] : NULL;
}

static struct target *add_target(struct gs_python *py, pid_t pid)
{
	struct target *t;

	if (GS_ARRAY_RESERVE(py->targets, py->nr_targets, py->cap_targets, 16))
		return NULL;
	t = calloc(1, sizeof(*t));
	if (!t || gs_pid_index__set(&py->target_index, pid, py->nr_targets)) {
		free(t);
		return NULL;
	}
	t->pid = pid;
	py->targets[py->nr_targets++] = t;
	return t;
}

/* Hands the walk its offsets for pid. Returns 0 or -errno (logged). */
static int activate(struct gs_python *py, struct target *t)
{
	const struct gs_py_layout *l = &t->interp.layout;
	struct gs_py_proc cfg = l->bpf;
	__u32 key = (__u32)t->pid;

	cfg.tss_key = t->interp.runtime + l->runtime_tss_key;
	cfg.code_name = l->co_qualname ? l->co_qualname : l->co_name;
	cfg.code_file = l->co_filename;
	cfg.code_lines = l->co_lines;
	cfg.code_firstlineno = l->co_firstlineno;
	cfg.str_ascii_data = l->str_ascii_data;
	cfg.str_compact_data = l->str_compact_data;
	t->codes = gs_py_codes__new(t->pid, &t->interp);
	if (!t->codes)
		return -ENOMEM;
	if (bpf_map_update_elem(py->map_fd, &key, &cfg, BPF_ANY) || count_pid(py, t->pid, 1)) {
		gs_warn("pid %d: python frames: %s", (int)t->pid, strerror(errno));
		bpf_map_delete_elem(py->map_fd, &key);
		return -errno;
	}
	t->state = TARGET_ACTIVE;
	gs_dbg("pid %d: CPython %d.%d in %s: Python frames on", (int)t->pid, t->interp.major,
	       t->interp.minor, t->interp.path);
	return 0;
}

/* One line per interpreter file: its other processes would say the same */
static void log_refusal(struct gs_python *py, pid_t pid, const struct gs_py_interp *in)
{
	for (size_t i = 0; i < py->nr_refused; i++)
		if (!strcmp(py->refused[i], in->path))
			return;
	if (py->nr_refused < REFUSED_FILES)
		snprintf(py->refused[py->nr_refused++], sizeof(py->refused[0]), "%s", in->path);
	gs_info("pid %d: %s: CPython %d.%d: %s is not supported: its stacks stay native", (int)pid,
		in->path, in->major, in->minor, in->why);
}

void gs_python__scan(struct gs_python *py, pid_t pid)
{
	struct target *t = find_target(py, pid);
	const struct gs_maps *maps;
	struct gs_py_interp interp;
	enum gs_py_find found;

	if (t)
		return; /* known already: an interpreter does not change without exec */
	maps = gs_symcache__maps(py->symcache, pid);
	if (!maps)
		return;
	found = gs_py_interp_find(py->symcache, maps, &interp);
	if (found == GS_PY_NONE)
		return;
	t = add_target(py, pid);
	if (!t)
		return;
	t->interp = interp;
	t->state = TARGET_UNSUPPORTED;
	if (found == GS_PY_UNSUPPORTED)
		log_refusal(py, pid, &interp);
	else
		activate(py, t);
}

void gs_python__forget(struct gs_python *py, pid_t pid)
{
	__u32 key = (__u32)pid;
	size_t pos;

	if (!gs_pid_index__get(&py->target_index, pid, &pos))
		return;
	bpf_map_delete_elem(py->map_fd, &key);
	if (py->targets[pos]->state == TARGET_ACTIVE)
		count_pid(py, pid, -1);
	free_target(py->targets[pos]);
	gs_pid_index__remove(&py->target_index, pid);
	/* the last entry fills the hole; its index entry follows (it exists: no allocation) */
	py->targets[pos] = py->targets[--py->nr_targets];
	if (pos < py->nr_targets)
		gs_pid_index__set(&py->target_index, py->targets[pos]->pid, pos);
}

static size_t name_frames(struct gs_python *py, struct target *t,
			  const struct gs_py_stack_event *ps, __u64 *named);

void gs_python__learn(struct gs_python *py, const struct gs_py_code_event *e)
{
	struct target *t = find_target(py, (pid_t)e->hdr.pid);

	if (t && t->state == TARGET_ACTIVE)
		gs_py_codes__learn(t->codes, e);
}

void gs_python__stash(struct gs_python *py, const struct gs_py_stack_event *e)
{
	struct target *t = find_target(py, (pid_t)e->hdr.pid);
	struct pystack_slot *slot = NULL;

	if (!t || t->state != TARGET_ACTIVE)
		return;
	for (size_t i = 0; i < PYSTACK_SLOTS && !slot; i++)
		if (py->slots[i].tid == e->hdr.tid)
			slot = &py->slots[i];
	if (!slot) {
		slot = &py->slots[py->next_slot];
		py->next_slot = (py->next_slot + 1) % PYSTACK_SLOTS;
	}
	memcpy(&slot->e, e,
	       offsetof(struct gs_py_stack_event, frames) + e->nr_frames * sizeof(e->frames[0]));
	slot->tid = e->hdr.tid;
	slot->ts_ns = e->hdr.ts_ns;
	slot->nr_named = name_frames(py, t, &slot->e, slot->named);
}

/* The stashed Python frames of hdr's thread taken at hdr's time; used once. */
static const struct pystack_slot *take_stack(struct gs_python *py, const struct gs_event_hdr *hdr)
{
	for (size_t i = 0; i < PYSTACK_SLOTS; i++) {
		struct pystack_slot *slot = &py->slots[i];

		if (slot->ts_ns && slot->tid == hdr->tid && slot->ts_ns == hdr->ts_ns) {
			slot->ts_ns = 0;
			return slot;
		}
	}
	return NULL;
}

/* Stand-in addresses of the Python frames (0: not nameable); returns how many are named. */
static size_t name_frames(struct gs_python *py, struct target *t,
			  const struct gs_py_stack_event *ps, __u64 *named)
{
	struct gs_py_names *names = gs_symcache__py_names(py->symcache);
	size_t n = 0;

	for (__u16 i = 0; i < ps->nr_frames; i++) {
		const struct gs_py_frame *f = &ps->frames[i];
		struct gs_py_where w;
		int err;

		named[i] = 0;
		err = names ? gs_py_codes__where(t->codes, f->code, f->instr, &w) : -ENOMEM;
		if (err) {
			gs_dbg("pid %d: python frame %u (code 0x%llx): %s", (int)t->pid, i,
			       (unsigned long long)f->code, strerror(-err));
			continue;
		}
		named[i] = gs_py_names__intern(names, t->pid, f->code, w.gen, w.qualname, w.file,
					       w.line);
		n += named[i] != 0;
	}
	return n;
}

/* Where rec keeps its frames: *frames and *nr point into rec; false for other records */
static bool record_frames(const void *rec, size_t *off, __u16 *nr)
{
	const struct gs_event_hdr *hdr = rec;

#define FRAMES_OF(type)                               \
	do {                                          \
		*off = offsetof(type, frames);        \
		*nr = ((const type *)rec)->nr_frames; \
	} while (0)
	switch (hdr->type) {
	case GS_EV_MEM_ALLOC:
		FRAMES_OF(struct gs_mem_alloc);
		return true;
	case GS_EV_MEM_FREE_RET:
		FRAMES_OF(struct gs_mem_free_ret);
		return true;
	case GS_EV_CUDA_CALL:
		FRAMES_OF(struct gs_cuda_call);
		return true;
	case GS_EV_CPU_SAMPLE:
		FRAMES_OF(struct gs_cpu_sample);
		return true;
	case GS_EV_TORCH_MEM:
		FRAMES_OF(struct gs_torch_mem);
		return true;
	case GS_EV_TORCH_OOM:
		FRAMES_OF(struct gs_torch_oom);
		return true;
	}
#undef FRAMES_OF
	return false;
}

#define HEAD_FITS(type)                                                    \
	_Static_assert(offsetof(struct type, frames) <= GS_PY_MERGED_HEAD, \
		       #type "'s frames[] start past GS_PY_MERGED_HEAD")
HEAD_FITS(gs_mem_alloc);
HEAD_FITS(gs_mem_free_ret);
HEAD_FITS(gs_cuda_call);
HEAD_FITS(gs_cpu_sample);
HEAD_FITS(gs_torch_mem);
HEAD_FITS(gs_torch_oom);
#undef HEAD_FITS

/* nr_frames of each record kind: a __u16 at the same place for all of them is not a given */
static void set_nr_frames(union gs_py_merged *out, __u16 nr)
{
	switch (out->alloc.hdr.type) {
	case GS_EV_MEM_ALLOC:
		out->alloc.nr_frames = nr;
		break;
	case GS_EV_MEM_FREE_RET:
		out->free_ret.nr_frames = nr;
		break;
	case GS_EV_CUDA_CALL:
		out->call.nr_frames = nr;
		break;
	case GS_EV_CPU_SAMPLE:
		out->sample.nr_frames = nr;
		break;
	case GS_EV_TORCH_MEM:
		out->torch_mem.nr_frames = nr;
		break;
	case GS_EV_TORCH_OOM:
		out->torch_oom.nr_frames = nr;
		break;
	}
}

/* Where the outermost Python frame of a merged stack ends: the cut Python frames were there */
static size_t after_python(const __u64 *merged, size_t n, uint64_t marker)
{
	while (n && (!gs_py_is_addr(merged[n - 1]) || merged[n - 1] == marker))
		n--;
	return n;
}

bool gs_python__merge_record(struct gs_python *py, const void *rec, union gs_py_merged *out)
{
	const struct gs_event_hdr *hdr = rec;
	const struct pystack_slot *slot;
	__u64 merged[GS_PY_MERGED_MAX];
	struct target *t;
	uint64_t marker;
	size_t off, n;
	__u16 nr;

	if (!(hdr->flags & GS_EV_F_PYSTACK) || !record_frames(rec, &off, &nr))
		return false;
	slot = take_stack(py, hdr);
	t = find_target(py, (pid_t)hdr->pid);
	if (!slot || !slot->nr_named || !t || t->state != TARGET_ACTIVE)
		return false;
	marker = gs_py_names__marker(gs_symcache__py_names(py->symcache), t->pid);
	n = gs_py_merge((const __u64 *)((const char *)rec + off), nr, slot->e.frames, slot->named,
			slot->e.nr_frames, &t->interp.eval, marker, merged, GS_PY_MERGED_MAX - 1);
	if (slot->e.flags & GS_PY_STACK_F_TRUNCATED)
		gs_stack_mark_insert_truncated(merged, &n, GS_PY_MERGED_MAX,
					       after_python(merged, n, marker), slot->e.nr_more);
	memcpy(out, rec, off);
	memcpy((char *)out + off, merged, n * sizeof(merged[0]));
	out->alloc.hdr.size = (__u32)(off + n * sizeof(merged[0]));
	set_nr_frames(out, (__u16)n);
	return true;
}

bool gs_python__mark_cut_stack(const void *rec, union gs_py_merged *out)
{
	size_t off, n;
	__u16 nr;

	if (!record_frames(rec, &off, &nr) || nr < GS_MAX_STACK)
		return false;
	memcpy(out, rec, off + nr * sizeof(__u64));
	n = nr;
	gs_stack_mark_insert_truncated((__u64 *)((char *)out + off), &n, GS_PY_MERGED_MAX, n, 0);
	out->alloc.hdr.size = (__u32)(off + n * sizeof(__u64));
	set_nr_frames(out, (__u16)n);
	return true;
}
