/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_python.bpf.h: the current thread's CPython frame chain, as (code object, instruction). */
#ifndef GS_PYTHON_BPF_H
#define GS_PYTHON_BPF_H

#include <bpf/bpf_core_read.h>
#include "gs_common.bpf.h"

/*
 * Steps of the walk per stack: the recorded frames, the 3.12+ C-stack shims between them,
 * and past the recorded ones a count of the frames left (Python's default recursion limit
 * is 1000), which the truncation mark shows. bpf_loop(): the verifier checks one step.
 */
#define GS_PY_COUNT_MAX 1024
#define GS_PY_WALK_MAX	(GS_PY_MAX_FRAMES + 32 + GS_PY_COUNT_MAX)

/*
 * 3.12, 3.13 FRAME_OWNED_BY_CSTACK, 3.14+ FRAME_OWNED_BY_INTERPRETER (3): the shim an eval
 * loop pushes; 3.15's FRAME_OWNED_BY_CSTACK (4) is not a Python frame either.
 */
#define GS_PY_OWNER_CSTACK 3
/* 3.14+: f_executable is a _PyStackRef whose low bits are tags; objects are 8-aligned */
#define GS_PY_TAG_BITS	  7ULL
#define GS_PY_PAGE	  4096ULL /* x86-64 */
#define GS_PY_MAX_TSS_KEY 1024	  /* glibc's PTHREAD_KEYS_MAX */

/*
 * pid -> where its interpreter keeps thread states and how its frames are laid out, written
 * by userspace (user/python.c) once it recognised the interpreter; a process without an
 * entry costs one hash lookup per event. Userspace creates the map and hands the same one
 * to every object.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, GS_PY_MAX_PROCS);
	__type(key, __u32);
	__type(value, struct gs_py_proc);
} py_procs SEC(".maps");

/*
 * How many of the processes in py_procs have a pid of each value mod GS_PY_PID_SLOTS, kept by
 * userspace (user/python.c): a zero says "not Python" with an array lookup the verifier
 * inlines, so that other processes do not pay py_procs' hash lookup on every event. A count,
 * not a pid: two Python processes in one slot both keep their frames.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GS_PY_PID_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} py_pids SEC(".maps");

/* --no-python: no lookup at all (one costs ~110 ns per event, Python or not) */
const volatile bool cfg_python = true;

/*
 * The current thread's fs base: a plain load through the trusted task pointer, not a
 * bpf_probe_read_kernel() call as BPF_CORE_READ() makes (~25 ns a stack).
 */
static __always_inline __u64 gs_py_fsbase(void)
{
#ifdef GS_OLD_KERNEL
	return BPF_CORE_READ(gs_current_task(), thread.fsbase);
#else
	return gs_current_task()->thread.fsbase;
#endif
}

/*
 * glibc's pthread_getspecific(key) for the current thread: the thread's struct pthread
 * starts at its fs base; keys < 32 live in specific_1stblock, the others in blocks that
 * specific[] points to ({seq, data} pairs of 16 bytes). The thread-state binding through
 * the TSS key stays while the thread has released the GIL, unlike the attached state.
 */
static __always_inline __u64 gs_py_thread_state(const struct gs_py_proc *p)
{
	struct {
		__s32 initialized;
		__u32 key;
	} tss;
	__u64 fs = gs_py_fsbase(), slot, block = 0, ts = 0;

	if (p->tls_tstate) {
		/* 3.15: PyGILState's thread-local, bound while the GIL is released too */
		if (!fs ||
		    bpf_probe_read_user(&ts, sizeof(ts), (void *)(fs + (__s64)p->tls_tstate)))
			return 0;
		return ts;
	}
	if (bpf_probe_read_user(&tss, sizeof(tss), (void *)p->tss_key) || tss.initialized != 1 ||
	    tss.key >= GS_PY_MAX_TSS_KEY || !fs)
		return 0;
	if (tss.key < 32) {
		slot = fs + p->pthread_first + tss.key * 16 + 8;
	} else {
		if (bpf_probe_read_user(&block, sizeof(block),
					(void *)(fs + p->pthread_second + (tss.key / 32) * 8)) ||
		    !block)
			return 0;
		slot = block + (tss.key % 32) * 16 + 8;
	}
	if (bpf_probe_read_user(&ts, sizeof(ts), (void *)slot))
		return 0;
	return ts;
}

