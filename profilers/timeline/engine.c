// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* engine.c: the timeline engine: CUDA calls, memory, samples and GPU work as trace rows. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/cuda/api.h"
#include "profilers/cuda/call.h"
#include "profilers/cuda/kernel_names.h"
#include "profilers/timeline/record_summary.h"
#include "profilers/proc_tree.h"
#include "profilers/timeline/engine.h"
#include "profilers/timeline/names.h"
#include "profilers/timeline/vocab.h"
#include "profilers/torch/accounting.h"
#include "stitch/chrome_trace.h"
#include "user/addr_map.h"
#include "user/clock.h"
#include "user/event_decode.h"
#include "user/kallsyms.h"
#include "user/log.h"
#include "user/proc_info.h"
#include "user/stack_table.h"

static void fatal(struct gs_timeline *tl, int err)
{
	if (!tl->error) {
		gs_err("recording: %s", strerror(-err));
		tl->error = err;
	}
}

/* Whether pid's environment is gone (an exit, a zombie): its rank could not be read. */
static bool environ_gone(pid_t pid)
{
	char path[64], c;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	n = read(fd, &c, 1);
	close(fd);
	return n <= 0;
}

/*
 * The rank of a process first seen rankless, or -1. Its environment was read at its fork or
 * exec, and a read then can come up empty (mid-exec, already gone): read again; a child gone
 * since goes to its parent's file (it had its parent's environment). -2: that file is *known.
 */
static long rank_again(struct gs_timeline *tl, const struct gs_proc_tree_entry *e, pid_t pid,
		       uint64_t *known)
{
	int32_t rank, local_rank;

	if (!gs_read_rank_env(pid, &rank, &local_rank, NULL) && rank >= 0)
		return rank;
	if (e && e->ppid > 0 && environ_gone(pid) &&
	    gs_addr_map__get(tl->outputs, e->ppid, 0, known))
		return -2;
	return -1;
}

/* What the tracker knows of pid's process (NULL: nothing, or no tracker: unit tests). */
static const struct gs_proc_tree_entry *proc_of(const struct gs_timeline *tl, pid_t pid)
{
	return tl->tracker ? gs_tracker__proc(tl->tracker, pid) : NULL;
}

/* pid's output: 0, the one file (or the sink); i + 1, the i-th file of -o DIR/, its rank's. */
static size_t output_of(struct gs_timeline *tl, pid_t pid)
{
	const struct gs_proc_tree_entry *e;
	uint64_t known = 0;
	long i, rank;

	if (!tl->ranks)
		return 0;
	e = proc_of(tl, pid);
	rank = e ? e->rank : -1;
	/*
	 * A process's last samples come after its exit, when its environment is gone and the
	 * tracker knows it afresh, rankless: they go to the file it wrote to while it lived.
	 */
	if (rank < 0 && gs_addr_map__get(tl->outputs, pid, 0, &known))
		return (size_t)known;
	if (rank < 0 && (rank = rank_again(tl, e, pid, &known)) == -2)
		i = (long)known - 1;
	else
		i = gs_rank_files__file(tl->ranks, rank < 0 ? -1 : rank, pid);
	if (i < 0) {
		fatal(tl, (int)i);
		return 0; /* the sink: the recording stops and removes its files */
	}
	if (gs_addr_map__set(tl->outputs, pid, 0, (uint64_t)i + 1))
		fatal(tl, -ENOMEM);
	return (size_t)i + 1;
}

struct gs_trace_writer *gs_timeline__writer(struct gs_timeline *tl, size_t output)
{
	return output ? tl->ranks->files[output - 1].writer : tl->writer;
}

/* Starts rendering one event of pid, which goes to its file in order of ts_ns. */
static struct gs_chrome_trace *render_begin(struct gs_timeline *tl, pid_t pid, uint64_t ts_ns)
{
	tl->cur = gs_timeline__writer(tl, output_of(tl, pid));
	tl->render = gs_trace_writer__begin(tl->cur, ts_ns);
	return tl->render;
}

