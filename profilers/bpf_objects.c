// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* bpf_objects.c: open, configure, share maps and load every BPF object, each on demand. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cpu.skel.h"
#include "cuda.skel.h"
#include "gpu.skel.h"
#include "mem.skel.h"
#include "proc.skel.h"
#include "torch.skel.h"
#include "bpf/gs_event.h"
#include "profilers/bpf_objects.h"
#include "profilers/bpf_old.h"
#include "profilers/cuda/api.h"
#include "user/cookie_keys.h"
#include "user/kernel_probe.h"
#include "user/links.h"
#include "user/log.h"
#include "user/python.h"

/* the reader wakes when an eighth is full, or on its poll timeout; never per record */
#define WAKEUP_PART 8

int gs_bpf_load_error(const char *what, int err)
{
	if (err == -EPERM || err == -EACCES)
		gs_err("loading BPF programs (%s): permission denied: run as root, or grant "
		       "CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE (CAP_SYS_ADMIN on kernels "
		       "before 5.8)",
		       what);
	else if (err == -EINVAL) /* the kernel refused something: never that alone */
		gs_err("loading BPF programs (%s): the kernel refused them (%s): -v shows why, "
		       "`gpusnoop check` what this kernel lacks",
		       what, strerror(-err));
	else
		gs_err("loading BPF programs (%s): %s", what, strerror(-err));
	return err;
}

/*
 * The OOM buffer and the users' shares, for the objects that write OOM records or count
 * shares (cpu and gpu do neither: theirs stay their own, unused).
 */
static int share_flood_maps(struct gs_bpf_objects *o, struct bpf_object *obj)
{
	struct bpf_map *oom = bpf_object__find_map_by_name(obj, "oom_events");
	struct bpf_map *uids = bpf_object__find_map_by_name(obj, "uid_shares");
	struct bpf_map *state = bpf_object__find_map_by_name(obj, "share_state");

	if (!oom || !uids || !state)
		return -ENOENT;
	return bpf_map__reuse_fd(oom, bpf_map__fd(o->proc->maps.oom_events))
		       ?: bpf_map__reuse_fd(uids, bpf_map__fd(o->proc->maps.uid_shares))
		       ?: bpf_map__reuse_fd(state, bpf_map__fd(o->proc->maps.share_state));
}

int gs_bpf_objects__share_maps(struct gs_bpf_objects *o, struct bpf_map *events,
			       struct bpf_map *targets, struct bpf_map *stats)
{
	int err = bpf_map__reuse_fd(events, bpf_map__fd(o->proc->maps.events));

	err = err ?: bpf_map__reuse_fd(targets, bpf_map__fd(o->proc->maps.targets));
	return err ?: bpf_map__reuse_fd(stats, bpf_map__fd(o->proc->maps.stats));
}

/*
 * open_NAME(old): NAME_bpf__open(), or the same skeleton on the bytes of NAME's 5.10 build,
 * whose maps, programs and globals it finds by the same names at the same offsets.
 */
#define GS_OPEN_FN(name)                                                                          \
	static struct name##_bpf *open_##name(bool old)                                           \
	{                                                                                         \
		struct name##_bpf *obj;                                                           \
		int err;                                                                          \
                                                                                                  \
		if (!old)                                                                         \
			return name##_bpf__open();                                                \
		obj = calloc(1, sizeof(*obj));                                                    \
		if (!obj)                                                                         \
			return NULL;                                                              \
		err = name##_bpf__create_skeleton(obj);                                           \
		if (!err) {                                                                       \
			obj->skeleton->data = (void *)gs_bpf_old_##name(&obj->skeleton->data_sz); \
			err = bpf_object__open_skeleton(obj->skeleton, NULL);                     \
		}                                                                                 \
		if (err) {                                                                        \
			name##_bpf__destroy(obj);                                                 \
			errno = -err;                                                             \
			return NULL;                                                              \
		}                                                                                 \
		return obj;                                                                       \
	}
GS_OPEN_FN(proc)
GS_OPEN_FN(mem)
GS_OPEN_FN(cuda)
GS_OPEN_FN(cpu)

static int put_cookie(struct bpf_object *obj, const struct gs_probe_key *k, uint64_t cookie)
{
	struct bpf_map *m = obj ? bpf_object__find_map_by_name(obj, "probe_cookies") : NULL;
	int err;

	if (!m)
		return 0;
	err = bpf_map__update_elem(m, k, sizeof(*k), &cookie, sizeof(cookie), BPF_ANY);
	if (err)
		gs_err("recording a probe's cookie (5.10 build): %s", strerror(-err));
	return err;
}

