/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* gs_stack_cache.bpf.h: a native stack sent once per CPU and slot, referred to after that. */
#ifndef GS_STACK_CACHE_BPF_H
#define GS_STACK_CACHE_BPF_H

/*
 * Each CPU keeps the last GS_STACK_CACHE_SLOTS native stacks it sent, with their process.
 * The walk goes into this CPU's scratch first; a stack equal to a kept one of the same
 * process, frame by frame (its first frames only pick the candidate), is sent as a reference
 * (GS_EV_F_STACK_REF), its record without frames[]. A stack sent whole is kept only once
 * its record was reserved (GS_EV_F_STACK_NEW): a reserved record is always delivered, and
 * one CPU's records reach the reader in the order they were reserved, so the reader has
 * always had the frames a reference names.
 *
 * Per CPU, not per thread: no thread's exit or tid reuse can leave an entry behind, and the
 * reader's copy has a fixed size. A uprobe's program runs with preemption off, but one
 * attached by a uprobe_multi link (6.6+) only with migration off: on a preemptible kernel
 * another thread's program may run on this CPU in the middle of one's. So a program holds
 * the CPU's cache (busy) from its walk to its record's submit; one that finds it held walks
 * into its record and sends it whole, untouched by the cache.
 */
struct gs_stack_cache {
	__u64 scratch[GS_MAX_STACK]; /* the walk of the current event */
	__u64 site;		     /* not 0: the event's call site, its stack not sampled */
	__u32 pid[GS_STACK_CACHE_SLOTS];
	__u16 nr[GS_STACK_CACHE_SLOTS]; /* 0: the slot is empty */
	__u16 cur_nr;			/* frames in scratch */
	__u16 cur_hit;	     /* the slot that holds scratch; GS_STACK_CACHE_SLOTS: none */
	__u32 next;	     /* the slot a new stack replaces */
	__u32 cur_site_only; /* scratch holds the event's call site alone */
	__u32 busy;	     /* a program uses scratch and cur_*, from its walk to its submit */
	__u32 pad;
	__u32 cur_keep; /* scratch is kept in a slot once its record is reserved */
	__u32 pad2;
	struct gs_stack_words words;	  /* the lowest of the event's walk's window */
	__u64 cur_hash;			  /* of scratch, all its words */
	__u64 hash[GS_STACK_CACHE_SLOTS]; /* of each slot's frames */
	__u64 frames[GS_STACK_CACHE_SLOTS][GS_MAX_STACK];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gs_stack_cache);
} stack_cache SEC(".maps");

/* userspace sets it where it resolves references (user/stack_cache.c) */
const volatile bool cfg_stack_cache = false;

/*
 * --stack-sample N: one event in N of each call site (process, return address) has its
 * stack walked, native and Python; the others carry their call site alone, as one frame
 * (GS_EV_STACK_SITE_ONLY). 0 or 1: every event its stack.
 */
const volatile __u32 cfg_stack_sample = 0;

/* a call site's count of events, in a table by hash of (process, return address) */
struct gs_stack_site {
	__u32 pid;
	__u32 pad;
	__u64 site;
	__u64 count;
};

/*
 * An array, not a hash: an array's lookup is a few instructions, a hash map's (LRU) costs
 * about what the walk it saves. Two sites that share a slot restart each other's count.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, GS_STACK_SITES);
	__type(key, __u32);
	__type(value, struct gs_stack_site);
} stack_sites SEC(".maps");

/*
 * The comparison runs over all GS_MAX_STACK words, past the frames too (zero in scratch,
 * as walked, and in a slot, copied whole): a loop that ended at the frame count would
 * teach the verifier another range of it on each of its 64 ways out, and it would check
 * all that follows once per range (5 times the checking of the program).
 */

#define GS_STACK_HASH_MUL 0x9e3779b97f4a7c15ULL
_Static_assert(GS_MAX_STACK % 4 == 0, "the stack hash's four lanes");

/* Whether slot k holds exactly the frames of scratch (its count compared by the caller). */
static __always_inline bool gs_stack_same(const struct gs_stack_cache *c, __u32 k)
{
	const __u64 *f = c->frames[k & (GS_STACK_CACHE_SLOTS - 1)];
	__u64 diff = 0;

	for (int i = 0; i < GS_MAX_STACK; i++)
		diff |= f[i] ^ c->scratch[i];
	return !diff;
}

/*
 * --stack-sample: whether this event's stack is walked (its Python frames too). False: the
 * call site (the return address: at a function's entry at sp, at its return the ip) is
 * kept in this CPU's cache for gs_stack_walk(), which then walks nothing. Call it first.
 */
