// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* event_decode.c: size checks of every record kind against the shared ABI. */
#include <errno.h>
#include "user/event_decode.h"

/* The layouts are ABI between bpf/ and user space: a change must be deliberate. */
_Static_assert(sizeof(struct gs_event_hdr) == 24, "gs_event_hdr layout");
_Static_assert(sizeof(struct gs_proc_event) == 24, "gs_proc_event layout");
_Static_assert(sizeof(struct gs_proc_fork) == 32, "gs_proc_fork layout");
_Static_assert(sizeof(struct gs_mem_alloc) == 24 + 32 + 8 * GS_MAX_STACK, "gs_mem_alloc layout");
_Static_assert(offsetof(struct gs_mem_alloc, frames) == 56, "gs_mem_alloc frames offset");
_Static_assert(sizeof(struct gs_mem_free) == 40, "gs_mem_free layout");
_Static_assert(offsetof(struct gs_mem_free_ret, frames) == 48, "gs_mem_free_ret frames offset");
_Static_assert(offsetof(struct gs_cuda_call, frames) == 296, "gs_cuda_call frames offset");
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

int gs_event_decode(const void *data, size_t size)
{
	const struct gs_event_hdr *hdr = data;
	const struct gs_mem_alloc *alloc = data;
	const struct gs_mem_free_ret *free_ret = data;
	const struct gs_cuda_call *call = data;
	const struct gs_cpu_sample *sample = data;
	const struct gs_torch_mem *tmem = data;
	const struct gs_torch_oom *toom = data;
	const struct gs_ustack_event *ustack = data;
	const struct gs_py_stack_event *pystack = data;
	size_t need;

	if (size < sizeof(*hdr) || hdr->size < sizeof(*hdr) || hdr->size > size)
		return -EINVAL;
	switch (hdr->type) {
	case GS_EV_PROC_EXEC:
	case GS_EV_PROC_EXIT:
	case GS_EV_PROC_OOM_KILL:
	case GS_EV_LIBS_CHANGED:
		need = sizeof(struct gs_proc_event);
		break;
	case GS_EV_PROC_FORK:
		need = sizeof(struct gs_proc_fork);
		break;
	case GS_EV_MEM_ALLOC:
		need = offsetof(struct gs_mem_alloc, frames);
		if (hdr->size < need || alloc->nr_frames > GS_MAX_STACK)
			return -EINVAL;
		need += alloc->nr_frames * sizeof(alloc->frames[0]);
		break;
	case GS_EV_MEM_FREE:
		need = sizeof(struct gs_mem_free);
		break;
	case GS_EV_MEM_FREE_RET:
		need = offsetof(struct gs_mem_free_ret, frames);
		if (hdr->size < need || free_ret->nr_frames > GS_MAX_STACK)
			return -EINVAL;
		need += free_ret->nr_frames * sizeof(free_ret->frames[0]);
		break;
	case GS_EV_CUDA_CALL:
		need = offsetof(struct gs_cuda_call, frames);
		if (hdr->size < need || call->nr_frames > GS_MAX_STACK)
			return -EINVAL;
		need += call->nr_frames * sizeof(call->frames[0]);
		break;
	case GS_EV_CPU_SAMPLE:
		need = offsetof(struct gs_cpu_sample, frames);
		if (hdr->size < need || sample->nr_frames > GS_MAX_STACK ||
		    sample->nr_kernel > GS_CPU_KERNEL_STACK)
			return -EINVAL;
		need += sample->nr_frames * sizeof(sample->frames[0]);
		break;
	case GS_EV_TORCH_MEM:
		need = offsetof(struct gs_torch_mem, frames);
		if (hdr->size < need || tmem->nr_frames > GS_MAX_STACK)
			return -EINVAL;
		need += tmem->nr_frames * sizeof(tmem->frames[0]);
		break;
	case GS_EV_TORCH_OOM:
		need = offsetof(struct gs_torch_oom, frames);
		if (hdr->size < need || toom->nr_frames > GS_MAX_STACK)
			return -EINVAL;
		need += toom->nr_frames * sizeof(toom->frames[0]);
		break;
	case GS_EV_USTACK:
		need = sizeof(struct gs_ustack_event);
		if (hdr->size < need || ustack->st.size > GS_USTACK_BYTES)
			return -EINVAL;
		break;
	case GS_EV_PYCODE:
		need = sizeof(struct gs_py_code_event);
		break;
	case GS_EV_PYSTACK:
		need = offsetof(struct gs_py_stack_event, frames);
		if (hdr->size < need || pystack->nr_frames > GS_PY_MAX_FRAMES)
			return -EINVAL;
		need += pystack->nr_frames * sizeof(pystack->frames[0]);
		break;
	case GS_EV_GPU_RECORD: /* sizes inside: profilers/cuda/gpu_activity.c */
		need = sizeof(struct gs_gpu_record);
		break;
	case GS_EV_GPU_API:
		need = sizeof(struct gs_gpu_api);
		break;
	case GS_EV_GPU_DROPPED:
		need = sizeof(struct gs_gpu_dropped);
		break;
	case GS_EV_GPU_CLOCK:
		need = sizeof(struct gs_gpu_clock);
		break;
	default:
		return -ENOENT;
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
	};

	return stat >= 0 && stat < GS_STAT__MAX ? names[stat] : NULL;
}
