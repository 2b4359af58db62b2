// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* torch.bpf.c: PyTorch tensor memory (USDT, profiler hooks, allocator symbols, CPU) and OOMs. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "gs_common.bpf.h"
#include "gs_ustack.bpf.h"
#include "gs_python.bpf.h"

/*
 * One probe family per way PyTorch exposes tensor memory (bpf_cookie / source: the
 * GS_TORCH_SRC_* value); userspace attaches the best one per process. Signatures and
 * registers: notes/cuda-torch-facts.md sections 2.2 to 2.5 and 3.
 */

/* typeid(c10::OutOfMemoryError).name(), the mangled name __cxa_throw's type_info carries */
#define OOM_TYPE_NAME	  "N3c1016OutOfMemoryErrorE"
#define OOM_TYPE_NAME_LEN 25 /* with the NUL */

/* an allocation call between its entry and its return, per thread */
struct pending {
	__u64 size;
	__u64 out_ptr; /* NativeCachingAllocator::malloc's void **devPtr; 0 for alloc_cpu */
	__u64 stream;
	__s8 device;
	__u8 source; /* GS_TORCH_SRC_*; 0: the thread has no call pending */
	__u8 given;  /* mallocWithAddress: out_ptr is the block's address itself */
	__u8 pad[5];
};

/* in task storage: one slot per thread, written in place, no hash update and delete per call */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending);
} pendings SEC(".maps");

static __always_inline struct pending *pending_get(__u64 flags)
{
	return bpf_task_storage_get(&pendings, bpf_get_current_task_btf(), NULL, flags);
}

/* --stacks dwarf: a GS_EV_USTACK slice precedes each record that carries a stack */
const volatile bool cfg_ustack = false;

/* The records that precede a record with a stack, and the timestamp that pairs them with it */
struct stack_marks {
	__u64 ts;
	__u16 flags; /* GS_EV_F_USTACK, GS_EV_F_PYSTACK */
};

/* The stack slice and the Python frames go first, so that userspace has them with the record */
static __always_inline void emit_stacks(struct pt_regs *ctx, __u64 pid_tgid, struct stack_marks *m)
{
	m->ts = bpf_ktime_get_ns();
	m->flags = 0;
	if (cfg_ustack && gs_emit_ustack(ctx, pid_tgid, m->ts))
		m->flags |= GS_EV_F_USTACK;
	/*
	 * Arithmetic, not a branch: two constants here would be two verifier states through
	 * the stack walk that follows, and --stacks dwarf would pass the 1M-instruction limit.
	 */
	m->flags |= (__u16)(GS_EV_F_PYSTACK * (gs_py_emit(pid_tgid, m->ts) & 1));
}

static __always_inline void mark_stacks(struct gs_event_hdr *hdr, const struct stack_marks *m)
{
	if (m->flags) {
		hdr->flags |= m->flags;
		hdr->ts_ns = m->ts;
	}
}

/* with_stack: an allocation, whose record carries a stack (and, in dwarf mode, a slice) */
static __always_inline struct gs_torch_mem *reserve_mem(struct pt_regs *ctx, __u64 pid_tgid,
							bool with_stack, struct stack_marks *m)
{
	struct gs_torch_mem *e;

	m->flags = 0;
	if (!gs_is_target(pid_tgid >> 32))
		return NULL;
	if (with_stack)
		emit_stacks(ctx, pid_tgid, m);
	e = gs_reserve(sizeof(*e));
	if (!e)
		return NULL;
	e->ptr = e->size = e->total_allocated = e->total_reserved = e->stream = 0;
	e->flags = 0;
	e->nr_frames = 0;
	e->device = -1;
	e->device_type = GS_TORCH_DEV_CUDA;
	return e;
}

/*
 * At a function's first instruction the return address is at the stack pointer, not yet in
 * the frame-pointer chain, which starts at the caller's caller: frame 0 (the probed
 * function itself) becomes the caller.
 */
static __always_inline __u16 entry_stack(struct pt_regs *ctx, __u64 *frames)
{
	__u16 n = gs_user_stack(ctx, frames);

	if (n && bpf_probe_read_user(&frames[0], sizeof(frames[0]), (void *)PT_REGS_SP(ctx)))
		n = 0;
	return n;
}