static __always_inline bool gs_stack_sampled(struct pt_regs *ctx, const bool at_entry)
{
	__u32 zero = 0, pid = bpf_get_current_pid_tgid() >> 32, key;
	struct gs_stack_cache *c;
	struct gs_stack_site *s;
	__u64 site, n;

	if (cfg_stack_sample < 2 || cfg_no_stacks)
		return true;
	c = bpf_map_lookup_elem(&stack_cache, &zero);
	if (!c || c->busy)
		return true;
	c->site = 0;
	if (!at_entry)
		site = PT_REGS_IP(ctx);
	else if (bpf_probe_read_user(&site, sizeof(site), (void *)PT_REGS_SP(ctx)))
		return true;
	key = (__u32)((site ^ ((__u64)pid << 32)) * GS_STACK_HASH_MUL >> 40) & (GS_STACK_SITES - 1);
	s = bpf_map_lookup_elem(&stack_sites, &key);
	if (!s)
		return true;
	if (s->site != site || s->pid != pid) { /* a new site, or another's slot */
		s->site = site;
		s->pid = pid;
		s->count = 0;
	}
	/* read, then add (no fetching atomics on 5.10): CPUs racing may sample one more */
	n = s->count;
	__sync_fetch_and_add(&s->count, 1);
	if (n % cfg_stack_sample == 0)
		return true;
	c->site = site;
	return false;
}

/*
 * The user stack of this event walked into this CPU's scratch (busy from here), looked up
 * among the stacks the CPU sent (lookup: 0 for a record that must carry its frames, an
 * OOM's: its buffer is read before the others). 0: no cache, the caller walks into its
 * record.
 *
 * Inlined: a global function would be checked once, but a kprobe's global function cannot
 * take its struct pt_regs context before Linux 6.x (5.15 reads it as memory, maybe NULL).
 */
static __always_inline int gs_stack_walk_cpu(struct pt_regs *ctx, int at_entry, int lookup)
{
	__u32 zero = 0, pid = bpf_get_current_pid_tgid() >> 32, k;
	struct gs_stack_cache *c = bpf_map_lookup_elem(&stack_cache, &zero);
	__u64 h, h1 = 0, h2 = 0, h3 = 0;
	__u16 n;

	if (!c || c->busy)
		return 0;
	c->busy = 1;
	c->cur_hit = GS_STACK_CACHE_SLOTS;
	c->cur_keep = 0;
	c->cur_site_only = 0;
	c->words.n = 0;
	/* not sampled (gs_stack_sampled() ran just before for every event that looks up) */
	if (cfg_stack_sample > 1 && lookup && c->site) {
		c->scratch[0] = c->site;
		c->cur_nr = 1;
		c->cur_site_only = 1;
		c->site = 0;
		return 1;
	}
	__builtin_memset(c->scratch, 0, sizeof(c->scratch)); /* the walk's frames, then zeros */
	c->cur_nr = at_entry ? gs_user_stack_at_entry_words(ctx, c->scratch, &c->words)
			     : gs_user_stack_words(ctx, c->scratch, &c->words);
	n = c->cur_nr;
	if (!n || n > GS_MAX_STACK || !lookup ||
	    bpf_get_smp_processor_id() >= GS_STACK_CACHE_MAX / GS_STACK_CACHE_SLOTS)
		return 1;
	c->cur_keep = 1;
	/*
	 * A candidate by its count, process and a hash of every frame (its innermost frames
	 * alone picked the wrong one of stacks that share them, an allocator's callers'); then
	 * every frame. Four lanes, not one chain of 64 multiplies each waiting on the last.
	 */
	h = n;
	for (int i = 0; i < GS_MAX_STACK; i += 4) {
		h = (h ^ c->scratch[i]) * GS_STACK_HASH_MUL;
		h1 = (h1 ^ c->scratch[i + 1]) * GS_STACK_HASH_MUL;
		h2 = (h2 ^ c->scratch[i + 2]) * GS_STACK_HASH_MUL;
		h3 = (h3 ^ c->scratch[i + 3]) * GS_STACK_HASH_MUL;
	}
	h = ((h * GS_STACK_HASH_MUL ^ h1) * GS_STACK_HASH_MUL ^ h2) * GS_STACK_HASH_MUL ^ h3;
	c->cur_hash = h;
	for (k = 0; k < GS_STACK_CACHE_SLOTS; k++)
		if (c->nr[k] == n && c->pid[k] == pid && c->hash[k] == h)
			break;
	/* one comparison loop, after the slots' loop: the verifier walks it once, not per slot */
	if (k < GS_STACK_CACHE_SLOTS && gs_stack_same(c, k))
		c->cur_hit = k;
	return 1;
}

/* gs_stack_walk_cpu()'s cache (NULL: none, the caller walks into its record) */
static __always_inline struct gs_stack_cache *gs_stack_walk(struct pt_regs *ctx,
							    const bool at_entry, bool lookup)
{
	__u32 zero = 0;

	if (!cfg_stack_cache || cfg_no_stacks || !gs_stack_walk_cpu(ctx, at_entry, lookup))
		return NULL;
	/* never NULL (an array's key 0): the cache would stay busy, each stack sent whole */
	return bpf_map_lookup_elem(&stack_cache, &zero);
}

/*
 * The n words (a constant) at user address addr, if the walk's window held them: true and
 * out[] filled; else the caller reads them itself.
 */