/* The innermost frame of the thread state ts, 0 if none. */
static __always_inline __u64 gs_py_top_frame(const struct gs_py_proc *p, __u64 ts)
{
	__u64 frame = 0;

	if (bpf_probe_read_user(&frame, sizeof(frame), (void *)(ts + p->tstate_frame)))
		return 0;
	if (p->cframe_frame != 0xffff && frame &&
	    bpf_probe_read_user(&frame, sizeof(frame), (void *)(frame + p->cframe_frame)))
		return 0;
	return frame;
}

/* One frame written at a time, by a bpf_loop() callback: the verifier checks it once. */
#define GS_PY_FRAME_WINDOW 128 /* bytes of a frame read at once: every field of every layout */
/*
 * 3.11+ push frames one above the other on the thread's data stack, so a frame's callers
 * usually lie just below it: one read of up to GS_PY_BLOCK bytes ending at a frame (not
 * below its page, which may be the first mapped) serves the frames under it too, instead
 * of one read each (a user read costs more than the bytes it copies: ~85 ns each on the
 * bench machine's 6.18). A page's worth: the read stops at the frame's page anyway, so a
 * stack inside one page of the data stack is one read (23 frames of py_target.py were two
 * with 2 KiB). Older frames are objects of their own: one window each.
 */
#define GS_PY_BLOCK 4096

/* The record being built, and the bytes of the current frame and those read with it */
struct gs_py_scratch {
	struct gs_py_stack_event ev;
	/*
	 * The walk's state that changes from frame to frame, in a map value, whose contents
	 * the verifier does not know. On the stack, each combination of what it knew of them
	 * (0 or not, page- or word-aligned, bounded or not) made it check the walk's step
	 * again (6.8+ checks a callback until its states repeat): ~90k instructions a program,
	 * each program's load slower by as much.
	 */
	__u32 n; /* frames recorded */
	__u32 blk_end;
	__u64 blk;   /* the user address block[] holds bytes of, up to blk_end */
	__u64 noted; /* the code object noted last: a recursion's frames look it up once */
	__u64 news;  /* a code object not sent before */
	__u8 block[GS_PY_BLOCK + 8]; /* + 8: a field at the last masked offset stays inside */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gs_py_scratch);
} py_scratch SEC(".maps");

/*
 * Code objects already sent, per process. Userspace reads a code object's names from the
 * process when its first frame arrives: a record with one it has not seen wakes the reader
 * at once, so that a short-lived process is still there to be read. Later records wait
 * for the usual wake-up.
 */
#define GS_PY_SEEN_SETS 8192 /* two ways each: a hot code object is not evicted by one other */

struct gs_py_seen {
	__u64 code;
	__u32 pid;
	__u32 pad;
};

/* (pid, code) of code objects sent, direct-mapped: an array lookup, not a hash's */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GS_PY_SEEN_SETS * 2);
	__type(key, __u32);
	__type(value, struct gs_py_seen);
} py_seen SEC(".maps");

struct gs_py_walk {
	struct gs_py_proc p;
	__u16 lo;    /* the window starts at the lowest field offset */
	__u16 len;   /* and ends after the highest field */
	__u64 frame; /* the next frame to read; 0 at the end of the chain */
	__u64 pid_tgid;
	__u32 pid;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gs_py_code_event);
} py_code_scratch SEC(".maps");