/* The rendered event into the writer's reorder window. */
static void render_end(struct gs_timeline *tl)
{
	if (gs_trace_writer__end(tl->cur))
		fatal(tl, -ENOMEM);
}

/*
 * A one-file trace's rank: its ranked processes', when they have one. -a and the daemon keep
 * no process tree: the environment tells, read while the process lives.
 */
static void note_rank(struct gs_timeline *tl, pid_t pid)
{
	const struct gs_proc_tree_entry *e = proc_of(tl, pid);
	int32_t rank = e ? e->rank : -1, env_rank, local_rank, world_size;

	/* -o DIR/: each file's own; -e gpu: its records'; two ranks seen: none is written */
	if (tl->ranks || tl->gpu || tl->ranks_mixed || (e && rank < 0))
		return;
	if (gs_read_rank_env(pid, &env_rank, &local_rank, &world_size))
		world_size = -1;
	else if (!e)
		rank = env_rank;
	if (rank < 0)
		return;
	if (tl->rank_seen) {
		tl->ranks_mixed |= rank != tl->rank;
		return;
	}
	tl->rank_seen = true;
	tl->rank = rank;
	tl->world_size = world_size > 0 ? world_size : -1;
}

/* Labels the process (named at its file's end) and names the thread track at first sight. */
static void name_tracks(struct gs_timeline *tl, pid_t pid, pid_t tid, uint64_t ts_ns)
{
	char comm[32], label[64];

	if (gs_timeline_names__process_wanted(tl->named, pid)) {
		/* the processes of a tree (ranks of a launcher) apart at a glance */
		gs_proc_tree_label(proc_of(tl, pid),
				   tl->tracker ? gs_tracker__comm(tl->tracker, pid) : "?", label,
				   sizeof(label));
		if (gs_timeline_names__set_process(tl->named, pid, output_of(tl, pid), label))
			fatal(tl, -ENOMEM);
		note_rank(tl, pid);
	}
	if (gs_timeline_names__thread_wanted(tl->named, pid, tid)) {
		gs_read_comm(pid, tid, comm, sizeof(comm));
		gs_chrome_trace__thread_name(render_begin(tl, pid, ts_ns), pid, tid, comm);
		render_end(tl);
	}
}

static const char *category(const struct gs_cuda_api *api)
{
	/* Kineto's categories, so Holistic Trace Analysis-style tools recognise the slices */
	return api && api->lib == GS_LIB_DRIVER ? GS_TL_CAT_CUDA_DRIVER : GS_TL_CAT_CUDA_RUNTIME;
}

/* Starts an X slice for one API call on its thread. */
static struct gs_json *begin_slice(struct gs_timeline *tl, const struct gs_event_hdr *hdr,
				   uint16_t api_id, uint64_t entry_ts_ns)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(api_id);
	uint64_t start = entry_ts_ns && entry_ts_ns <= hdr->ts_ns ? entry_ts_ns : hdr->ts_ns;
	struct gs_json *j;
	char dur[32];

	name_tracks(tl, (pid_t)hdr->pid, (pid_t)hdr->tid, start);
	j = gs_chrome_trace__event(render_begin(tl, (pid_t)hdr->pid, start), "X",
				   gs_cuda_api_name(api_id), category(api), hdr->pid, hdr->tid,
				   start);
	gs_chrome_trace_format_us(hdr->ts_ns - start, dur, sizeof(dur));
	gs_json__raw(j, "dur", dur);
	gs_json__begin_object(j, "args");
	/* what the summary counts of the row; the call sites add its args, end_slice hands it */
	tl->row = (struct gs_stats_row){ .ph = 'X',
					 .name = gs_cuda_api_name(api_id),
					 .cat = category(api),
					 .pid = hdr->pid,
					 .ts_ns = (int64_t)start,
					 .dur_ns = hdr->ts_ns - start };
	return j;
}

static void hex_arg(struct gs_json *j, const char *key, uint64_t value)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
	gs_json__string(j, key, buf);
}

