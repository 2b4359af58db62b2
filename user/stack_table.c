// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stack_table.c: hash-consing of user stacks with eager symbolization. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user/array.h"
#include "user/hash_index.h"
#include "user/json.h"
#include "user/pid_index.h"
#include "user/python_names.h"
#include "user/stack_table.h"

struct gs_stack_table {
	struct gs_symcache *symcache; /* borrowed */
	struct gs_stack *stacks;      /* by id */
	size_t nr, cap;
	struct gs_hash_index index; /* interned stacks by (pid, frames); not the folded ones */
	uint32_t *free_ids;	    /* slots of forgotten stacks (addrs NULL), reused first */
	size_t nr_free, cap_free;
	struct pid_stacks *per_pid; /* in no order; found by pid through pid_index */
	size_t nr_per_pid, cap_per_pid;
	struct gs_pid_index pid_index;
	size_t max_per_pid; /* 0: GS_STACK_TABLE_MAX_PER_PROCESS */
	uint64_t folded;
	int debuginfo_seen; /* gs_symcache__await_debuginfo() at the last __resymbolize() */
};

/* what one process holds in the table */
struct pid_stacks {
	pid_t pid;
	uint32_t nr;	      /* its stacks, its "[other stacks]" not counted */
	uint32_t other_plus1; /* id + 1 of its "[other stacks]"; 0: none yet */
};

static uint64_t hash_stack(pid_t pid, const uint64_t *addrs, uint32_t nr)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)pid;

	for (uint32_t i = 0; i < nr; i++) {
		h ^= addrs[i];
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	return gs_hash_u64(h ^ nr);
}

struct key {
	const struct gs_stack_table *t;
	pid_t pid;
	const uint64_t *addrs;
	uint32_t nr;
};

static bool same_stack(const void *ctx, size_t id)
{
	const struct key *k = ctx;
	const struct gs_stack *s = &k->t->stacks[id];

	return s->addrs && !s->other && s->pid == k->pid && s->nr_frames == k->nr &&
	       !memcmp(s->addrs, k->addrs, k->nr * sizeof(*k->addrs));
}

struct gs_stack_table *gs_stack_table__new(struct gs_symcache *symcache)
{
	struct gs_stack_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->symcache = symcache;
	return t;
}

static void free_stack(struct gs_stack *s)
{
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		free((char *)s->frames[i].symbol);
		free((char *)s->frames[i].module);
		free((char *)s->frames[i].file);
	}
	free(s->frames);
	free(s->addrs);
}

void gs_stack_table__free(struct gs_stack_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nr; i++)
		free_stack(&t->stacks[i]);
	free(t->stacks);
	gs_hash_index__release(&t->index);
	free(t->free_ids);
	free(t->per_pid);
	gs_pid_index__release(&t->pid_index);
	free(t);
}

static void forget_pid(struct gs_stack_table *t, pid_t pid)
{
	size_t pos;

	if (!gs_pid_index__get(&t->pid_index, pid, &pos))
		return;
	gs_pid_index__remove(&t->pid_index, pid);
	/* the last entry fills the hole; its index entry follows (it exists: no allocation) */
	t->per_pid[pos] = t->per_pid[--t->nr_per_pid];
	if (pos < t->nr_per_pid)
		gs_pid_index__set(&t->pid_index, t->per_pid[pos].pid, pos);
}

void gs_stack_table__forget(struct gs_stack_table *t, pid_t pid)
{
	forget_pid(t, pid);
	for (size_t id = 0; id < t->nr; id++) {
		struct gs_stack *s = &t->stacks[id];

		if (!s->addrs || s->pid != pid)
			continue;
		if (GS_ARRAY_RESERVE(t->free_ids, t->nr_free, t->cap_free, 64))
			break; /* the stack stays, interned: only memory is not given back */
		if (!s->other)
			gs_hash_index__remove(&t->index, hash_stack(pid, s->addrs, s->nr_frames),
					      id);
		free_stack(s);
		*s = (struct gs_stack){ 0 };
		t->free_ids[t->nr_free++] = (uint32_t)id;
	}
}