#define GS_PY_STR_LENGTH 16 /* PyASCIIObject: ob_refcnt, ob_type, length, hash, state */
#define GS_PY_STR_STATE	 32
#define GS_PY_BYTES_SIZE 16 /* PyBytesObject: ob_refcnt, ob_type, ob_size, ob_shash, data */
#define GS_PY_BYTES_DATA 32

/* The characters of the compact str at addr, as stored, up to len bytes into data */
static __always_inline void gs_py_read_str(const struct gs_py_proc *p, __u64 addr,
					   struct gs_py_str *out, __u8 *data, __u32 len)
{
	struct {
		__s64 length, hash;
		__u32 state;
	} head;
	__u32 kind, bytes;

	out->kind = 0;
	out->length = 0;
	if (!addr || bpf_probe_read_user(&head, sizeof(head), (void *)(addr + GS_PY_STR_LENGTH)))
		return;
	kind = (head.state >> 2) & 7;
	if (!(head.state & (1 << 5)) || (kind != 1 && kind != 2 && kind != 4) || head.length < 0 ||
	    head.length > 0xffffff)
		return;
	bytes = (__u32)head.length * kind;
	if (bytes > len)
		bytes = len;
	asm volatile("" : "+r"(bytes)); /* the verifier must see the clamped value */
	addr += head.state & (1 << 6) ? p->str_ascii_data : p->str_compact_data;
	if (bpf_probe_read_user(data, bytes & (GS_PY_FILE_BYTES * 2 - 1), (void *)addr))
		return;
	out->kind = kind;
	out->length = (__u32)head.length;
}

/* Sends what names code, the first time the walk meets it in this process */
static __noinline __attribute__((unused)) void gs_py_send_code(const struct gs_py_proc *p,
							       __u64 code, __u64 pid_tgid)
{
	__u32 zero = 0, size = 0;
	struct gs_py_code_event *e = bpf_map_lookup_elem(&py_code_scratch, &zero);
	__s64 lines_size = 0;

	if (!e)
		return;
	gs_fill_hdr(&e->hdr, GS_EV_PYCODE, sizeof(*e), pid_tgid);
	e->code = code;
	e->name_ptr = e->file_ptr = e->lines_ptr = 0;
	e->firstlineno = 0;
	bpf_probe_read_user(&e->name_ptr, 8, (void *)(code + p->code_name));
	bpf_probe_read_user(&e->file_ptr, 8, (void *)(code + p->code_file));
	bpf_probe_read_user(&e->lines_ptr, 8, (void *)(code + p->code_lines));
	bpf_probe_read_user(&e->firstlineno, 4, (void *)(code + p->code_firstlineno));
	gs_py_read_str(p, e->name_ptr, &e->name, e->name_data, GS_PY_NAME_BYTES);
	gs_py_read_str(p, e->file_ptr, &e->file, e->file_data, GS_PY_FILE_BYTES);
	if (e->lines_ptr)
		bpf_probe_read_user(&lines_size, 8, (void *)(e->lines_ptr + GS_PY_BYTES_SIZE));
	if (lines_size > 0 && lines_size < 0x7fffffff) {
		size = lines_size > GS_PY_LINES_BYTES ? GS_PY_LINES_BYTES : (__u32)lines_size;
		asm volatile("" : "+r"(size));
		if (bpf_probe_read_user(e->lines, size & (GS_PY_LINES_BYTES * 2 - 1),
					(void *)(e->lines_ptr + GS_PY_BYTES_DATA)))
			lines_size = 0;
	}
	e->lines_size = lines_size > 0 ? (__u32)lines_size : 0;
	if (gs_over_share(sizeof(*e)))
		return; /* counted there */
	if (bpf_ringbuf_output(&events, e, sizeof(*e), 0))
		gs_count(GS_STAT_RINGBUF_FULL);
}