static void error_args(struct gs_timeline *tl, struct gs_json *j, uint16_t api_id, int32_t ret)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(api_id);

	if (!ret)
		return;
	tl->row.error = true;
	gs_json__i64(j, "error", ret);
	gs_json__string(j, "error_name", gs_cuda_error_name(api ? api->lib : GS_LIB_RUNTIME, ret));
}

/* The frames of a stack as a JSON array, one "symbol+0xoff (module)" per frame; owned. */
static char *format_stack(const struct gs_stack *s)
{
	struct gs_json j;
	char buf[1024], *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);

	if (!m)
		return NULL;
	gs_json__init(&j, m);
	gs_json__begin_array(&j, NULL);
	for (uint32_t i = 0; i < s->nr_frames; i++) {
		gs_frame_format(&s->frames[i], buf, sizeof(buf));
		gs_json__string(&j, NULL, buf);
	}
	gs_json__end_array(&j);
	if (fclose(m)) {
		free(text);
		return NULL;
	}
	return text;
}

/*
 * args.stack: the user stack, innermost first. Its text is made once per distinct stack
 * (stacks repeat: formatting every frame of every event was a fifth of record's CPU time).
 */
static void stack_arg(struct gs_timeline *tl, struct gs_json *j, pid_t pid, const __u64 *frames,
		      uint32_t nr)
{
	int64_t id = gs_stack_table__intern(tl->stacks, pid, (const uint64_t *)frames, nr);

	if (id < 0) {
		fatal(tl, (int)id);
		return;
	}
	if ((size_t)id >= tl->nr_stack_json) {
		size_t n = tl->nr_stack_json ? tl->nr_stack_json * 2 : 256;
		char **grown;

		while (n <= (size_t)id)
			n *= 2;
		grown = realloc(tl->stack_json, n * sizeof(*grown));
		if (!grown) {
			fatal(tl, -ENOMEM);
			return;
		}
		memset(grown + tl->nr_stack_json, 0, (n - tl->nr_stack_json) * sizeof(*grown));
		tl->stack_json = grown;
		tl->nr_stack_json = n;
	}
	if (!tl->stack_json[id])
		tl->stack_json[id] = format_stack(gs_stack_table__get(tl->stacks, (uint32_t)id));
	if (!tl->stack_json[id]) {
		fatal(tl, -ENOMEM);
		return;
	}
	gs_json__raw(j, "stack", tl->stack_json[id]);
}

static void end_slice(struct gs_timeline *tl, struct gs_json *j)
{
	gs_json__end_object(j); /* args */
	gs_chrome_trace__end_event(tl->render);
	render_end(tl);
	tl->events++;
	if (tl->row.ph && gs_trace_stats__add(tl->stats, &tl->row))
		fatal(tl, -ENOMEM);
	tl->row.ph = 0;
}

/* A counter sample is an event of the trace like a slice: metadata.events and the summary
 * count it (a torch-mem recording holds little else). */
static void counter_event(struct gs_timeline *tl, pid_t pid, const char *name, uint64_t ts_ns,
			  uint64_t value)
{
	gs_chrome_trace__counter(render_begin(tl, pid, ts_ns), pid, name, ts_ns, "bytes", value);
	render_end(tl);
	tl->events++;
}

/* Device (and managed) memory, and pinned host memory on a track of its own once there is any. */
static void memory_counter(struct gs_timeline *tl, pid_t pid, uint64_t ts_ns)
{
	struct gs_mem_proc *p = gs_mem_model__proc(&tl->mem, pid, false);

	if (!p)
		return;
	counter_event(tl, pid, GS_TL_COUNTER_MEMORY, ts_ns,
		      gs_mem_model__cuda_bytes(&tl->mem, pid) - p->pinned_bytes);
	if (p->pinned_seen)
		counter_event(tl, pid, GS_TL_COUNTER_PINNED, ts_ns, p->pinned_bytes);
}