int gs_bpf_objects__old_cookie(struct gs_bpf_objects *o, uint64_t dev, uint64_t ino, uint64_t off,
			       uint64_t cookie)
{
	struct gs_probe_key k = { .dev = dev, .ino = ino, .off = off };
	struct gs_cookie_key ck = { .dev = dev, .ino = ino, .off = off };
	int err;

	if (!o->old)
		return 0;
	if (!o->cookie_keys && !(o->cookie_keys = gs_cookie_keys__new(GS_OLD_PROBES)))
		return -ENOMEM;
	err = gs_cookie_keys__add(o->cookie_keys, &ck, cookie);
	if (err == -ENOSPC)
		gs_err("recording a probe's cookie (5.10 build): %d functions probed at once, the "
		       "most there",
		       GS_OLD_PROBES);
	if (err <= 0) /* written already, or refused */
		return err;
	err = put_cookie(o->mem ? o->mem->obj : NULL, &k, cookie);
	err = err ?: put_cookie(o->cuda ? o->cuda->obj : NULL, &k, cookie);
	if (err)
		gs_cookie_keys__remove(o->cookie_keys, &ck);
	return err;
}

static void delete_cookies(struct bpf_object *obj, const struct gs_cookie_key *keys, size_t n)
{
	struct bpf_map *m = obj ? bpf_object__find_map_by_name(obj, "probe_cookies") : NULL;

	for (size_t i = 0; m && i < n; i++) {
		struct gs_probe_key k = { .dev = keys[i].dev,
					  .ino = keys[i].ino,
					  .off = keys[i].off };

		bpf_map__delete_elem(m, &k, sizeof(k), 0);
	}
}

void gs_bpf_objects__old_forget_file(struct gs_bpf_objects *o, uint64_t dev, uint64_t ino)
{
	struct gs_cookie_key keys[64];
	size_t n;

	if (!o->cookie_keys)
		return;
	do {
		n = gs_cookie_keys__take_file(o->cookie_keys, dev, ino, keys, 64);
		delete_cookies(o->mem ? o->mem->obj : NULL, keys, n);
		delete_cookies(o->cuda ? o->cuda->obj : NULL, keys, n);
	} while (n == 64);
	gs_dbg("probe cookies (5.10 builds): file %llu:%llu no longer probed, %zu held",
	       (unsigned long long)dev, (unsigned long long)ino,
	       gs_cookie_keys__count(o->cookie_keys));
}

/* Which of mem.bpf.o (allocations, frees) and cuda.bpf.o (other calls) the families use. */
static void objects_for(uint32_t families, bool *mem, bool *cuda)
{
	size_t nr_apis;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr_apis);

	*mem = *cuda = false;
	for (size_t i = 1; i < nr_apis; i++) {
		if (!(families & GS_FAM_BIT(apis[i].family)))
			continue;
		if (apis[i].shape == GS_SHAPE_ALLOC || apis[i].shape == GS_SHAPE_ALLOC_PITCH ||
		    apis[i].shape == GS_SHAPE_FREE || apis[i].shape == GS_SHAPE_REGISTER)
			*mem = true;
		else
			*cuda = true;
	}
}

static int load_proc(struct gs_bpf_objects *o)
{
	int err;

	o->proc = open_proc(o->old);
	if (!o->proc) {
		err = -errno;
		gs_err("opening BPF object proc: %s", strerror(-err));
		return err;
	}
	o->proc->rodata->cfg_all_pids = o->opts.all;
	o->proc->rodata->cfg_uid_share = o->opts.all;
	o->proc->rodata->cfg_no_find_vma = o->no_find_vma;
	o->proc->rodata->cfg_report_all_execs = o->opts.all;
	bpf_program__set_autoload(o->proc->progs.handle_oom_victim, o->opts.oom_kills);
	if (o->opts.ringbuf_bytes)
		bpf_map__set_max_entries(o->proc->maps.events, (__u32)o->opts.ringbuf_bytes);
	o->wakeup_bytes = bpf_map__max_entries(o->proc->maps.events) / WAKEUP_PART;
	err = gs_links__prepare(o->proc->obj) ?: proc_bpf__load(o->proc);
	return err ? gs_bpf_load_error("proc", err) : 0;
}