/* Sends code's names if this process's code was not sent before; notes to wake the reader */
static __always_inline void gs_py_note_code(struct gs_py_walk *w, struct gs_py_scratch *sc,
					    __u64 code)
{
	struct gs_py_seen *a, *b;
	__u32 way;

	if (code == sc->noted)
		return; /* noted earlier in this walk: sent or seen already */
	sc->noted = code;
	way = (__u32)((code >> 4) ^ (code >> 17) ^ w->pid) % GS_PY_SEEN_SETS * 2;
	a = bpf_map_lookup_elem(&py_seen, &way);
	way++;
	b = bpf_map_lookup_elem(&py_seen, &way);
	if (!code || !a || !b || (a->code == code && a->pid == w->pid) ||
	    (b->code == code && b->pid == w->pid))
		return;
	*b = *a; /* the newest in way a, the one before in way b */
	a->code = code;
	a->pid = w->pid;
	gs_py_send_code(&w->p, code, w->pid_tgid);
	sc->news = 1;
}

/*
 * A field of the frame whose window starts at base in the block: off is the field's offset
 * from the window's start (gs_py_window() made the walk's offsets so)
 */
static __always_inline __u64 gs_py_field(const struct gs_py_scratch *sc, __u32 base, __u16 off)
{
	__u32 at = base + off;
	const __u8 *field;

	/*
	 * One 8-byte load: clang knows the block is a byte array and made each field eight
	 * byte loads, shifts and ors (~25 instructions, the most of a frame's), with a memcpy()
	 * or a cast alike. The empty asm hides where the pointer came from. The BPF target
	 * assumes no unaligned access; x86-64 and its JIT have it, and the block starts
	 * 8-aligned, so the pointer fields are aligned anyway.
	 */
	if (at > GS_PY_BLOCK - sizeof(__u64))
		return 0;
	field = &sc->block[at & (GS_PY_BLOCK - 1)];
	asm volatile("" : "+r"(field));
	return *(const __u64 *)field;
}

/*
 * Where w->frame's window starts in the block, reading the block again unless it holds the
 * window already; -1 when the frame cannot be read.
 */
static __always_inline long gs_py_frame_at(struct gs_py_walk *w, struct gs_py_scratch *sc)
{
	__u64 start = w->frame + w->lo, end = start + w->len, from = start;
	__u64 size;

	if (sc->blk && start >= sc->blk && end <= sc->blk + sc->blk_end)
		return (long)(start - sc->blk);
	if (w->p.instr_is_ptr) {
		from = end > GS_PY_BLOCK - 8 ? (end - (GS_PY_BLOCK - 8)) & ~7ULL : 0;
		if (from < (start & ~(GS_PY_PAGE - 1)))
			from = start & ~(GS_PY_PAGE - 1);
	}
	/*
	 * One test, then a mask: with a "!size" test too, clang tests size - 1 instead, a bound
	 * the verifiers before 6.18 do not carry over to size (6.1 and 6.12 refuse the object).
	 */
	size = end - from;
	if (size > GS_PY_BLOCK - 1) {
		sc->blk = 0;
		return -1;
	}
	asm volatile("" : "+r"(size));
	if (bpf_probe_read_user(sc->block, size & (GS_PY_BLOCK - 1), (void *)from)) {
		sc->blk = 0;
		return -1;
	}
	sc->blk = from;
	sc->blk_end = (__u32)size;
	return (long)(start - from);
}

