// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* event_decode.c: size checks of every record kind against the shared ABI. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "user/event_decode.h"
#include "bpf/gs_nvtx.h"

/* The layouts are ABI between bpf/ and user space: a change must be deliberate. */
_Static_assert(sizeof(struct gs_event_hdr) == 24, "gs_event_hdr layout");
_Static_assert(sizeof(struct gs_proc_event) == 48, "gs_proc_event layout");
_Static_assert(sizeof(struct gs_proc_fork) == 32, "gs_proc_fork layout");
_Static_assert(sizeof(struct gs_target) == 16, "gs_target layout");
_Static_assert(sizeof(struct gs_stopped) == 16, "gs_stopped layout");
_Static_assert(sizeof(struct gs_mem_alloc) == 24 + 32 + 8 * GS_MAX_STACK, "gs_mem_alloc layout");
_Static_assert(offsetof(struct gs_mem_alloc, frames) == 56, "gs_mem_alloc frames offset");
_Static_assert(sizeof(struct gs_mem_free) == 40, "gs_mem_free layout");
_Static_assert(offsetof(struct gs_mem_free_ret, frames) == 48, "gs_mem_free_ret frames offset");
_Static_assert(offsetof(struct gs_cuda_call, frames) == 168, "gs_cuda_call frames offset");
_Static_assert(offsetof(struct gs_cpu_sample, frames) == 48 + 8 * GS_CPU_KERNEL_STACK,
	       "gs_cpu_sample frames offset");
_Static_assert(sizeof(struct gs_cpu_key) == 32, "gs_cpu_key layout");
_Static_assert(offsetof(struct gs_torch_mem, frames) == 72, "gs_torch_mem frames offset");
_Static_assert(offsetof(struct gs_torch_oom, frames) == 56, "gs_torch_oom frames offset");
_Static_assert(offsetof(struct gs_ustack, data) == 32, "gs_ustack data offset");
_Static_assert(sizeof(struct gs_ustack_event) == 24 + 32 + GS_USTACK_BYTES, "gs_ustack_event");
_Static_assert(sizeof(struct gs_py_proc) == 48, "gs_py_proc layout");
_Static_assert(offsetof(struct gs_py_code_event, name_data) == 80, "gs_py_code_event layout");
_Static_assert(offsetof(struct gs_py_stack_event, frames) == 32, "gs_py_stack_event frames");
_Static_assert(sizeof(struct gs_py_frame) == 16, "gs_py_frame layout");
_Static_assert(sizeof(struct gs_gpu_record) == 24 + 8 + GS_GPU_RECORD_BYTES + GS_GPU_NAME_BYTES,
	       "gs_gpu_record layout");
_Static_assert(sizeof(struct gs_gpu_api) == 40, "gs_gpu_api layout");
_Static_assert(sizeof(struct gs_gpu_clock) == 48, "gs_gpu_clock layout");
_Static_assert(sizeof(struct gs_nvtx_usdt) == 72, "gs_nvtx_usdt layout");
_Static_assert(sizeof(struct gs_nvtx_event) ==
		       24 + 48 + GS_NVTX_MESSAGE_BYTES + 2 * GS_NVTX_NAME_BYTES,
	       "gs_nvtx_event layout");

/* Bytes a record of a fixed-size type needs; 0 for a type that is not one. */
static size_t fixed_need(unsigned int type)
{
	switch (type) {
	case GS_EV_PROC_EXEC:
	case GS_EV_PROC_EXIT:
	case GS_EV_PROC_OOM_KILL:
	case GS_EV_LIBS_CHANGED:
		return sizeof(struct gs_proc_event);
	case GS_EV_PROC_FORK:
		return sizeof(struct gs_proc_fork);
	case GS_EV_MEM_FREE:
		return sizeof(struct gs_mem_free);
	case GS_EV_USTACK:
		return sizeof(struct gs_ustack_event);
	case GS_EV_PYCODE:
		return sizeof(struct gs_py_code_event);
	case GS_EV_GPU_RECORD: /* sizes inside: profilers/cuda/gpu_activity.c */
		return sizeof(struct gs_gpu_record);
	case GS_EV_GPU_API:
		return sizeof(struct gs_gpu_api);
	case GS_EV_GPU_DROPPED:
		return sizeof(struct gs_gpu_dropped);
	case GS_EV_GPU_CLOCK:
		return sizeof(struct gs_gpu_clock);
	case GS_EV_NVTX:
		return sizeof(struct gs_nvtx_event);
	default:
		return 0;
	}
}