static __always_inline void submit_mem(struct pt_regs *ctx, struct gs_torch_mem *e, __u64 pid_tgid,
				       __u8 source, __u8 op, bool at_entry,
				       const struct stack_marks *m)
{
	e->source = source;
	e->op = op;
	/* stacks only where memory is taken: a free is matched by its pointer */
	if (op == GS_TORCH_OP_ALLOC)
		e->nr_frames =
			at_entry ? entry_stack(ctx, e->frames) : gs_user_stack(ctx, e->frames);
	gs_fill_hdr(&e->hdr, GS_EV_TORCH_MEM,
		    offsetof(struct gs_torch_mem, frames) + e->nr_frames * sizeof(__u64), pid_tgid);
	mark_stacks(&e->hdr, m);
	gs_submit(e);
}

/* pytorch:malloc(devPtr, device, size, stream.id()), at the end of allocate(), size != 0 */
SEC("usdt")
int BPF_USDT(torch_usdt_malloc, void *ptr, long device, __u64 size, long stream)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e = reserve_mem(ctx, pid_tgid, true, &marks);

	if (!e)
		return 0;
	e->ptr = (__u64)ptr;
	e->size = size;
	e->device = (__s8)device;
	e->stream = stream;
	submit_mem(ctx, e, pid_tgid, GS_TORCH_SRC_USDT, GS_TORCH_OP_ALLOC, false, &marks);
	return 0;
}

/* pytorch:free(ptr), in the deleter */
SEC("usdt")
int BPF_USDT(torch_usdt_free, void *ptr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e = reserve_mem(ctx, pid_tgid, false, &marks);

	if (!e)
		return 0;
	e->ptr = (__u64)ptr;
	submit_mem(ctx, e, pid_tgid, GS_TORCH_SRC_USDT, GS_TORCH_OP_FREE, false, &marks);
	return 0;
}

/*
 * c10::reportMemoryUsageToProfiler(void *ptr, int64_t alloc_size, total_allocated,
 * total_reserved, c10::Device): Device is {int8 type, int8 index} in the low 16 bits of r8.
 * The CPU allocator calls it too when memory profiling is on; alloc_cpu covers CPU tensors.
 */
SEC("uprobe")
int BPF_KPROBE(torch_report_usage, void *ptr, long alloc_size, __u64 total_allocated,
	       __u64 total_reserved, __u64 device)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e;

	if ((__u8)device == GS_TORCH_DEV_CPU || !alloc_size)
		return 0;
	e = reserve_mem(ctx, pid_tgid, alloc_size > 0, &marks);
	if (!e)
		return 0;
	e->ptr = (__u64)ptr;
	e->size = alloc_size < 0 ? -alloc_size : alloc_size;
	e->total_allocated = total_allocated;
	e->total_reserved = total_reserved;
	e->device_type = (__u8)device;
	e->device = (__s8)(device >> 8);
	e->flags = GS_TORCH_F_TOTALS;
	submit_mem(ctx, e, pid_tgid, GS_TORCH_SRC_REPORT,
		   alloc_size > 0 ? GS_TORCH_OP_ALLOC : GS_TORCH_OP_FREE, true, &marks);
	return 0;
}

static __always_inline int save_pending(__u64 size, __u64 out_ptr, __s8 device, __u64 stream,
					__u8 source, __u8 given)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct pending *p;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	p = pending_get(BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!p) {
		gs_count(GS_STAT_INFLIGHT_FULL);
		return 0;
	}
	p->size = size;
	p->out_ptr = out_ptr;
	p->stream = stream;
	p->device = device;
	p->source = source;
	p->given = given;
	return 0;
}

/* the pointer exists at return: alloc_cpu returns it, malloc writes it through devPtr */
static __always_inline int emit_pending(struct pt_regs *ctx, __u64 ret, __u8 source)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e;
	struct pending *p = pending_get(0);

	if (!p || p->source != source)
		return 0;
	e = reserve_mem(ctx, pid_tgid, true, &marks);
	if (!e) {
		p->source = 0;
		return 0;
	}
	e->size = p->size;
	e->device = p->device;
	e->stream = p->stream;
	if (p->given) {
		e->ptr = p->out_ptr;
	} else if (p->out_ptr) {
		if (bpf_probe_read_user(&e->ptr, sizeof(e->ptr), (void *)p->out_ptr))
			gs_count(GS_STAT_USER_READ_FAILED);
	} else {
		e->ptr = ret;
		e->device_type = GS_TORCH_DEV_CPU;
	}
	p->source = 0;
	if (!e->ptr) {
		bpf_ringbuf_discard(e, 0);
		return 0;
	}
	submit_mem(ctx, e, pid_tgid, source, GS_TORCH_OP_ALLOC, false, &marks);
	return 0;
}