/* Reads one frame into the scratch record (or steps over a shim); 1 stops the walk. */
static __always_inline long gs_py_walk_one(struct gs_py_walk *w, struct gs_py_scratch *sc)
{
	__u32 n = sc->n, last = n - 1;
	__u64 code, back, instr;
	long base;
	__u8 flag;

	if (!w->frame)
		return 1;
	base = gs_py_frame_at(w, sc);
	if (base < 0)
		return 1;
	back = gs_py_field(sc, (__u32)base, w->p.frame_back);
	flag = (__u8)gs_py_field(sc, (__u32)base, w->p.frame_flag);
	if (w->p.flag_kind == GS_PY_RUN_OWNER && flag >= GS_PY_OWNER_CSTACK) {
		/* the shim below an eval run: the frame above it was the run's outermost */
		if (last < GS_PY_MAX_FRAMES)
			sc->ev.frames[last].flags |= GS_PY_F_RUN_END;
		w->frame = back;
		return 0;
	}
	if (n >= GS_PY_MAX_FRAMES) {
		/*
		 * truncated: only counted; w->frame stays nonzero if the count stops too. The
		 * count lives in the map value, unknown to the verifier: kept on the stack, each
		 * of its values made the verifier walk the callback again (BPF load 10x slower).
		 */
		sc->ev.nr_more++;
		w->frame = back;
		return 0;
	}
	code = gs_py_field(sc, (__u32)base, w->p.frame_code) & ~GS_PY_TAG_BITS;
	instr = gs_py_field(sc, (__u32)base, w->p.frame_instr);
	gs_py_note_code(w, sc, code);
	/*
	 * n again, tested where it indexes: clang spilled it before the test above, and 6.1's
	 * verifier does not carry a test's bound over to a spilled copy (6.12's does)
	 */
	asm volatile("" : "+r"(n));
	if (n >= GS_PY_MAX_FRAMES)
		return 1;
	sc->ev.frames[n].code = code;
	sc->ev.frames[n].instr = (__u32)(w->p.instr_is_ptr ? instr - code : instr);
	sc->ev.frames[n].flags =
		w->p.flag_kind == GS_PY_RUN_EVERY || (w->p.flag_kind == GS_PY_RUN_IS_ENTRY && flag)
			? GS_PY_F_RUN_END
			: 0;
	sc->n = n + 1;
	w->frame = back;
	return 0;
}

/*
 * GS_PY_WALK_UNROLL frames per bpf_loop() callback, the same number of steps in all: one
 * scratch lookup and one call for several frames. The verifier checks the callback once
 * per frame it unrolls: with the walk's changing state in the scratch map value
 * (gs_py_scratch), 2 makes the programs that carry the walk ~23k processed instructions on
 * 6.18 (with that state on the stack: 215k; 110k at 1).
 */
#define GS_PY_WALK_UNROLL 2
_Static_assert(GS_PY_WALK_MAX % GS_PY_WALK_UNROLL == 0, "whole callbacks");

static __attribute__((unused)) long gs_py_walk_step(__u32 index, void *ctx)
{
	struct gs_py_walk *w = ctx;
	__u32 zero = 0;
	struct gs_py_scratch *sc = bpf_map_lookup_elem(&py_scratch, &zero);

	if (!sc)
		return 1;
#pragma unroll
	for (int i = 0; i < GS_PY_WALK_UNROLL; i++)
		if (gs_py_walk_one(w, sc))
			return 1;
	return 0;
}

/*
 * The window of a frame that holds every field read: from the lowest offset to 8 bytes
 * past the highest (a frame may end where its mapping does). 0 length: too wide.
 */
static __always_inline void gs_py_window(struct gs_py_proc *p, __u16 *lo, __u16 *len)
{
	__u16 l = p->frame_code, h = p->frame_code;

	l = p->frame_back < l ? p->frame_back : l;
	h = p->frame_back > h ? p->frame_back : h;
	l = p->frame_instr < l ? p->frame_instr : l;
	h = p->frame_instr > h ? p->frame_instr : h;
	if (p->flag_kind != GS_PY_RUN_EVERY) {
		l = p->frame_flag < l ? p->frame_flag : l;
		h = p->frame_flag > h ? p->frame_flag : h;
	}
	*lo = l;
	*len = h + 8 - l < GS_PY_FRAME_WINDOW ? h + 8 - l : 0;
	/* the walk's offsets from the window's start: no subtraction per field and frame */
	p->frame_code -= l;
	p->frame_back -= l;
	p->frame_instr -= l;
	p->frame_flag -= l; /* not in the window when unused (GS_PY_RUN_EVERY): not read then */
}