/* gs_event_decode() reads each framed type's count as a __u16 */
#define NR_FRAMES_IS_U16(ev) \
	_Static_assert(sizeof(((const struct ev *)0)->nr_frames) == 2, #ev " nr_frames is __u16")
NR_FRAMES_IS_U16(gs_mem_alloc);
NR_FRAMES_IS_U16(gs_mem_free_ret);
NR_FRAMES_IS_U16(gs_cuda_call);
NR_FRAMES_IS_U16(gs_cpu_sample);
NR_FRAMES_IS_U16(gs_torch_mem);
NR_FRAMES_IS_U16(gs_torch_oom);
NR_FRAMES_IS_U16(gs_py_stack_event);

/* A record type whose fixed part holds a __u16 nr_frames count of frames[] entries. */
struct framed_layout {
	unsigned int type;
	size_t frames_off, nr_off, frame_size, max_frames;
};

#define FRAMED(type, ev, max)                                                      \
	{                                                                          \
		type, offsetof(struct ev, frames), offsetof(struct ev, nr_frames), \
			sizeof(((const struct ev *)0)->frames[0]), max             \
	}

static const struct framed_layout framed_layouts[] = {
	FRAMED(GS_EV_MEM_ALLOC, gs_mem_alloc, GS_MAX_STACK),
	FRAMED(GS_EV_MEM_FREE_RET, gs_mem_free_ret, GS_MAX_STACK),
	FRAMED(GS_EV_CUDA_CALL, gs_cuda_call, GS_MAX_STACK),
	FRAMED(GS_EV_CPU_SAMPLE, gs_cpu_sample, GS_MAX_STACK),
	FRAMED(GS_EV_TORCH_MEM, gs_torch_mem, GS_MAX_STACK),
	FRAMED(GS_EV_TORCH_OOM, gs_torch_oom, GS_MAX_STACK),
	FRAMED(GS_EV_PYSTACK, gs_py_stack_event, GS_PY_MAX_FRAMES),
};

static const struct framed_layout *framed_layout(unsigned int type)
{
	for (size_t i = 0; i < sizeof(framed_layouts) / sizeof(framed_layouts[0]); i++)
		if (framed_layouts[i].type == type)
			return &framed_layouts[i];
	return NULL;
}

bool gs_event_frames_layout(int type, size_t *frames_off, size_t *nr_off)
{
	const struct framed_layout *f = type > 0 ? framed_layout((unsigned int)type) : NULL;

	if (!f || f->frame_size != sizeof(__u64))
		return false;
	*frames_off = f->frames_off;
	*nr_off = f->nr_off;
	return true;
}

/* The counts inside a record's fixed part (present: checked by the caller) within bounds. */
static bool inner_counts_ok(const void *data, unsigned int type)
{
	const struct gs_cpu_sample *sample = data;
	const struct gs_ustack_event *ustack = data;

	if (type == GS_EV_CPU_SAMPLE)
		return sample->nr_kernel <= GS_CPU_KERNEL_STACK;
	if (type == GS_EV_USTACK)
		return ustack->st.size <= GS_USTACK_BYTES;
	return true;
}

int gs_event_decode(const void *data, size_t size)
{
	const struct gs_event_hdr *hdr = data;
	const struct framed_layout *f = NULL;
	size_t need;

	if (size < sizeof(*hdr) || hdr->size < sizeof(*hdr) || hdr->size > size)
		return -EINVAL;
	need = fixed_need(hdr->type);
	if (!need) {
		f = framed_layout(hdr->type);
		if (!f)
			return -ENOENT;
		need = f->frames_off;
	}
	if (hdr->size < need || !inner_counts_ok(data, hdr->type))
		return -EINVAL;
	if (f) {
		__u16 nr;

		memcpy(&nr, (const char *)data + f->nr_off, sizeof(nr));
		if (nr > f->max_frames)
			return -EINVAL;
		need += nr * f->frame_size;
	}
	return hdr->size < need ? -EINVAL : hdr->type;
}

const char *gs_stat_name(int stat)
{
	static const char *const names[GS_STAT__MAX] = {
		[GS_STAT_RINGBUF_FULL] = "ringbuf_full",
		[GS_STAT_INFLIGHT_FULL] = "inflight_full",
		[GS_STAT_STACK_FAILED] = "stack_failed",
		[GS_STAT_USER_READ_FAILED] = "user_read_failed",
		[GS_STAT_USTACK_FAILED] = "ustack_failed",
		[GS_STAT_PY_TRUNCATED] = "python_stack_truncated",
		[GS_STAT_GPU_TOO_BIG] = "gpu_record_too_big",
		[GS_STAT_TARGETS_FULL] = "targets_full",
		[GS_STAT_STOPS_SKIPPED] = "stops_skipped",
		/* GS_STAT_OOM_FALLBACK: not a loss, the record came the usual way */
		[GS_STAT_UID_OVER_SHARE] = "uid_over_share",
		[GS_STAT_OOM_LOST] = "oom_lost",
	};

	return stat >= 0 && stat < GS_STAT__MAX ? names[stat] : NULL;
}
