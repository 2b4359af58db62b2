// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* mem.bpf.c: CUDA runtime and driver allocation calls, read at return, with user stacks. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "gs_common.bpf.h"

/*
 * An entry older than this is a call whose return we never saw (attached mid-call);
 * it must not make later calls on the thread look nested.
 */
#define STALE_CALL_NS (60ULL * 1000000000ULL)

enum call_kind { CALL_ALLOC = 1, CALL_FREE = 2 };

/* What the entry probe saves for the return probe of the same thread. */
struct call {
	__u64 out_ptr; /* where the callee writes the new pointer */
	__u64 size;
	__u64 pitch_ptr; /* cudaMallocPitch: *pitch * height is the size */
	__u64 height;
	__u64 free_ptr;
	__u64 entry_ts_ns;
	__u16 api;
	__u16 kind;
	__u32 depth; /* nested probed calls (cudaMalloc -> cuMemAlloc_v2) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, GS_MAX_INFLIGHT);
	__type(key, __u32);
	__type(value, struct call);
} calls SEC(".maps");

/*
 * Returns true when this thread is already inside a probed call: the runtime calls the
 * driver through exported entry points, and one user call must count once.
 */
static __always_inline bool enter_nested(__u32 tid, __u64 now)
{
	struct call *c = bpf_map_lookup_elem(&calls, &tid);

	if (!c || now - c->entry_ts_ns > STALE_CALL_NS)
		return false;
	c->depth++;
	return true;
}

/*
 * Returns the outermost call of this thread at the return of api, NULL for a nested return.
 * A return whose entry was not counted (its probe was attached mid-call) carries another
 * API's cookie and must not consume the outer call's state.
 */
static __always_inline struct call *exit_outermost(__u32 tid, __u16 api)
{
	struct call *c = bpf_map_lookup_elem(&calls, &tid);

	if (!c)
		return NULL;
	if (c->depth) {
		c->depth--;
		return NULL;
	}
	return c->api == api ? c : NULL;
}

static __always_inline int save_call(struct call *c)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (bpf_map_update_elem(&calls, &tid, c, BPF_ANY)) {
		gs_count(GS_STAT_INFLIGHT_FULL);
		return -1;
	}
	return 0;
}

static __always_inline int enter_alloc(void *ctx, __u64 out_ptr, __u64 size, __u64 pitch_ptr,
				       __u64 height)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct call c = {};

	if (!gs_is_target(pid_tgid >> 32) || enter_nested((__u32)pid_tgid, now))
		return 0;
	c.out_ptr = out_ptr;
	c.size = size;
	c.pitch_ptr = pitch_ptr;
	c.height = height;
	c.entry_ts_ns = now;
	c.api = bpf_get_attach_cookie(ctx);
	c.kind = CALL_ALLOC;
	save_call(&c);
	return 0;
}

/* cudaMalloc(void **, size_t, ...) and every other API with the same first two arguments */
SEC("uprobe")
int BPF_KPROBE(mem_alloc_enter, void *out_ptr, __u64 size)
{
	return enter_alloc(ctx, (__u64)out_ptr, size, 0, 0);
}

/* cudaMallocPitch(void **, size_t *pitch, size_t width, size_t height), cuMemAllocPitch_v2 */
SEC("uprobe")
int BPF_KPROBE(mem_alloc_pitch_enter, void *out_ptr, void *pitch_ptr, __u64 width, __u64 height)
{
	return enter_alloc(ctx, (__u64)out_ptr, 0, (__u64)pitch_ptr, height);
}

SEC("uretprobe")
int BPF_KRETPROBE(mem_alloc_exit, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct gs_mem_alloc *e;
	struct call *c;
	long nbytes;

	c = exit_outermost(tid, (__u16)bpf_get_attach_cookie(ctx));
	if (!c || c->kind != CALL_ALLOC)
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		gs_count(GS_STAT_RINGBUF_FULL);
		bpf_map_delete_elem(&calls, &tid);
		return 0;
	}
	e->ret = (__s32)ret;
	e->api = c->api;
	e->entry_ts_ns = c->entry_ts_ns;
	e->size = c->size;
	e->ptr = 0;
	if (e->ret == 0) {
		/* the pointer exists only now, in the out-parameter saved at entry */
		if (bpf_probe_read_user(&e->ptr, sizeof(e->ptr), (void *)c->out_ptr))
			gs_count(GS_STAT_USER_READ_FAILED);
		if (c->pitch_ptr) {
			__u64 pitch = 0;

			if (bpf_probe_read_user(&pitch, sizeof(pitch), (void *)c->pitch_ptr))
				gs_count(GS_STAT_USER_READ_FAILED);
			e->size = pitch * c->height;
		}
	}
	bpf_map_delete_elem(&calls, &tid);

	/* at return the stack starts in the caller: the allocating function is frame 0 */
	nbytes = bpf_get_stack(ctx, e->frames, sizeof(e->frames), BPF_F_USER_STACK);
	if (nbytes < 0) {
		gs_count(GS_STAT_STACK_FAILED);
		nbytes = 0;
	}
	e->nr_frames = nbytes / sizeof(__u64);
	gs_fill_hdr(&e->hdr, GS_EV_MEM_ALLOC,
		    offsetof(struct gs_mem_alloc, frames) + e->nr_frames * sizeof(__u64), pid_tgid);
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/*
 * The free is reported at entry so that it is ordered before any allocation that reuses
 * the address on another thread; a failure is reported separately at return.
 */
SEC("uprobe")
int BPF_KPROBE(mem_free_enter, __u64 ptr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 now = bpf_ktime_get_ns();
	struct gs_mem_free *e;
	struct call c = {};

	if (!gs_is_target(pid_tgid >> 32) || enter_nested((__u32)pid_tgid, now))
		return 0;
	c.free_ptr = ptr;
	c.entry_ts_ns = now;
	c.api = bpf_get_attach_cookie(ctx);
	c.kind = CALL_FREE;
	if (save_call(&c))
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		gs_count(GS_STAT_RINGBUF_FULL);
		return 0;
	}
	gs_fill_hdr(&e->hdr, GS_EV_MEM_FREE, sizeof(*e), pid_tgid);
	e->ptr = ptr;
	e->api = c.api;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(mem_free_exit, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct gs_mem_free_failed *e;
	struct call *c;
	__u64 ptr;
	__u16 api;

	c = exit_outermost(tid, (__u16)bpf_get_attach_cookie(ctx));
	if (!c || c->kind != CALL_FREE)
		return 0;
	ptr = c->free_ptr;
	api = c->api;
	bpf_map_delete_elem(&calls, &tid);
	if ((__s32)ret == 0)
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		gs_count(GS_STAT_RINGBUF_FULL);
		return 0;
	}
	gs_fill_hdr(&e->hdr, GS_EV_MEM_FREE_FAILED, sizeof(*e), pid_tgid);
	e->ptr = ptr;
	e->ret = (__s32)ret;
	e->api = api;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