/* Two counter tracks per device of a PyTorch process: allocated and reserved bytes. */
static void torch_counters(struct gs_timeline *tl, pid_t pid, uint64_t ts_ns)
{
	struct gs_torch_proc *p = gs_mem_model__torch_proc(&tl->mem, pid);
	char dev[16], name[64];

	if (!p)
		return;
	gs_torch_proc__update(p);
	for (size_t i = 0; i < p->nr_devs; i++) {
		const struct gs_torch_device *d = &p->devs[i];

		if (d->key == GS_TORCH_DEV_UNKNOWN)
			continue; /* a new segment, until its first tensor names the device */
		gs_torch_device_name(d->key, dev, sizeof(dev));
		snprintf(name, sizeof(name), "PyTorch %s allocated", dev);
		counter_event(tl, pid, name, ts_ns, d->allocated);
		if (d->key >> 8 == GS_TORCH_DEV_CPU)
			continue;
		snprintf(name, sizeof(name), "PyTorch %s reserved", dev);
		counter_event(tl, pid, name, ts_ns, d->reserved);
	}
}

static void on_torch_mem(void *ctx, const struct gs_torch_mem *e)
{
	struct gs_timeline *tl = ctx;
	struct gs_mem_effect fx;
	int err = gs_mem_model__tensor(&tl->mem, e, &fx);

	if (err) {
		fatal(tl, err);
		return;
	}
	gs_record_summary__torch_mem(gs_trace_stats__record_summary(tl->stats),
				     e->op == GS_TORCH_OP_ALLOC);
	name_tracks(tl, (pid_t)e->hdr.pid, (pid_t)e->hdr.tid, e->hdr.ts_ns);
	torch_counters(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

/* an instant event on the thread that ran out, with what was requested */
static void on_torch_oom(void *ctx, const struct gs_torch_oom *e)
{
	struct gs_timeline *tl = ctx;
	struct gs_mem_effect fx;
	struct gs_json *j;
	char dev[16];
	int err = gs_mem_model__torch_oom(&tl->mem, e, &fx);

	if (err)
		fatal(tl, err);
	if (!fx.torch_oom)
		return;
	gs_record_summary__torch_oom(gs_trace_stats__record_summary(tl->stats));
	name_tracks(tl, (pid_t)e->hdr.pid, (pid_t)e->hdr.tid, e->hdr.ts_ns);
	j = gs_chrome_trace__event(render_begin(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns), "i",
				   "PyTorch out of memory", GS_TL_CAT_TORCH_OOM, e->hdr.pid,
				   e->hdr.tid, e->hdr.ts_ns);
	gs_json__string(j, "s", "t");
	gs_json__begin_object(j, "args");
	gs_torch_device_name(fx.oom.device, dev, sizeof(dev));
	gs_json__u64(j, "requested", fx.oom.requested);
	gs_json__string(j, "device", dev);
	stack_arg(tl, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(tl, j);
}

static void on_alloc(void *ctx, const struct gs_mem_alloc *e)
{
	struct gs_timeline *tl = ctx;
	struct gs_mem_effect fx;
	struct gs_json *j;
	int err = gs_mem_model__alloc(&tl->mem, e, &fx);

	if (err) {
		fatal(tl, err);
		return;
	}
	if (fx.route == GS_ROUTE_SEGMENT)
		torch_counters(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
	if (!(tl->families & GS_FAM_BIT(GS_FAM_MEM)))
		return; /* probed for torch-mem's segments only */
	j = begin_slice(tl, &e->hdr, e->api, e->entry_ts_ns);
	gs_json__u64(j, "bytes", e->size);
	tl->row.has_bytes = true;
	tl->row.bytes = e->size;
	if (!e->ret)
		hex_arg(j, "ptr", e->ptr);
	error_args(tl, j, e->api, e->ret);
	stack_arg(tl, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(tl, j);
	if (!e->ret && fx.route == GS_ROUTE_RAW)
		memory_counter(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

/* at entry, where the memory is given back: the slice comes with the return */
static void on_free(void *ctx, const struct gs_mem_free *e)
{
	struct gs_timeline *tl = ctx;
	struct gs_mem_effect fx;
	int err = gs_mem_model__free(&tl->mem, e, &fx);

	if (err)
		fatal(tl, err);
	else if (fx.route == GS_ROUTE_SEGMENT)
		torch_counters(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
	else if (e->ptr && tl->families & GS_FAM_BIT(GS_FAM_MEM))
		memory_counter(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

static void on_free_ret(void *ctx, const struct gs_mem_free_ret *e)
{
	struct gs_timeline *tl = ctx;
	struct gs_mem_effect fx;
	struct gs_json *j;

	gs_mem_model__free_ret(&tl->mem, e, &fx);
	if (!(tl->families & GS_FAM_BIT(GS_FAM_MEM)))
		return;
	j = begin_slice(tl, &e->hdr, e->api, e->entry_ts_ns);
	hex_arg(j, "ptr", e->ptr);
	error_args(tl, j, e->api, e->ret);
	stack_arg(tl, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(tl, j);
	if (e->ret)
		memory_counter(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

static void dims_arg(struct gs_json *j, const char *key, const uint32_t dims[3])
{
	gs_json__begin_array(j, key);
	for (int i = 0; i < 3; i++)
		gs_json__u64(j, NULL, dims[i]);
	gs_json__end_array(j);
}

/* Ends a launch or copy slice; with -e gpu, with its correlation id and flow to its GPU work. */
static void gpu_slice_end(struct gs_timeline *tl, struct gs_json *j, const struct gs_cuda_api *api,
			  const struct gs_cuda_call *e)
{
	uint32_t id = tl->gpu ? gs_gpu_rows__slice_args(tl->gpu, j, &e->hdr, e->entry_ts_ns,
							api->lib == GS_LIB_DRIVER)
			      : 0;

	end_slice(tl, j);
	if (id)
		gs_gpu_rows__slice_flow(tl->gpu, &e->hdr, e->entry_ts_ns, id);
}

static void record_launch(struct gs_timeline *tl, const struct gs_cuda_api *api,
			  const struct gs_cuda_call *e)
{
	struct gs_launch l;
	struct gs_json *j;
	const char *kernel;

	gs_decode_launch(api, e, &l);
	j = begin_slice(tl, &e->hdr, e->api, e->entry_ts_ns);
	if (l.graph) {
		hex_arg(j, "graph", l.func);
	} else {
		kernel = gs_kernel_names__resolve(tl->names, (pid_t)e->hdr.pid, l.func);
		gs_json__string(j, "kernel", kernel);
		tl->row.kernel = kernel;
		dims_arg(j, "grid", l.grid);
		dims_arg(j, "block", l.block);
		gs_json__u64(j, "shared memory", l.shared_mem);
	}
	hex_arg(j, "stream", l.stream);
	error_args(tl, j, e->api, e->ret);
	stack_arg(tl, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	gpu_slice_end(tl, j, api, e);
}

static void record_sync(struct gs_timeline *tl, const struct gs_cuda_api *api,
			const struct gs_cuda_call *e)
{
	struct gs_json *j = begin_slice(tl, &e->hdr, e->api, e->entry_ts_ns);
	uint64_t handle;

	if (gs_decode_sync_handle(api, e, &handle))
		hex_arg(j, api->handle_name, handle);
	else
		gs_json__string(j, "scope", api->handle_name);
	error_args(tl, j, e->api, e->ret);
	stack_arg(tl, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(tl, j);
}

static void record_copy(struct gs_timeline *tl, const struct gs_cuda_api *api,
			const struct gs_cuda_call *e)
{
	struct gs_json *j = begin_slice(tl, &e->hdr, e->api, e->entry_ts_ns);
	struct gs_copy c;

	gs_decode_copy(api, e, &c);
	gs_json__u64(j, "bytes", c.bytes);
	gs_json__string(j, "kind", gs_copy_kind_name(c.kind));
	tl->row.has_bytes = true;
	tl->row.bytes = c.bytes;
	tl->row.kind = gs_copy_kind_name(c.kind);
	if (c.has_stream)
		hex_arg(j, "stream", c.stream);
	error_args(tl, j, e->api, e->ret);
	stack_arg(tl, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	gpu_slice_end(tl, j, api, e);
}

static void learn_name(struct gs_timeline *tl, const struct gs_cuda_api *api,
		       const struct gs_cuda_call *e)
{
	gs_kernel_names__learn_call(tl->names, api, e);
}

/* cuMemMap/cuMemUnmap: PyTorch's segment counters, or a raw mapping's slice and counter */
static void record_segment_call(struct gs_timeline *tl, const struct gs_cuda_call *e)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);
	struct gs_mem_effect fx;
	struct gs_json *j;
	int err = gs_mem_model__cuda_call(&tl->mem, e, &fx);

	if (err) {
		fatal(tl, err);
		return;
	}
	if (fx.route == GS_ROUTE_SEGMENT)
		torch_counters(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
	if (fx.route != GS_ROUTE_RAW || !(tl->families & GS_FAM_BIT(GS_FAM_MEM)))
		return;
	j = begin_slice(tl, &e->hdr, e->api, e->entry_ts_ns);
	if (api && api->shape == GS_SHAPE_MAP)
		gs_json__u64(j, "bytes", e->args[1]);
	hex_arg(j, "ptr", e->args[0]);
	stack_arg(tl, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(tl, j);
	memory_counter(tl, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

static void on_cuda_call(void *ctx, const struct gs_cuda_call *e)
{
	struct gs_timeline *tl = ctx;
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);

	if (!api)
		return;
	switch (api->family) {
	case GS_FAM_LAUNCH:
		record_launch(tl, api, e);
		break;
	case GS_FAM_SYNC:
		record_sync(tl, api, e);
		break;
	case GS_FAM_COPY:
		record_copy(tl, api, e);
		break;
	case GS_FAM_NAMES:
		learn_name(tl, api, e);
		break;
	case GS_FAM_MEM: /* cuMemMap/cuMemUnmap: the pages of PyTorch's expandable segments */
		record_segment_call(tl, e);
		break;
	default:
		break;
	}
}

/* "symbol+0xoff" of a kernel address (the first frame is the sampled IP, others return). */
static void kernel_frame(struct gs_timeline *tl, uint64_t addr, bool leaf, char *buf, size_t len)
{
	uint64_t off;
	const char *module = NULL;
	const char *name = tl->kallsyms
				   ? gs_kallsyms__lookup(tl->kallsyms, addr - !leaf, &off, &module)
				   : NULL;

	if (!name)
		snprintf(buf, len, "0x%" PRIx64, addr);
	else if (module)
		snprintf(buf, len, "%s+0x%" PRIx64 " [%s]", name, off + !leaf, module);
	else
		snprintf(buf, len, "%s+0x%" PRIx64, name, off + !leaf);
}

/*
 * A CPU sample is an instant event on its thread's track, named after the function it hit
 * (kernel or user), so it shows inside whatever slice the thread was in: a sync, a launch.
 */
static void on_cpu_sample(void *ctx, const struct gs_cpu_sample *e)
{
	struct gs_timeline *tl = ctx;
	pid_t pid = (pid_t)e->hdr.pid;
	const struct gs_stack *s = NULL;
	const char *name = "[unknown]";
	struct gs_json *j;
	char buf[256];

	if (e->nr_frames) {
		int64_t id = gs_stack_table__intern(tl->stacks, pid, (const uint64_t *)e->frames,
						    e->nr_frames);

		if (id < 0) {
			fatal(tl, (int)id);
			return;
		}
		s = gs_stack_table__get(tl->stacks, (uint32_t)id);
	}
	if (e->nr_kernel) {
		uint64_t off;
		const char *k =
			tl->kallsyms ? gs_kallsyms__lookup(tl->kallsyms, e->kernel[0], &off, NULL)
				     : NULL;

		snprintf(buf, sizeof(buf), "%s_[k]", k ? k : "[unknown]");
		name = buf;
	} else if (s && s->frames[0].symbol) {
		name = s->frames[0].symbol;
	}
	name_tracks(tl, pid, (pid_t)e->hdr.tid, e->hdr.ts_ns);
	j = gs_chrome_trace__event(render_begin(tl, pid, e->hdr.ts_ns), "i", name,
				   GS_TL_CAT_CPU_SAMPLE, pid, e->hdr.tid, e->hdr.ts_ns);
	gs_json__string(j, "s", "t");
	gs_json__begin_object(j, "args");
	gs_json__u64(j, "cpu", e->cpu);
	if (e->nr_kernel) {
		gs_json__begin_array(j, "kernel_stack");
		for (uint32_t i = 0; i < e->nr_kernel; i++) {
			kernel_frame(tl, e->kernel[i], i == 0, buf, sizeof(buf));
			gs_json__string(j, NULL, buf);
		}
		gs_json__end_array(j);
	}
	stack_arg(tl, j, pid, e->frames, e->nr_frames);
	tl->cpu_samples++;
	end_slice(tl, j);
}

static void on_gpu_event(void *ctx, const struct gs_event_hdr *hdr, size_t size)
{
	struct gs_timeline *tl = ctx;
	int err = 0;

	if (hdr->type == GS_EV_NVTX) {
		if (tl->nvtx)
			gs_nvtx_rows__event(tl->nvtx, hdr, size);
		return;
	}
	err = tl->gpu ? gs_gpu_rows__event(tl->gpu, hdr, size) : 0;
	if (err)
		fatal(tl, err);
}

/* nvtx_rows.c's rows go on the tracks of the threads that made the calls */
static void nvtx_track(void *ctx, pid_t pid, pid_t tid, uint64_t ts_ns)
{
	name_tracks(ctx, pid, tid, ts_ns);
}

/* nvtxNameOsThread: the thread's name from now on, not its comm (never written after it) */
static void nvtx_name_thread(void *ctx, pid_t pid, pid_t tid, const char *name, uint64_t ts_ns)
{
	struct gs_timeline *tl = ctx;

	if (gs_timeline_names__thread_named(tl->named, pid, tid))
		fatal(tl, -ENOMEM);
	name_tracks(tl, pid, tid, ts_ns); /* the process's own name, if not given yet */
	gs_chrome_trace__thread_name(render_begin(tl, pid, ts_ns), pid, tid, name);
	render_end(tl);
}

/* How gpu_rows.c renders into the ordered output: an event of its own per call. */
static struct gs_chrome_trace *gpu_render_begin(void *ctx, pid_t pid, uint64_t ts_ns)
{
	return render_begin(ctx, pid, ts_ns);
}

/* Which output pid's events go to, so that each file names its own GPU tracks. */
static size_t gpu_output(void *ctx, pid_t pid)
{
	return output_of(ctx, pid);
}

static void gpu_render_end(void *ctx)
{
	struct gs_timeline *tl = ctx;

	render_end(tl);
	tl->events++;
}

static void gpu_row(void *ctx, const struct gs_stats_row *row)
{
	struct gs_timeline *tl = ctx;

	if (gs_trace_stats__add(tl->stats, row))
		fatal(tl, -ENOMEM);
}

void gs_timeline__trigger(struct gs_timeline *tl, pid_t pid, uint64_t ts_ns, const char *kind)
{
	struct gs_json *j;

	name_tracks(tl, pid, pid, ts_ns); /* the process named even in an empty window */
	j = gs_chrome_trace__event(render_begin(tl, pid, ts_ns), "i", kind, GS_TL_CAT_TRIGGER, pid,
				   pid, ts_ns);
	gs_json__string(j, "s", "p"); /* the whole process's, not one thread's */
	gs_json__begin_object(j, "args");
	end_slice(tl, j);
}

void gs_timeline__proc_gone(struct gs_timeline *tl, pid_t pid, bool exec)
{
	if (tl->gpu)
		gs_gpu_rows__proc_gone(tl->gpu, pid);
	gs_nvtx_rows__proc_gone(tl->nvtx, pid, gs_clock_ns(CLOCK_MONOTONIC));

	gs_kernel_names__forget(tl->names, pid);
	/* the caller's last look at an exited process's memory, before the model forgets it */
	if (tl->before_forget)
		tl->before_forget(tl->hook_ctx, pid, exec);
	gs_mem_model__proc_gone(&tl->mem, pid, exec);
	/* what the old image held is gone with it */
	if (exec)
		memory_counter(tl, pid, gs_clock_ns(CLOCK_MONOTONIC));
	/*
	 * A new image may name its threads anew. With -o DIR/ an exited process stays named
	 * (its late samples come after its exit: a file names each process once) and keeps its
	 * file; a new image reads its rank anew.
	 */
	gs_timeline_names__gone(tl->named, pid, exec, tl->ranks);
	if (exec)
		gs_addr_map__forget_pid(tl->outputs, pid, NULL);
}

void gs_timeline__top_level(struct gs_timeline *tl, size_t output)
{
	struct gs_json *j =
		gs_chrome_trace__top_level(gs_trace_writer__trace(gs_timeline__writer(tl, output)));
	long no_rank = -1;

	/* -e gpu: the output's devices, and the one file's rank as its GPU records found it */
	if (tl->gpu)
		gs_gpu_rows__top_level(tl->gpu, j, output, output ? &no_rank : NULL);
	if (output)
		gs_rank_files__top_level(&tl->ranks->files[output - 1], j);
	else if (!tl->gpu && !tl->ranks && tl->rank_seen && !tl->ranks_mixed)
		gs_rank_files__distributed_info(j, tl->rank, tl->world_size);
}

/* Every file's events older than the reorder window into the file. */
void gs_timeline__advance(struct gs_timeline *tl, uint64_t now_ns)
{
	gs_trace_writer__advance(tl->writer, now_ns);
	for (size_t i = 0; tl->ranks && i < tl->ranks->nr; i++)
		gs_trace_writer__advance(tl->ranks->files[i].writer, now_ns);
}

void gs_timeline__flush(struct gs_timeline *tl)
{
	gs_trace_writer__flush(tl->writer);
	for (size_t i = 0; tl->ranks && i < tl->ranks->nr; i++)
		gs_trace_writer__flush(tl->ranks->files[i].writer);
}

void gs_timeline__tracker_ops(struct gs_timeline *tl, struct gs_tracker_ops *ops)
{
	ops->ctx = tl;
	ops->mem_alloc = on_alloc;
	ops->mem_free = on_free;
	ops->mem_free_ret = on_free_ret;
	ops->cuda_call = on_cuda_call;
	ops->cpu_sample = on_cpu_sample;
	ops->torch_mem = on_torch_mem;
	ops->torch_oom = on_torch_oom;
	ops->gpu_event = on_gpu_event;
}

struct gs_gpu_rows_emit gs_timeline__gpu_emit(struct gs_timeline *tl)
{
	return (struct gs_gpu_rows_emit){ .ctx = tl,
					  .begin = gpu_render_begin,
					  .end = gpu_render_end,
					  .output = gpu_output,
					  .row = gpu_row };
}

struct gs_nvtx_rows_emit gs_timeline__nvtx_emit(struct gs_timeline *tl)
{
	return (struct gs_nvtx_rows_emit){ .ctx = tl,
					   .begin = gpu_render_begin,
					   .end = gpu_render_end,
					   .track = nvtx_track,
					   .name_thread = nvtx_name_thread };
}

void gs_timeline__write_names(struct gs_timeline *tl, size_t output)
{
	gs_timeline_names__write(tl->named, output,
				 gs_trace_writer__trace(gs_timeline__writer(tl, output)));
}

void gs_timeline__count_names(struct gs_timeline *tl)
{
	/* the summary counts each process's last label, as `gpusnoop stats` reads the file */
	for (size_t i = 0; i < gs_timeline_names__nr(tl->named); i++) {
		const struct gs_timeline_proc *p = gs_timeline_names__get(tl->named, i);

		if (gs_trace_stats__add(tl->stats, &(struct gs_stats_row){ .ph = 'M',
									   .name = "process_name",
									   .pid = p->pid,
									   .label = p->label }))
			fatal(tl, -ENOMEM);
	}
}

void gs_timeline__release(struct gs_timeline *tl)
{
	for (size_t i = 0; i < tl->nr_stack_json; i++)
		free(tl->stack_json[i]);
	free(tl->stack_json);
	tl->stack_json = NULL;
	tl->nr_stack_json = 0;
}