static void symbolize(struct gs_stack_table *t, struct gs_stack *s)
{
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		struct gs_frame f;

		if (gs_py_is_addr(s->addrs[i])) {
			/* a Python frame of a merged stack (user/python.c): no return address */
			gs_symcache__resolve(t->symcache, s->pid, s->addrs[i], &f);
		} else {
			/* a return address may be one past the caller's last instruction */
			gs_symcache__resolve(t->symcache, s->pid, s->addrs[i] - 1, &f);
			f.address = s->addrs[i];
			f.offset += 1;
		}
		f.symbol = f.symbol ? strdup(f.symbol) : NULL;
		f.module = f.module ? strdup(f.module) : NULL;
		f.file = f.file ? strdup(f.file) : NULL;
		s->frames[i] = f;
	}
}

/* Names f (a native frame without a name) from a debug file fetched since; -ENOMEM. */
static int rename_frame(struct gs_stack_table *t, uint64_t addr, struct gs_frame *f)
{
	uint64_t off;
	const char *name;
	char *copy;

	if (f->symbol || !f->module || f->kind != GS_FRAME_NATIVE || gs_py_is_addr(addr) ||
	    !f->offset)
		return 0;
	/* as symbolize(): the file offset of the return address less one, plus one */
	name = gs_symcache__resolve_module(t->symcache, f->module, f->offset - 1, &off);
	if (!name)
		return 0;
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	f->symbol = copy;
	f->offset = off + 1;
	return 0;
}

int gs_stack_table__resymbolize(struct gs_stack_table *t)
{
	int merged = gs_symcache__await_debuginfo(t->symcache), err = 0;

	if (merged == t->debuginfo_seen)
		return 0; /* no stack has a frame named by what was fetched since */
	t->debuginfo_seen = merged;
	for (size_t id = 0; id < t->nr && !err; id++) {
		struct gs_stack *s = &t->stacks[id];

		for (uint32_t i = 0; s->addrs && i < s->nr_frames && !err; i++)
			err = rename_frame(t, s->addrs[i], &s->frames[i]);
	}
	return err;
}

/* Symbolizes the stack into slot id; on failure the slot is left free again. */
static int64_t fill_slot(struct gs_stack_table *t, uint32_t id, pid_t pid, const uint64_t *addrs,
			 uint32_t nr, uint64_t hash)
{
	struct gs_stack *s = &t->stacks[id];

	s->pid = pid;
	s->nr_frames = nr;
	s->addrs = malloc((nr ? nr : 1) * sizeof(*addrs));
	s->frames = calloc(nr ? nr : 1, sizeof(*s->frames));
	if (!s->addrs || !s->frames || gs_hash_index__add(&t->index, hash, id)) {
		free(s->addrs);
		free(s->frames);
		*s = (struct gs_stack){ 0 };
		if (id == t->nr - 1)
			t->nr--;
		else
			t->free_ids[t->nr_free++] = id;
		return -ENOMEM;
	}
	memcpy(s->addrs, addrs, nr * sizeof(*addrs));
	symbolize(t, s);
	return id;
}

/* pid's entry, made on first use; NULL on allocation failure */
static struct pid_stacks *pid_entry(struct gs_stack_table *t, pid_t pid)
{
	size_t pos;

	if (gs_pid_index__get(&t->pid_index, pid, &pos))
		return &t->per_pid[pos];
	if (GS_ARRAY_RESERVE(t->per_pid, t->nr_per_pid, t->cap_per_pid, 16) ||
	    gs_pid_index__set(&t->pid_index, pid, t->nr_per_pid))
		return NULL;
	t->per_pid[t->nr_per_pid] = (struct pid_stacks){ .pid = pid };
	return &t->per_pid[t->nr_per_pid++];
}

/* A free slot's id (reused first); -ENOMEM */
static int64_t new_slot(struct gs_stack_table *t)
{
	if (t->nr_free)
		return t->free_ids[--t->nr_free];
	if (GS_ARRAY_RESERVE(t->stacks, t->nr, t->cap, 256))
		return -ENOMEM;
	t->stacks[t->nr] = (struct gs_stack){ 0 };
	return (int64_t)t->nr++;
}