/*
 * Emits a GS_EV_PYSTACK record stamped ts_ns with the current thread's Python frames,
 * innermost first, when its process runs a recognised CPython and the thread has frames.
 * Returns 1 if it emitted one (set GS_EV_F_PYSTACK and ts_ns in the next record then), 0 if
 * not. Global, not inlined: the verifier checks it once per program, not per call site.
 */
#ifdef GS_OLD_KERNEL
/* no bpf_loop() (5.17), and no callbacks at all in an object for 5.10: no Python frames */
static __always_inline int gs_py_emit(__u64 pid_tgid, __u64 ts_ns)
{
	return 0;
}
#else
__attribute__((noinline)) int gs_py_emit(__u64 pid_tgid, __u64 ts_ns)
{
	/* one key slot for both lookups: this frame is on handle_sample's 512-byte stack (6.1) */
	__u32 pid = pid_tgid >> 32, key = pid & (GS_PY_PID_SLOTS - 1), zero = 0, n;
	__u32 *nr = cfg_python ? bpf_map_lookup_elem(&py_pids, &key) : NULL;
	struct gs_py_proc *pp = NULL;
	struct gs_py_stack_event *e;
	struct gs_py_scratch *sc;
	struct gs_py_walk w = {};
	__u64 ts, size;

	if (!nr || !*nr)
		return 0; /* not a Python process: no hash lookup */
	key = pid;
	pp = bpf_map_lookup_elem(&py_procs, &key);
	if (!pp)
		return 0;
	w.p = *pp;
	w.pid = pid;
	w.pid_tgid = pid_tgid;
	ts = gs_py_thread_state(&w.p);
	w.frame = ts ? gs_py_top_frame(&w.p, ts) : 0;
	if (!w.frame)
		return 0;
	gs_py_window(&w.p, &w.lo, &w.len);
	sc = bpf_map_lookup_elem(&py_scratch, &zero);
	if (!w.len || !sc)
		return 0;
	sc->ev.nr_more = 0;
	sc->n = 0;
	sc->blk = 0;
	sc->noted = 0;
	sc->news = 0;
	bpf_loop(GS_PY_WALK_MAX / GS_PY_WALK_UNROLL, gs_py_walk_step, &w, 0);
	e = &sc->ev;
	n = sc->n;
	if (!n)
		return 0;
	/* two tests: clang folds them into one (n - 1 > max - 1) that loses the verifier's bound */
	asm volatile("" : "+r"(n));
	if (n > GS_PY_MAX_FRAMES)
		return 0;
	size = offsetof(struct gs_py_stack_event, frames) + n * sizeof(struct gs_py_frame);
	/* stamped with the event's time: no clock read of its own (~45 ns) */
	gs_fill_hdr_at(&e->hdr, GS_EV_PYSTACK, size, pid_tgid, ts_ns);
	e->nr_frames = n;
	e->flags = 0;
	if (w.frame)
		e->nr_more = 0; /* more than were counted */
	if (e->nr_more || w.frame) {
		e->flags = GS_PY_STACK_F_TRUNCATED;
		gs_count(GS_STAT_PY_TRUNCATED);
	}
	if (gs_over_share(size))
		return 0; /* counted there */
	/*
	 * The record it belongs to follows at once and decides the wake-up (gs_submit()): with
	 * flags 0 the kernel woke the reader for nearly every stack, an irq_work and a context
	 * switch on this thread each time the reader had caught up.
	 */
	if (bpf_ringbuf_output(&events, e, size,
			       sc->news ? BPF_RB_FORCE_WAKEUP
			       : cfg_wakeup_bytes ? BPF_RB_NO_WAKEUP
						  : 0)) {
		gs_count(GS_STAT_RINGBUF_FULL);
		return 0;
	}
	return 1;
}
#endif /* GS_OLD_KERNEL */

#endif /* GS_PYTHON_BPF_H */