/* c10::alloc_cpu(size_t nbytes) */
SEC("uprobe")
int BPF_KPROBE(alloc_cpu_enter, __u64 nbytes)
{
	return save_pending(nbytes, 0, -1, 0, GS_TORCH_SRC_CPU, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(alloc_cpu_exit, __u64 ret)
{
	return emit_pending(ctx, ret, GS_TORCH_SRC_CPU);
}

/* c10::free_cpu(void *data) */
SEC("uprobe")
int BPF_KPROBE(free_cpu_enter, void *data)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e;

	if (!data)
		return 0;
	e = reserve_mem(ctx, pid_tgid, false, &marks);
	if (!e)
		return 0;
	e->ptr = (__u64)data;
	e->device_type = GS_TORCH_DEV_CPU;
	submit_mem(ctx, e, pid_tgid, GS_TORCH_SRC_CPU, GS_TORCH_OP_FREE, true, &marks);
	return 0;
}

/*
 * at::MapAllocator::MapAllocator(WithFd, string_view filename, int fd, int flags, size_t size)
 * in libtorch_cpu.so: the file-backed shared memory of a CPU tensor (share_memory_(),
 * tensors passed between processes). this in rdi; the empty WithFd takes rsi; the
 * string_view rdx and rcx; fd r8, flags r9; size is the 7th argument, on the stack (2.5 and
 * 2.15 alike). Keyed by the MapAllocator, which the tensor's DataPtr owns until its
 * destructor. Counted at entry: a constructor that throws (shm_open failed) is not undone.
 */
SEC("uprobe")
int BPF_KPROBE(map_allocator_enter, void *self)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e;
	__u64 size = 0;

	if (!self)
		return 0;
	e = reserve_mem(ctx, pid_tgid, true, &marks);
	if (!e)
		return 0;
	if (bpf_probe_read_user(&size, sizeof(size), (void *)(PT_REGS_SP(ctx) + 8)))
		gs_count(GS_STAT_USER_READ_FAILED);
	e->ptr = (__u64)self;
	e->size = size;
	e->device_type = GS_TORCH_DEV_CPU;
	submit_mem(ctx, e, pid_tgid, GS_TORCH_SRC_CPU, GS_TORCH_OP_ALLOC, true, &marks);
	return 0;
}

/* at::MapAllocator::~MapAllocator() (the base object destructor, which every other calls) */
SEC("uprobe")
int BPF_KPROBE(map_allocator_free, void *self)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e;

	if (!self)
		return 0;
	e = reserve_mem(ctx, pid_tgid, false, &marks);
	if (!e)
		return 0;
	e->ptr = (__u64)self;
	e->device_type = GS_TORCH_DEV_CPU;
	submit_mem(ctx, e, pid_tgid, GS_TORCH_SRC_CPU, GS_TORCH_OP_FREE, true, &marks);
	return 0;
}

/*
 * THCCachingAllocator::malloc(void **devPtr, int device, size_t size, cudaStream_t) (1.13),
 * NativeCachingAllocator::malloc(void **, int | DeviceIndex, size_t, cudaStream_t) (2.x):
 * this in rdi, devPtr rsi, device dl/edx, size rcx, stream r8.
 */
SEC("uprobe")
int BPF_KPROBE(caching_malloc_enter, void *self, void *dev_ptr, long device, __u64 size,
	       void *stream)
{
	return save_pending(size, (__u64)dev_ptr, (__s8)device, (__u64)stream, GS_TORCH_SRC_SYMBOLS,
			    0);
}

/*
 * DeviceCachingAllocator::mallocWithAddress(size_t size, cudaStream_t stream, void *ptr)
 * (2.15, called by allocateWithAddress without going through malloc): this in rdi, size
 * rsi, stream rdx, ptr rcx. The block it returns starts at ptr; the device is the
 * segment's (userspace). caching_malloc_returned sits after its call sites too.
 */