/* ps's "[other stacks]" id, made the first time: one marker frame, never looked up by frames */
static int64_t other_stack(struct gs_stack_table *t, struct pid_stacks *ps)
{
	struct gs_stack *s;
	int64_t id;

	t->folded++;
	if (ps->other_plus1)
		return ps->other_plus1 - 1;
	id = new_slot(t);
	if (id < 0)
		return id;
	s = &t->stacks[id];
	s->pid = ps->pid;
	s->nr_frames = 1;
	s->other = 1;
	s->addrs = calloc(1, sizeof(*s->addrs));
	s->frames = calloc(1, sizeof(*s->frames));
	if (s->frames)
		s->frames[0] = (struct gs_frame){ .kind = GS_FRAME_MARKER,
						  .symbol = strdup(GS_STACK_OTHER_NAME),
						  .line = -1 };
	if (!s->addrs || !s->frames || !s->frames[0].symbol) {
		free(s->addrs);
		free(s->frames);
		*s = (struct gs_stack){ 0 };
		if ((size_t)id == t->nr - 1)
			t->nr--;
		else
			t->free_ids[t->nr_free++] = (uint32_t)id; /* where it came from */
		return -ENOMEM;
	}
	ps->other_plus1 = (uint32_t)id + 1;
	return id;
}

int64_t gs_stack_table__intern(struct gs_stack_table *t, pid_t pid, const uint64_t *addrs,
			       uint32_t nr)
{
	uint64_t hash = hash_stack(pid, addrs, nr);
	size_t max = t->max_per_pid ? t->max_per_pid : GS_STACK_TABLE_MAX_PER_PROCESS;
	struct key k = { .t = t, .pid = pid, .addrs = addrs, .nr = nr };
	struct pid_stacks *ps;
	size_t found;
	int64_t id;

	if (gs_hash_index__find(&t->index, hash, same_stack, &k, &found))
		return (int64_t)found;

	ps = pid_entry(t, pid);
	if (!ps)
		return -ENOMEM;
	if (ps->nr >= max)
		return other_stack(t, ps);
	id = new_slot(t);
	if (id >= 0)
		id = fill_slot(t, (uint32_t)id, pid, addrs, nr, hash);
	if (id >= 0)
		ps->nr++;
	return id;
}

void gs_stack_table__set_max_per_process(struct gs_stack_table *t, size_t max)
{
	t->max_per_pid = max;
}

uint64_t gs_stack_table__folded(const struct gs_stack_table *t)
{
	return t->folded;
}

const struct gs_stack *gs_stack_table__get(const struct gs_stack_table *t, uint32_t id)
{
	return id < t->nr && t->stacks[id].addrs ? &t->stacks[id] : NULL;
}

size_t gs_stack_table__size(const struct gs_stack_table *t)
{
	return t->nr - t->nr_free;
}

void gs_frame_format(const struct gs_frame *f, char *buf, size_t len)
{
	if (f->kind == GS_FRAME_PYTHON && f->symbol && f->line >= 0)
		snprintf(buf, len, "%s (%s:%d)", f->symbol, f->file ? f->file : "?", f->line);
	else if (f->kind == GS_FRAME_PYTHON && f->symbol)
		snprintf(buf, len, "%s (%s)", f->symbol, f->file ? f->file : "?");
	else if (f->kind != GS_FRAME_NATIVE)
		snprintf(buf, len, "%s", f->symbol ? f->symbol : "[python frame]");
	else if (f->symbol)
		snprintf(buf, len, "%s+0x%" PRIx64 " (%s)", f->symbol, f->offset,
			 f->module ? f->module : "?");
	else if (f->module)
		snprintf(buf, len, "%s+0x%" PRIx64, f->module, f->offset);
	else
		snprintf(buf, len, "0x%" PRIx64, f->address);
}

void gs_frame_json(struct gs_json *j, const struct gs_frame *f)
{
	gs_json__begin_object(j, NULL);
	if (f->kind == GS_FRAME_PYTHON)
		gs_json__string(j, "kind", "python");
	else if (f->kind == GS_FRAME_MARKER)
		gs_json__string(j, "kind", "marker");
	gs_json__string(j, "symbol", f->symbol);
	gs_json__string(j, "module", f->module);
	gs_json__u64(j, "offset", f->offset);
	gs_json__u64(j, "address", f->address);
	if (f->kind == GS_FRAME_PYTHON) {
		gs_json__string(j, "file", f->file);
		gs_json__i64(j, "line", f->line);
	}
	gs_json__end_object(j);
}