static int load_mem(struct gs_bpf_objects *o)
{
	int err;

	o->mem = open_mem(o->old);
	if (!o->mem) {
		err = -errno;
		gs_err("opening BPF object mem: %s", strerror(-err));
		return err;
	}
	o->mem->rodata->cfg_all_pids = o->opts.all;
	o->mem->rodata->cfg_uid_share = o->opts.all;
	o->mem->rodata->cfg_no_find_vma = o->no_find_vma;
	o->mem->rodata->cfg_free_returns = o->opts.free_returns;
	o->mem->rodata->cfg_ustack = o->opts.ustack;
	o->mem->rodata->cfg_wakeup_bytes = o->wakeup_bytes;
	o->mem->rodata->cfg_python = o->opts.python != NULL;
	o->mem->rodata->cfg_no_stacks = o->opts.no_stacks;
	err = gs_bpf_objects__share_maps(o, o->mem->maps.events, o->mem->maps.targets,
					 o->mem->maps.stats);
	err = err ?: share_flood_maps(o, o->mem->obj);
	err = err ?: gs_python__share_maps(o->opts.python, o->mem->obj);
	err = err ?: gs_links__prepare(o->mem->obj);
	err = err ?: mem_bpf__load(o->mem);
	return err ? gs_bpf_load_error("mem", err) : 0;
}

static int load_cuda(struct gs_bpf_objects *o)
{
	int err;

	o->cuda = open_cuda(o->old);
	if (!o->cuda) {
		err = -errno;
		gs_err("opening BPF object cuda: %s", strerror(-err));
		return err;
	}
	o->cuda->rodata->cfg_all_pids = o->opts.all;
	o->cuda->rodata->cfg_uid_share = o->opts.all;
	o->cuda->rodata->cfg_no_find_vma = o->no_find_vma;
	o->cuda->rodata->cfg_wakeup_bytes = o->wakeup_bytes;
	o->cuda->rodata->cfg_python = o->opts.python != NULL;
	o->cuda->rodata->cfg_no_stacks = o->opts.no_stacks;
	err = gs_bpf_objects__share_maps(o, o->cuda->maps.events, o->cuda->maps.targets,
					 o->cuda->maps.stats);
	err = err ?: share_flood_maps(o, o->cuda->obj);
	err = err ?: gs_python__share_maps(o->opts.python, o->cuda->obj);
	err = err ?: gs_links__prepare(o->cuda->obj);
	err = err ?: cuda_bpf__load(o->cuda);
	return err ? gs_bpf_load_error("cuda", err) : 0;
}

int gs_bpf_objects__open(struct gs_bpf_objects *o, const struct gs_bpf_objects_opts *opts)
{
	bool mem, cuda;
	int err;

	*o = (struct gs_bpf_objects){ .opts = *opts };
	o->no_find_vma = !gs_kernel_has_find_vma();
	o->old = gs_kernel_old_objects(&o->old_cookies);
	if (o->old)
		gs_dbg("kernel without task storage, BTF tasks or bpf_cookie (5.11, 5.15): "
		       "loading the Linux 5.10 builds");
	objects_for(opts->families, &mem, &cuda);
	err = load_proc(o);
	if (!err && mem)
		err = load_mem(o);
	if (!err && cuda)
		err = load_cuda(o);
	/* -a: now, so that a long-running session never stalls its event loop for it later */
	if (!err && opts->torch && opts->all)
		gs_bpf_objects__torch(o);
	if (err)
		gs_bpf_objects__close(o);
	return err;
}

/*
 * PyTorch's probes are optional: CUDA tracing goes on without them (one warning) when their
 * object does not load, e.g. on a kernel without USDT semaphore support (before 4.20).
 */
struct torch_bpf *gs_bpf_objects__torch(struct gs_bpf_objects *o)
{
	int err;

	if (o->torch || !o->opts.torch || o->torch_failed)
		return o->torch;
	if (o->old) { /* torch.bpf.o has no 5.10 build */
		gs_warn("PyTorch memory is not followed: its probes need task storage maps (Linux "
			"5.11) and BPF cookies on uprobes (Linux 5.15)");
		o->torch_failed = true;
		return NULL;
	}
	o->torch = torch_bpf__open();
	err = o->torch ? 0 : -errno;
	if (!err) {
		o->torch->rodata->cfg_all_pids = o->opts.all;
		o->torch->rodata->cfg_uid_share = o->opts.all;
		o->torch->rodata->cfg_no_find_vma = o->no_find_vma;
		o->torch->rodata->cfg_ustack = o->opts.ustack;
		o->torch->rodata->cfg_wakeup_bytes = o->wakeup_bytes;
		o->torch->rodata->cfg_python = o->opts.python != NULL;
		o->torch->rodata->cfg_no_stacks = o->opts.no_stacks;
		err = gs_bpf_objects__share_maps(o, o->torch->maps.events, o->torch->maps.targets,
						 o->torch->maps.stats);
		err = err ?: share_flood_maps(o, o->torch->obj);
		err = err ?: gs_python__share_maps(o->opts.python, o->torch->obj);
	}
	err = err ?: gs_links__prepare(o->torch->obj);
	err = err ?: torch_bpf__load(o->torch);
	if (err) {
		gs_warn("loading the PyTorch probes: %s; PyTorch memory is not followed",
			strerror(-err));
		torch_bpf__destroy(o->torch);
		o->torch = NULL;
		o->torch_failed = true;
	}
	return o->torch;
}