static __always_inline bool gs_stack_words_at(const struct gs_stack_cache *c, __u64 addr,
					      const int n, __u64 *out)
{
	__u64 off;

	if (!c)
		return false;
	off = addr - c->words.lo; /* below the window: past it */
	if ((off & 7) || off > sizeof(c->words.val) - n * sizeof(__u64) ||
	    off + n * sizeof(__u64) > c->words.n)
		return false;
	off /= sizeof(__u64);
	/*
	 * The mask kept: clang, knowing off's bound, made it `off & -8`, whose bound 6.12's
	 * verifier had lost after the comparison above ("unbounded min value").
	 */
	barrier_var(off);
	for (int i = 0; i < n; i++)
		out[i] = c->words.val[(off + i) & (GS_STACK_WORDS - 1)];
	return true;
}

/* Whether the walk found its stack kept: its record is reserved without frames[]. */
static __always_inline bool gs_stack_hit(const struct gs_stack_cache *c)
{
	return c && c->cur_hit < GS_STACK_CACHE_SLOTS;
}

/*
 * Into a reserved record: the frames (a miss), or none (a hit). Returns nr_frames. Its
 * header is filled after this (gs_fill_hdr() clears the flags): gs_stack_sent() then.
 */
static __always_inline __u16 gs_stack_copy(const struct gs_stack_cache *c, __u64 *frames)
{
	__u64 size = (__u64)c->cur_nr * sizeof(__u64);

	if (gs_stack_hit(c))
		return 0;
	/*
	 * One helper call: unrolled, the copy was 128 instructions per call site to verify. The
	 * frames only, not the zeros after them: each cache line of the ring buffer a record
	 * writes is one the reader had, ~50-100 ns here. Bounded at the call (6.1's verifier
	 * loses a bound that a spill came before); never more than scratch holds.
	 */
	barrier_var(size);
	if (size > sizeof(c->scratch))
		return 0;
	bpf_probe_read_kernel(frames, size, c->scratch);
	return size / sizeof(__u64);
}

/*
 * After the record's header is filled, before its submit: says what its stack is, keeps a
 * stack sent whole, and frees the CPU's cache.
 */
static __always_inline void gs_stack_sent(struct gs_stack_cache *c, struct gs_event_hdr *hdr)
{
	__u32 base = bpf_get_smp_processor_id() * GS_STACK_CACHE_SLOTS, k;

	if (gs_stack_hit(c)) {
		hdr->flags |= GS_EV_F_STACK_REF | ((base + c->cur_hit) & GS_EV_STACK_SLOT_MASK);
	} else if (c->cur_site_only) {
		hdr->flags |= GS_EV_F_STACK_NEW | GS_EV_F_STACK_REF; /* GS_EV_STACK_SITE_ONLY */
	} else if (c->cur_keep) { /* else not looked up, or no frames: not kept */
		k = c->next & (GS_STACK_CACHE_SLOTS - 1);
		c->next = k + 1;
		bpf_probe_read_kernel(c->frames[k], sizeof(c->scratch), c->scratch);
		c->nr[k] = c->cur_nr;
		c->pid[k] = hdr->pid;
		c->hash[k] = c->cur_hash;
		hdr->flags |= GS_EV_F_STACK_NEW | ((base + k) & GS_EV_STACK_SLOT_MASK);
	}
	c->busy = 0;
}

/* a record's flags for the records sent before it: its DWARF slice, its Python frames */
static __always_inline __u16 gs_stack_rec_flags(bool ustack, int py)
{
	return (ustack ? GS_EV_F_USTACK : 0) | (py ? GS_EV_F_PYSTACK : 0);
}

/*
 * The end of every record that carries a user stack, once its other fields are written: its
 * frames (with_frames false: none, for a hit's reference, --stacks none or a record that has
 * no stack; else copied from this CPU's cache sc, or walked into the record without one),
 * its header sized to the frames it has and stamped ts, flags (GS_EV_F_USTACK,
 * GS_EV_F_PYSTACK: the records sent before it for it, stamped ts too), then the cache's mark
 * (gs_stack_sent()). frames_off: offsetof(record, frames). Returns the record's nr_frames;
 * its submit is the caller's.
 */
static __always_inline __u16 gs_stack_tail(void *ctx, struct gs_event_hdr *hdr, __u16 type,
					   __u32 frames_off, __u64 *frames,
					   struct gs_stack_cache *sc, __u64 pid_tgid, __u64 ts,
					   __u16 flags, const bool with_frames, const bool at_entry)
{
	__u16 n = 0;

	if (with_frames && sc)
		n = gs_stack_copy(sc, frames);
	else if (with_frames)
		n = at_entry ? gs_user_stack_at_entry(ctx, frames) : gs_user_stack(ctx, frames);
	gs_fill_hdr_at(hdr, type, frames_off + n * sizeof(__u64), pid_tgid, ts);
	hdr->flags = flags;
	if (sc)
		gs_stack_sent(sc, hdr);
	return n;
}

/* A walk whose record could not be reserved: the CPU's cache is free again, unchanged. */
static __always_inline void gs_stack_unused(struct gs_stack_cache *c)
{
	if (c)
		c->busy = 0;
}

#endif /* GS_STACK_CACHE_BPF_H */