SEC("uprobe")
int BPF_KPROBE(malloc_with_address_enter, void *self, __u64 size, void *stream, void *ptr)
{
	return save_pending(size, (__u64)ptr, -1, (__u64)stream, GS_TORCH_SRC_SYMBOLS, 1);
}

/*
 * Not a return probe: a uretprobe replaces the return address, and an exception thrown
 * through the frame (the OOM is one) then finds no unwind info and calls std::terminate.
 * This plain probe sits on the instruction after each direct call to malloc.
 */
SEC("uprobe")
int BPF_KPROBE(caching_malloc_returned)
{
	return emit_pending(ctx, 0, GS_TORCH_SRC_SYMBOLS);
}

/* THCCachingAllocator::free(void *) / NativeCachingAllocator::free(void *): this, ptr */
SEC("uprobe")
int BPF_KPROBE(caching_free_enter, void *self, void *ptr)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_mem *e;

	if (!ptr)
		return 0;
	e = reserve_mem(ctx, pid_tgid, false, &marks);
	if (!e)
		return 0;
	e->ptr = (__u64)ptr;
	submit_mem(ctx, e, pid_tgid, GS_TORCH_SRC_SYMBOLS, GS_TORCH_OP_FREE, true, &marks);
	return 0;
}

static __always_inline int emit_oom(struct pt_regs *ctx, __u8 source, __u64 size, __u64 allocated,
				    __u64 reserved, __u64 device)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct stack_marks marks;
	struct gs_torch_oom *e;

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	emit_stacks(ctx, pid_tgid, &marks);
	e = gs_reserve_oom(sizeof(*e));
	if (!e)
		return 0;
	e->size = size;
	e->total_allocated = allocated;
	e->total_reserved = reserved;
	e->source = source;
	e->device_type = (__u8)device;
	e->device = (__s8)(device >> 8);
	e->pad = 0;
	e->pad2 = 0;
	e->nr_frames = entry_stack(ctx, e->frames);
	gs_fill_hdr(&e->hdr, GS_EV_TORCH_OOM,
		    offsetof(struct gs_torch_oom, frames) + e->nr_frames * sizeof(__u64), pid_tgid);
	mark_stacks(&e->hdr, &marks);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP); /* read first, at once */
	return 0;
}

/* c10::reportOutOfMemoryToProfiler(int64_t alloc_size, allocated, reserved, Device) */
SEC("uprobe")
int BPF_KPROBE(torch_report_oom, long alloc_size, __u64 allocated, __u64 reserved, __u64 device)
{
	return emit_oom(ctx, GS_TORCH_OOM_REPORT, alloc_size, allocated, reserved, device);
}

/*
 * __cxa_throw(void *obj, std::type_info *tinfo, void (*dest)(void *)): only throws of
 * c10::OutOfMemoryError. type_info is {vtable, const char *__name}. Inside the allocator's
 * malloc (symbol source) the requested size is still pending for this thread.
 */
SEC("uprobe")
int BPF_KPROBE(cxa_throw_enter, void *obj, void *tinfo)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	char name[OOM_TYPE_NAME_LEN] = {};
	const char want[OOM_TYPE_NAME_LEN] = OOM_TYPE_NAME;
	struct pending *p;
	__u64 name_ptr = 0, size = 0, device = GS_TORCH_DEV_CUDA | (0xffULL << 8);

	if (!gs_is_target(pid_tgid >> 32))
		return 0;
	if (bpf_probe_read_user(&name_ptr, sizeof(name_ptr), tinfo + 8) ||
	    bpf_probe_read_user_str(name, sizeof(name), (void *)name_ptr) != OOM_TYPE_NAME_LEN)
		return 0;
	for (int i = 0; i < OOM_TYPE_NAME_LEN; i++)
		if (name[i] != want[i])
			return 0;
	p = pending_get(0);
	if (p && p->source == GS_TORCH_SRC_SYMBOLS) {
		size = p->size;
		device = GS_TORCH_DEV_CUDA | ((__u64)(__u8)p->device << 8);
		p->source = 0;
	}
	return emit_oom(ctx, GS_TORCH_OOM_THROW, size, 0, 0, device);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