struct cpu_bpf *gs_bpf_objects__cpu(struct gs_bpf_objects *o, const struct gs_cpu_obj_cfg *cfg)
{
	int err;

	if (o->cpu) {
		errno = EEXIST;
		return NULL;
	}
	/* that build has no task storage, BTF task, bpf_find_vma() nor bpf_loop(): the kernel
	 * walks the user stack and Python frames are off */
	if (o->old)
		gs_dbg("cpu: the Linux 5.10 build (no task storage, BTF tasks or bpf_cookie)");
	o->cpu = open_cpu(o->old);
	if (!o->cpu) {
		err = -errno;
		gs_err("opening BPF object cpu: %s", strerror(-err));
		errno = -err;
		return NULL;
	}
	o->cpu->rodata->cfg_all_pids = cfg->all;
	o->cpu->rodata->cfg_no_find_vma = o->no_find_vma;
	/* the verifier drops the Python walk, and its bpf_loop() (5.17), where it is off */
	o->cpu->rodata->cfg_python = o->opts.python != NULL;
	o->cpu->rodata->cfg_records = cfg->records;
	o->cpu->rodata->cfg_cgroup = cfg->cgroup;
	o->cpu->rodata->cfg_no_kernel_stack = cfg->no_kernel_stack;
	o->cpu->rodata->cfg_no_user_stack = cfg->no_user_stack;
	o->cpu->rodata->cfg_tid = cfg->tid;
	o->cpu->rodata->cfg_per_thread = cfg->per_thread;
	o->cpu->rodata->cfg_ustack = cfg->ustack;
	o->cpu->rodata->cfg_wakeup_bytes = o->wakeup_bytes;
	/* only the mode in use needs its map: the other is kept minimal */
	if (cfg->records) {
		bpf_map__set_max_entries(o->cpu->maps.stacks, 1);
		bpf_map__set_max_entries(o->cpu->maps.counts, 1);
	}
	err = gs_bpf_objects__share_maps(o, o->cpu->maps.events, o->cpu->maps.targets,
					 o->cpu->maps.stats);
	err = err ?: gs_python__share_maps(o->opts.python, o->cpu->obj);
	err = err ?: cpu_bpf__load(o->cpu);
	if (!err)
		return o->cpu;
	gs_bpf_load_error("cpu", err);
	cpu_bpf__destroy(o->cpu);
	o->cpu = NULL;
	errno = -err;
	return NULL;
}

struct gpu_bpf *gs_bpf_objects__gpu(struct gs_bpf_objects *o)
{
	int err;

	if (o->gpu)
		return o->gpu;
	o->gpu = gpu_bpf__open();
	err = o->gpu ? 0 : -errno;
	if (!err) {
		o->gpu->rodata->cfg_all_pids = o->opts.all;
		o->gpu->rodata->cfg_no_find_vma = o->no_find_vma;
		o->gpu->rodata->cfg_wakeup_bytes = o->wakeup_bytes;
		err = gs_bpf_objects__share_maps(o, o->gpu->maps.events, o->gpu->maps.targets,
						 o->gpu->maps.stats);
	}
	err = err ?: gpu_bpf__load(o->gpu);
	if (!err)
		return o->gpu;
	gs_err("loading the GPU activity probes: %s", strerror(-err));
	gpu_bpf__destroy(o->gpu);
	o->gpu = NULL;
	errno = -err;
	return NULL;
}

void gs_bpf_objects__close(struct gs_bpf_objects *o)
{
	gpu_bpf__destroy(o->gpu);
	cpu_bpf__destroy(o->cpu);
	o->gpu = NULL;
	o->cpu = NULL;
	torch_bpf__destroy(o->torch);
	cuda_bpf__destroy(o->cuda);
	mem_bpf__destroy(o->mem);
	proc_bpf__destroy(o->proc);
	gs_cookie_keys__free(o->cookie_keys);
	o->cookie_keys = NULL;
	o->torch = NULL;
	o->cuda = NULL;
	o->mem = NULL;
	o->proc = NULL;
}
