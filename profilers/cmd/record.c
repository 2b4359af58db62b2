// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record.c: `gpusnoop record`, CUDA calls of live processes as one Chrome/Perfetto timeline. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "profilers/cpu_sampler.h"
#include "profilers/cuda/api.h"
#include "profilers/cuda/call.h"
#include "profilers/cuda/kernel_names.h"
#include "profilers/mem_model.h"
#include "profilers/snapshot_file.h"
#include "profilers/options.h"
#include "profilers/proc_tree.h"
#include "profilers/run_loop.h"
#include "profilers/cmd/record_gpu.h"
#include "profilers/cmd/record_nvtx.h"
#include "profilers/cmd/record_summary.h"
#include "profilers/cmd/trace_stats.h"
#include "profilers/cmd/subcommands.h"
#include "profilers/torch/accounting.h"
#include "profilers/tracker.h"
#include "stitch/chrome_trace.h"
#include "stitch/trace_writer.h"
#include "profilers/cmd/record_ranks.h"
#include "user/addr_map.h"
#include "user/clock.h"
#include "user/kallsyms.h"
#include "user/event_decode.h"
#include "user/log.h"
#include "user/losses.h"
#include "user/out_file.h"
#include "user/proc_info.h"
#include "user/stack_table.h"
#include "user/status_line.h"

#define POLL_MS		100
#define STATUS_EVERY_NS 1000000000ULL
#define MEMORY_COUNTER	"CUDA memory"
#define PINNED_COUNTER	"CUDA pinned host memory"
/*
 * Records reach userspace from several CPUs through the ring buffer, and a call's slice only
 * when it returns: events are held this long and written in timestamp order. A slice that
 * starts more than this before its predecessor in the file is written anyway, and counted.
 */
#define REORDER_WINDOW_NS 500000000ULL

/* -e without -e: the one list --help shows and the README repeats (tests/e2e/test_cli.py) */
#define DEFAULT_EVENTS "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy,torch-mem"

enum { OPT_OUTPUT_FD = 0x3000, OPT_INJECT, OPT_MAX_BYTES, OPT_MEMORY_SNAPSHOT };

/* --max-bytes: what the trace's end needs at most (held events are not written then) */
#define CAP_MIN_MARGIN (256 * 1024ULL)

struct record_opts {
	struct gs_common_opts common;
	uint32_t families;
	bool cpu;	  /* -e cpu: CPU samples */
	bool gpu;	  /* -e gpu: GPU activity from the CUPTI injection library */
	bool nvtx;	  /* -e nvtx (and -e gpu): NVTX ranges from the same library */
	bool nvtx_named;  /* -e nvtx itself, not only through -e gpu */
	bool inject;	  /* --inject: load that library into the -p processes */
	const char *freq; /* -F, validated after parsing */
	int output_fd;	  /* --output-fd: the daemon's temporary, written in place; -1: none */
	bool output_fd_gz;
	uint64_t max_bytes;   /* --max-bytes: the daemon's cap on a user's recording; 0: none */
	const char *snapshot; /* --memory-snapshot FILE: PyTorch's memory snapshot there too */
};

struct record {
	struct record_opts opts;
	int argc;
	char **argv;
	struct gs_tracker *tracker;
	struct gs_stack_table *stacks;
	struct gs_kernel_names *names;
	struct gs_mem_model mem;   /* memory state: the counter tracks render it */
	struct gs_addr_map *named; /* (pid, tid) already given an M event; tid 0: the process */
	/* record's summary, counted from the rows as written (gpusnoop stats: from the file) */
	struct gs_trace_stats *stats;
	struct gs_stats_row row;     /* the slice being written; ph 0: none */
	struct gs_record_gpu *gpu;   /* -e gpu */
	struct gs_record_nvtx *nvtx; /* -e nvtx */
	/* the output file: each event rendered alone, then written in timestamp order; with
	 * -o DIR/ a sink for what comes after a failure, the events going to ranks' files */
	struct gs_trace_writer *writer;
	struct gs_record_ranks *ranks;	/* -o DIR/: one file per rank */
	struct gs_trace_writer *cur;	/* the writer of the event being rendered */
	struct gs_chrome_trace *render; /* the event being rendered */
	struct gs_cpu_sampler *sampler;
	struct gs_kallsyms *kallsyms;
	unsigned int hz;
	char **stack_json; /* by stack id: the JSON array of its frames, made once */
	size_t nr_stack_json;
	struct gs_out *out;
	uint64_t start_mono_ns, start_real_ns;
	uint64_t events, cpu_samples;
	bool capped; /* stopped at --max-bytes: what was held and came later is not written */
	int error;
};

static void fatal(struct record *r, int err)
{
	if (!r->error) {
		gs_err("recording: %s", strerror(-err));
		r->error = err;
	}
}

/* pid's output: 0, the one file (or the sink); i + 1, the i-th file of -o DIR/, its rank's. */
static size_t output_of(struct record *r, pid_t pid)
{
	const struct gs_proc_tree_entry *e;
	long i;

	if (!r->ranks)
		return 0;
	e = gs_tracker__proc(r->tracker, pid);
	i = gs_record_ranks__file(r->ranks, e ? e->rank : -1, pid);
	if (i < 0) {
		fatal(r, (int)i);
		return 0; /* the sink: the recording stops and removes its files */
	}
	return (size_t)i + 1;
}

static struct gs_trace_writer *writer_at(struct record *r, size_t output)
{
	return output ? r->ranks->files[output - 1].writer : r->writer;
}

/* Starts rendering one event of pid, which goes to its file in order of ts_ns. */
static struct gs_chrome_trace *render_begin(struct record *r, pid_t pid, uint64_t ts_ns)
{
	r->cur = writer_at(r, output_of(r, pid));
	r->render = gs_trace_writer__begin(r->cur, ts_ns);
	return r->render;
}

/* The rendered event into the writer's reorder window. */
static void render_end(struct record *r)
{
	if (gs_trace_writer__end(r->cur))
		fatal(r, -ENOMEM);
}

/* Names the process and the thread track the first time either appears. */
static void name_tracks(struct record *r, pid_t pid, pid_t tid, uint64_t ts_ns)
{
	uint64_t seen;
	char comm[32], label[64];

	if (!gs_addr_map__get(r->named, pid, 0, &seen)) {
		/* the processes of a tree (ranks of a launcher) apart at a glance */
		gs_proc_tree_label(gs_tracker__proc(r->tracker, pid),
				   gs_tracker__comm(r->tracker, pid), label, sizeof(label));
		gs_chrome_trace__process_name(render_begin(r, pid, ts_ns), pid, label);
		render_end(r);
		if (gs_trace_stats__add(r->stats, &(struct gs_stats_row){ .ph = 'M',
									  .name = "process_name",
									  .pid = pid,
									  .label = label }))
			fatal(r, -ENOMEM);
		gs_addr_map__set(r->named, pid, 0, 1);
	}
	if (!gs_addr_map__get(r->named, pid, (uint64_t)tid, &seen)) {
		gs_read_comm(pid, tid, comm, sizeof(comm));
		gs_chrome_trace__thread_name(render_begin(r, pid, ts_ns), pid, tid, comm);
		render_end(r);
		gs_addr_map__set(r->named, pid, (uint64_t)tid, 1);
	}
}

static const char *category(const struct gs_cuda_api *api)
{
	/* Kineto's categories, so Holistic Trace Analysis-style tools recognise the slices */
	return api && api->lib == GS_LIB_DRIVER ? "cuda_driver" : "cuda_runtime";
}

/* Starts an X slice for one API call on its thread. */
static struct gs_json *begin_slice(struct record *r, const struct gs_event_hdr *hdr,
				   uint16_t api_id, uint64_t entry_ts_ns)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(api_id);
	uint64_t start = entry_ts_ns && entry_ts_ns <= hdr->ts_ns ? entry_ts_ns : hdr->ts_ns;
	struct gs_json *j;
	char dur[32];

	name_tracks(r, (pid_t)hdr->pid, (pid_t)hdr->tid, start);
	j = gs_chrome_trace__event(render_begin(r, (pid_t)hdr->pid, start), "X",
				   gs_cuda_api_name(api_id), category(api), hdr->pid, hdr->tid,
				   start);
	gs_chrome_trace_format_us(hdr->ts_ns - start, dur, sizeof(dur));
	gs_json__raw(j, "dur", dur);
	gs_json__begin_object(j, "args");
	/* what the summary counts of the row; the call sites add its args, end_slice hands it */
	r->row = (struct gs_stats_row){ .ph = 'X',
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

static void error_args(struct record *r, struct gs_json *j, uint16_t api_id, int32_t ret)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(api_id);

	if (!ret)
		return;
	r->row.error = true;
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
static void stack_arg(struct record *r, struct gs_json *j, pid_t pid, const __u64 *frames,
		      uint32_t nr)
{
	int64_t id = gs_stack_table__intern(r->stacks, pid, (const uint64_t *)frames, nr);

	if (id < 0) {
		fatal(r, (int)id);
		return;
	}
	if ((size_t)id >= r->nr_stack_json) {
		size_t n = r->nr_stack_json ? r->nr_stack_json * 2 : 256;
		char **grown;

		while (n <= (size_t)id)
			n *= 2;
		grown = realloc(r->stack_json, n * sizeof(*grown));
		if (!grown) {
			fatal(r, -ENOMEM);
			return;
		}
		memset(grown + r->nr_stack_json, 0, (n - r->nr_stack_json) * sizeof(*grown));
		r->stack_json = grown;
		r->nr_stack_json = n;
	}
	if (!r->stack_json[id])
		r->stack_json[id] = format_stack(gs_stack_table__get(r->stacks, (uint32_t)id));
	if (!r->stack_json[id]) {
		fatal(r, -ENOMEM);
		return;
	}
	gs_json__raw(j, "stack", r->stack_json[id]);
}

static void end_slice(struct record *r, struct gs_json *j)
{
	gs_json__end_object(j); /* args */
	gs_chrome_trace__end_event(r->render);
	render_end(r);
	r->events++;
	if (r->row.ph && gs_trace_stats__add(r->stats, &r->row))
		fatal(r, -ENOMEM);
	r->row.ph = 0;
}

/* A counter sample is an event of the trace like a slice: metadata.events and the summary
 * count it (a torch-mem recording holds little else). */
static void counter_event(struct record *r, pid_t pid, const char *name, uint64_t ts_ns,
			  uint64_t value)
{
	gs_chrome_trace__counter(render_begin(r, pid, ts_ns), pid, name, ts_ns, "bytes", value);
	render_end(r);
	r->events++;
}

/* Device (and managed) memory, and pinned host memory on a track of its own once there is any. */
static void memory_counter(struct record *r, pid_t pid, uint64_t ts_ns)
{
	struct gs_mem_proc *p = gs_mem_model__proc(&r->mem, pid, false);

	if (!p)
		return;
	counter_event(r, pid, MEMORY_COUNTER, ts_ns,
		      gs_mem_model__cuda_bytes(&r->mem, pid) - p->pinned_bytes);
	if (p->pinned_seen)
		counter_event(r, pid, PINNED_COUNTER, ts_ns, p->pinned_bytes);
}

/* Two counter tracks per device of a PyTorch process: allocated and reserved bytes. */
static void torch_counters(struct record *r, pid_t pid, uint64_t ts_ns)
{
	struct gs_torch_proc *p = gs_mem_model__torch_proc(&r->mem, pid);
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
		counter_event(r, pid, name, ts_ns, d->allocated);
		if (d->key >> 8 == GS_TORCH_DEV_CPU)
			continue;
		snprintf(name, sizeof(name), "PyTorch %s reserved", dev);
		counter_event(r, pid, name, ts_ns, d->reserved);
	}
}

static void on_torch_mem(void *ctx, const struct gs_torch_mem *e)
{
	struct record *r = ctx;
	struct gs_mem_effect fx;
	int err = gs_mem_model__tensor(&r->mem, e, &fx);

	if (err) {
		fatal(r, err);
		return;
	}
	gs_record_summary__torch_mem(gs_trace_stats__record_summary(r->stats),
				     e->op == GS_TORCH_OP_ALLOC);
	name_tracks(r, (pid_t)e->hdr.pid, (pid_t)e->hdr.tid, e->hdr.ts_ns);
	torch_counters(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

/* an instant event on the thread that ran out, with what was requested */
static void on_torch_oom(void *ctx, const struct gs_torch_oom *e)
{
	struct record *r = ctx;
	struct gs_mem_effect fx;
	struct gs_json *j;
	char dev[16];
	int err = gs_mem_model__torch_oom(&r->mem, e, &fx);

	if (err)
		fatal(r, err);
	if (!fx.torch_oom)
		return;
	gs_record_summary__torch_oom(gs_trace_stats__record_summary(r->stats));
	name_tracks(r, (pid_t)e->hdr.pid, (pid_t)e->hdr.tid, e->hdr.ts_ns);
	j = gs_chrome_trace__event(render_begin(r, (pid_t)e->hdr.pid, e->hdr.ts_ns), "i",
				   "PyTorch out of memory", "torch_oom", e->hdr.pid, e->hdr.tid,
				   e->hdr.ts_ns);
	gs_json__string(j, "s", "t");
	gs_json__begin_object(j, "args");
	gs_torch_device_name(fx.oom.device, dev, sizeof(dev));
	gs_json__u64(j, "requested", fx.oom.requested);
	gs_json__string(j, "device", dev);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
}

static void on_alloc(void *ctx, const struct gs_mem_alloc *e)
{
	struct record *r = ctx;
	struct gs_mem_effect fx;
	struct gs_json *j;
	int err = gs_mem_model__alloc(&r->mem, e, &fx);

	if (err) {
		fatal(r, err);
		return;
	}
	if (fx.route == GS_ROUTE_SEGMENT)
		torch_counters(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
	if (!(r->opts.families & GS_FAM_BIT(GS_FAM_MEM)))
		return; /* probed for torch-mem's segments only */
	j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	gs_json__u64(j, "bytes", e->size);
	r->row.has_bytes = true;
	r->row.bytes = e->size;
	if (!e->ret)
		hex_arg(j, "ptr", e->ptr);
	error_args(r, j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
	if (!e->ret && fx.route == GS_ROUTE_RAW)
		memory_counter(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

/* at entry, where the memory is given back: the slice comes with the return */
static void on_free(void *ctx, const struct gs_mem_free *e)
{
	struct record *r = ctx;
	struct gs_mem_effect fx;
	int err = gs_mem_model__free(&r->mem, e, &fx);

	if (err)
		fatal(r, err);
	else if (fx.route == GS_ROUTE_SEGMENT)
		torch_counters(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
	else if (e->ptr && r->opts.families & GS_FAM_BIT(GS_FAM_MEM))
		memory_counter(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

static void on_free_ret(void *ctx, const struct gs_mem_free_ret *e)
{
	struct record *r = ctx;
	struct gs_mem_effect fx;
	struct gs_json *j;

	gs_mem_model__free_ret(&r->mem, e, &fx);
	if (!(r->opts.families & GS_FAM_BIT(GS_FAM_MEM)))
		return;
	j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	hex_arg(j, "ptr", e->ptr);
	error_args(r, j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
	if (e->ret)
		memory_counter(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

static void dims_arg(struct gs_json *j, const char *key, const uint32_t dims[3])
{
	gs_json__begin_array(j, key);
	for (int i = 0; i < 3; i++)
		gs_json__u64(j, NULL, dims[i]);
	gs_json__end_array(j);
}

/* Ends a launch or copy slice; with -e gpu, with its correlation id and flow to its GPU work. */
static void gpu_slice_end(struct record *r, struct gs_json *j, const struct gs_cuda_api *api,
			  const struct gs_cuda_call *e)
{
	uint32_t id = r->gpu ? gs_record_gpu__slice_args(r->gpu, j, &e->hdr, e->entry_ts_ns,
							 api->lib == GS_LIB_DRIVER)
			     : 0;

	end_slice(r, j);
	if (id)
		gs_record_gpu__slice_flow(r->gpu, &e->hdr, e->entry_ts_ns, id);
}

static void record_launch(struct record *r, const struct gs_cuda_api *api,
			  const struct gs_cuda_call *e)
{
	struct gs_launch l;
	struct gs_json *j;
	const char *kernel;

	gs_decode_launch(api, e, &l);
	j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	if (l.graph) {
		hex_arg(j, "graph", l.func);
	} else {
		kernel = gs_kernel_names__resolve(r->names, (pid_t)e->hdr.pid, l.func);
		gs_json__string(j, "kernel", kernel);
		r->row.kernel = kernel;
		dims_arg(j, "grid", l.grid);
		dims_arg(j, "block", l.block);
		gs_json__u64(j, "shared memory", l.shared_mem);
	}
	hex_arg(j, "stream", l.stream);
	error_args(r, j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	gpu_slice_end(r, j, api, e);
}

static void record_sync(struct record *r, const struct gs_cuda_api *api,
			const struct gs_cuda_call *e)
{
	struct gs_json *j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	uint64_t handle;

	if (gs_decode_sync_handle(api, e, &handle))
		hex_arg(j, api->handle_name, handle);
	else
		gs_json__string(j, "scope", api->handle_name);
	error_args(r, j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
}

static void record_copy(struct record *r, const struct gs_cuda_api *api,
			const struct gs_cuda_call *e)
{
	struct gs_json *j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	struct gs_copy c;

	gs_decode_copy(api, e, &c);
	gs_json__u64(j, "bytes", c.bytes);
	gs_json__string(j, "kind", gs_copy_kind_name(c.kind));
	r->row.has_bytes = true;
	r->row.bytes = c.bytes;
	r->row.kind = gs_copy_kind_name(c.kind);
	if (c.has_stream)
		hex_arg(j, "stream", c.stream);
	error_args(r, j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	gpu_slice_end(r, j, api, e);
}

static void learn_name(struct record *r, const struct gs_cuda_api *api,
		       const struct gs_cuda_call *e)
{
	gs_kernel_names__learn_call(r->names, api, e);
}

/* cuMemMap/cuMemUnmap: PyTorch's segment counters, or a raw mapping's slice and counter */
static void record_segment_call(struct record *r, const struct gs_cuda_call *e)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);
	struct gs_mem_effect fx;
	struct gs_json *j;
	int err = gs_mem_model__cuda_call(&r->mem, e, &fx);

	if (err) {
		fatal(r, err);
		return;
	}
	if (fx.route == GS_ROUTE_SEGMENT)
		torch_counters(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
	if (fx.route != GS_ROUTE_RAW || !(r->opts.families & GS_FAM_BIT(GS_FAM_MEM)))
		return;
	j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	if (api && api->shape == GS_SHAPE_MAP)
		gs_json__u64(j, "bytes", e->args[1]);
	hex_arg(j, "ptr", e->args[0]);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
	memory_counter(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

static void on_cuda_call(void *ctx, const struct gs_cuda_call *e)
{
	struct record *r = ctx;
	const struct gs_cuda_api *api = gs_cuda_api_get(e->api);

	if (!api)
		return;
	switch (api->family) {
	case GS_FAM_LAUNCH:
		record_launch(r, api, e);
		break;
	case GS_FAM_SYNC:
		record_sync(r, api, e);
		break;
	case GS_FAM_COPY:
		record_copy(r, api, e);
		break;
	case GS_FAM_NAMES:
		learn_name(r, api, e);
		break;
	case GS_FAM_MEM: /* cuMemMap/cuMemUnmap: the pages of PyTorch's expandable segments */
		record_segment_call(r, e);
		break;
	default:
		break;
	}
}

/* "symbol+0xoff" of a kernel address (the first frame is the sampled IP, others return). */
static void kernel_frame(struct record *r, uint64_t addr, bool leaf, char *buf, size_t len)
{
	uint64_t off;
	const char *module = NULL;
	const char *name =
		r->kallsyms ? gs_kallsyms__lookup(r->kallsyms, addr - !leaf, &off, &module) : NULL;

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
	struct record *r = ctx;
	pid_t pid = (pid_t)e->hdr.pid;
	const struct gs_stack *s = NULL;
	const char *name = "[unknown]";
	struct gs_json *j;
	char buf[256];

	if (e->nr_frames) {
		int64_t id = gs_stack_table__intern(r->stacks, pid, (const uint64_t *)e->frames,
						    e->nr_frames);

		if (id < 0) {
			fatal(r, (int)id);
			return;
		}
		s = gs_stack_table__get(r->stacks, (uint32_t)id);
	}
	if (e->nr_kernel) {
		uint64_t off;
		const char *k = r->kallsyms
					? gs_kallsyms__lookup(r->kallsyms, e->kernel[0], &off, NULL)
					: NULL;

		snprintf(buf, sizeof(buf), "%s_[k]", k ? k : "[unknown]");
		name = buf;
	} else if (s && s->frames[0].symbol) {
		name = s->frames[0].symbol;
	}
	name_tracks(r, pid, (pid_t)e->hdr.tid, e->hdr.ts_ns);
	j = gs_chrome_trace__event(render_begin(r, pid, e->hdr.ts_ns), "i", name, "cpu_sample", pid,
				   e->hdr.tid, e->hdr.ts_ns);
	gs_json__string(j, "s", "t");
	gs_json__begin_object(j, "args");
	gs_json__u64(j, "cpu", e->cpu);
	if (e->nr_kernel) {
		gs_json__begin_array(j, "kernel_stack");
		for (uint32_t i = 0; i < e->nr_kernel; i++) {
			kernel_frame(r, e->kernel[i], i == 0, buf, sizeof(buf));
			gs_json__string(j, NULL, buf);
		}
		gs_json__end_array(j);
	}
	stack_arg(r, j, pid, e->frames, e->nr_frames);
	r->cpu_samples++;
	end_slice(r, j);
}

static void on_gpu_event(void *ctx, const struct gs_event_hdr *hdr, size_t size)
{
	struct record *r = ctx;
	int err = 0;

	if (hdr->type == GS_EV_NVTX) {
		if (r->nvtx)
			gs_record_nvtx__event(r->nvtx, hdr, size);
		return;
	}
	err = r->gpu ? gs_record_gpu__event(r->gpu, hdr, size) : 0;
	if (err)
		fatal(r, err);
}

/* record_nvtx.c's rows go on the tracks of the threads that made the calls */
static void nvtx_track(void *ctx, pid_t pid, pid_t tid, uint64_t ts_ns)
{
	name_tracks(ctx, pid, tid, ts_ns);
}

/* nvtxNameOsThread: the thread's name from now on, not its comm (never written after it) */
static void nvtx_name_thread(void *ctx, pid_t pid, pid_t tid, const char *name, uint64_t ts_ns)
{
	struct record *r = ctx;

	gs_addr_map__set(r->named, pid, (uint64_t)tid, 1);
	name_tracks(r, pid, tid, ts_ns); /* the process's own name, if not given yet */
	gs_chrome_trace__thread_name(render_begin(r, pid, ts_ns), pid, tid, name);
	render_end(r);
}

/* How record_gpu.c renders into the ordered output: an event of its own per call. */
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
	struct record *r = ctx;

	render_end(r);
	r->events++;
}

static void gpu_row(void *ctx, const struct gs_stats_row *row)
{
	struct record *r = ctx;

	if (gs_trace_stats__add(r->stats, row))
		fatal(r, -ENOMEM);
}

static pid_t snapshot_target(struct record *r);

static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	struct record *r = ctx;

	if (r->gpu)
		gs_record_gpu__proc_gone(r->gpu, pid);
	gs_record_nvtx__proc_gone(r->nvtx, pid, gs_clock_ns(CLOCK_MONOTONIC));

	gs_kernel_names__forget(r->names, pid);
	/* an exited process's last memory state, before the model forgets it */
	if (r->opts.snapshot && !exec && gs_mem_model__torch_proc(&r->mem, pid))
		gs_snapshot_files_write(&r->mem, r->opts.snapshot, snapshot_target(r), pid, 0,
					"exit", gs_clock_ns(CLOCK_MONOTONIC));
	gs_mem_model__proc_gone(&r->mem, pid, exec);
	/* what the old image held is gone with it */
	if (exec)
		memory_counter(r, pid, gs_clock_ns(CLOCK_MONOTONIC));
	/* a new image may name its threads anew */
	gs_addr_map__forget_pid(r->named, pid, NULL);
}

/* One file's end: Kineto's top-level keys (rank NULL: the recording's) and the metadata. */
static void write_file_metadata(struct record *r, size_t output, const long *rank)
{
	struct gs_json *j;
	uint64_t stats[GS_STAT__MAX];
	char stamp[64];
	struct utsname u;
	struct tm tm;
	time_t secs = (time_t)(r->start_real_ns / 1000000000ULL);
	struct gs_trace_writer *w = writer_at(r, output);

	gs_trace_writer__flush(w);
	if (r->gpu) /* Kineto's top-level keys, where HTA looks for them */
		gs_record_gpu__top_level(r->gpu,
					 gs_chrome_trace__top_level(gs_trace_writer__trace(w)),
					 output, rank);
	j = gs_trace_writer__metadata(w);
	gs_tracker__stats(r->tracker, stats);
	uname(&u);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&secs, &tm));
	gs_json__string(j, "tool", "gpusnoop");
	gs_json__string(j, "version", GS_VERSION);
	gs_json__string(j, "host", u.nodename);
	gs_json__string(j, "kernel_release", u.release);
	gs_json__string(j, "start_time", stamp);
	gs_json__u64(j, "start_realtime_ns", r->start_real_ns);
	gs_json__u64(j, "start_monotonic_ns", r->start_mono_ns);
	/* trace timestamps are CLOCK_MONOTONIC; add this to get CLOCK_REALTIME */
	gs_json__i64(j, "monotonic_to_realtime_ns", (int64_t)(r->start_real_ns - r->start_mono_ns));
	gs_json__begin_array(j, "command_line");
	gs_json__string(j, NULL, "gpusnoop");
	/* argv as given: main named the subcommand's argv[0] "gpusnoop record" for argp */
	for (int i = 0; i < r->argc; i++)
		gs_json__string(j, NULL,
				i || strncmp(r->argv[0], "gpusnoop ", 9) ? r->argv[i]
									 : r->argv[0] + 9);
	gs_json__end_array(j);
	gs_json__u64(j, "events", r->events);
	/* --stacks none: the events carry no stacks by request, not by loss */
	gs_json__string(j, "stacks", r->opts.common.stacks == GS_STACKS_NONE ? "none" : "user");
	gs_losses_write_json(j, stats);
	/* events written out of timestamp order: later than the reorder window allowed */
	gs_json__begin_object(j, "reorder");
	gs_json__u64(j, "window_ns", REORDER_WINDOW_NS);
	gs_json__u64(j, "late_events", gs_trace_writer__late(w));
	gs_json__end_object(j);
	if (r->gpu)
		gs_record_gpu__metadata(r->gpu, j);
	if (r->nvtx)
		gs_record_nvtx__metadata(r->nvtx, j);
	/* names and handles past a process's cap: their launches read "unknown 0x..." */
	gs_json__u64(j, "kernel_names_not_kept", gs_kernel_names__refused(r->names));
	if (r->capped) {
		gs_json__begin_object(j, "size_cap");
		gs_json__u64(j, "max_bytes", r->opts.max_bytes);
		gs_json__u64(j, "events_not_written", gs_trace_writer__not_written(w));
		gs_json__end_object(j);
	}
	if (r->sampler) {
		gs_json__begin_object(j, "cpu_sampling");
		gs_json__string(j, "event", gs_cpu_sampler__event(r->sampler));
		gs_json__u64(j, "frequency_hz", r->hz);
		gs_json__u64(j, "cpus", gs_cpu_sampler__nr_cpus(r->sampler));
		gs_json__u64(j, "samples", r->cpu_samples);
		gs_json__end_object(j);
	}
	gs_trace_writer__finish(w);
}

static void write_metadata(struct record *r)
{
	write_file_metadata(r, 0, NULL);
	for (size_t i = 0; r->ranks && i < r->ranks->nr; i++)
		write_file_metadata(r, i + 1, &r->ranks->files[i].rank);
}

/* Every file's events older than the reorder window into the file. */
static void advance_files(struct record *r, uint64_t now_ns)
{
	gs_trace_writer__advance(r->writer, now_ns);
	for (size_t i = 0; r->ranks && i < r->ranks->nr; i++)
		gs_trace_writer__advance(r->ranks->files[i].writer, now_ns);
}

static void flush_files(struct record *r)
{
	gs_trace_writer__flush(r->writer);
	for (size_t i = 0; r->ranks && i < r->ranks->nr; i++)
		gs_trace_writer__flush(r->ranks->files[i].writer);
}

/* A live status line, only for a person watching a terminal. */
static void show_status(struct record *r, uint64_t now, uint64_t *last_ns, uint64_t *last_events)
{
	double secs = (double)(now - *last_ns) / 1e9;

	if (now - *last_ns < STATUS_EVERY_NS)
		return;
	gs_status_line__show("recording: %.0f events/s, %" PRIu64 " dropped",
			     (double)(r->events - *last_events) / secs,
			     gs_tracker__dropped(r->tracker));
	*last_ns = now;
	*last_events = r->events;
}

/* What the loop carries between ticks: the status line's last figures. */
struct loop_state {
	struct record *r;
	uint64_t last_status, last_events;
};

/*
 * --max-bytes: once the file comes within a margin of its cap (an eighth, at least what the
 * end needs), the held events are dropped and the recording stops as on SIGTERM: the file
 * ends valid, within the cap. The daemon's RLIMIT_FSIZE stops any write past it.
 */
static void check_size(struct record *r)
{
	uint64_t max = r->opts.max_bytes, margin = max / 8;
	struct stat st;

	if (!max || r->capped || fstat(r->opts.output_fd, &st))
		return;
	if (margin < CAP_MIN_MARGIN)
		margin = CAP_MIN_MARGIN;
	if ((uint64_t)st.st_size + margin < max)
		return;
	r->capped = true;
	gs_trace_writer__close_window(r->writer);
	gs_info("recording stopped: its trace reached %" PRIu64 " bytes of its cap of %" PRIu64,
		(uint64_t)st.st_size, max);
	gs_stop_requested = SIGTERM;
}

/* the writer's question, between events: whether check_size() stopped the recording */
static bool size_capped(void *ctx)
{
	struct record *r = ctx;

	check_size(r);
	return r->capped;
}

static int tick(void *ctx, uint64_t now_ns)
{
	struct loop_state *st = ctx;

	if (st->r->gpu)
		gs_record_gpu__advance(st->r->gpu, now_ns);
	advance_files(st->r, now_ns);
	check_size(st->r);
	show_status(st->r, now_ns, &st->last_status, &st->last_events);
	return 0;
}

static int run_loop(struct record *r)
{
	struct loop_state st = { .r = r, .last_status = r->start_mono_ns };
	struct gs_run_loop loop = {
		.tracker = r->tracker,
		.start_ns = r->start_mono_ns,
		.duration_s = r->opts.common.duration_s,
		.poll_ms = POLL_MS,
		.error = &r->error,
		.ctx = &st,
		.tick = tick,
	};
	int err = gs_run_loop(&loop, NULL);

	gs_status_line__clear();
	gs_record_nvtx__finish(r->nvtx, gs_clock_ns(CLOCK_MONOTONIC));
	if (r->gpu)
		gs_record_gpu__advance(r->gpu, UINT64_MAX);
	flush_files(r);
	return err ?: r->error;
}

static const struct argp_option record_options[] = {
	{ "events", 'e', "EVENTS", 0, "What to record: a comma list of the events below", 0 },
	{ "freq", 'F', "HZ", 0, "CPU samples per second on each CPU with -e cpu (default 99)", 0 },
	{ "inject", OPT_INJECT, NULL, 0,
	  "With -e gpu -p: load the CUPTI injection library into processes started without it "
	  "(ptrace; risks in the README)",
	  0 },
	{ "memory-snapshot", OPT_MEMORY_SNAPSHOT, "FILE", 0,
	  "With -e torch-mem: also write PyTorch's memory snapshot (torch.cuda._memory_viz's "
	  "pickle) of each PyTorch process to FILE (FILE.PID for processes the command started) "
	  "at its exit or the recording's end",
	  0 },
	/* internal: the daemon caps what a user's recording writes */
	{ "max-bytes", OPT_MAX_BYTES, "BYTES", OPTION_HIDDEN,
	  "With --output-fd: stop, the trace complete, before it passes BYTES", 0 },
	/* internal: the daemon's recordings write to a descriptor it made, never to a name */
	{ "output-fd", OPT_OUTPUT_FD, "FD[,gz]", OPTION_HIDDEN, "Write to this open descriptor",
	  0 },
	{ 0 },
};

/* -e: the CUDA families, and "cpu" for CPU samples. Returns 0 or -EINVAL. */
static int parse_events(const char *arg, struct record_opts *o)
{
	char *list = strdup(arg), *tok, *save = NULL, cuda[256] = "";
	size_t len = 0;
	int err = 0;

	if (!list)
		return -ENOMEM;
	o->cpu = o->gpu = o->nvtx = o->nvtx_named = false;
	for (tok = strtok_r(list, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "cpu"))
			o->cpu = true;
		else if (!strcmp(tok, "gpu"))
			o->gpu = o->nvtx = true;
		else if (!strcmp(tok, "nvtx"))
			o->nvtx = o->nvtx_named = true;
		else if (len + strlen(tok) + 2 < sizeof(cuda))
			len += (size_t)snprintf(cuda + len, sizeof(cuda) - len, "%s%s",
						len ? "," : "", tok);
		else
			err = -EINVAL;
	}
	free(list);
	o->families = 0;
	if (!err && (*cuda || !(o->cpu || o->gpu || o->nvtx)))
		err = gs_parse_event_families(cuda, &o->families);
	/* GPU work is linked to the launch and copy slices that made it: whole slices, entry
	 * to return, which span the moment the call reports its correlation id */
	if (o->gpu)
		o->families |= GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_LAUNCH_LATENCY) |
			       GS_FAM_BIT(GS_FAM_COPY) | GS_FAM_BIT(GS_FAM_NAMES);
	return err;
}

static error_t record_parse(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		state->child_inputs[1] = &o->common;
		state->child_inputs[2] = &o->common;
		break;
	case 'e':
		if (parse_events(arg, o))
			argp_error(state, "unknown events '%s' (%s, cpu, gpu, nvtx)", arg,
				   GS_EVENT_FAMILY_NAMES);
		break;
	case 'F':
		o->freq = arg;
		break;
	case OPT_INJECT:
		o->inject = true;
		break;
	case OPT_MEMORY_SNAPSHOT:
		o->snapshot = arg;
		break;
	case OPT_OUTPUT_FD: {
		char *end;
		long fd;

		errno = 0;
		fd = strtol(arg, &end, 10);
		o->output_fd_gz = !strcmp(end, ",gz");
		if (errno || end == arg || fd < 0 || fd > INT32_MAX || (*end && !o->output_fd_gz))
			argp_error(state, "invalid --output-fd '%s'", arg);
		o->output_fd = (int)fd;
		break;
	}
	case OPT_MAX_BYTES: {
		char *end;

		errno = 0;
		o->max_bytes = strtoull(arg, &end, 10);
		if (errno || end == arg || *end || !o->max_bytes || *arg == '-')
			argp_error(state, "invalid --max-bytes '%s'", arg);
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child record_children[] = {
	{ &gs_common_argp, 0, "Targets and output:", 0 },
	{ &gs_stacks_none_argp, 0, NULL, 0 },
	{ &gs_filter_argp, 0, NULL, 0 },
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const char record_doc[] =
	"Record CUDA launches, synchronizations, copies and allocations of live processes as a "
	"Chrome Trace Event JSON timeline (open it in ui.perfetto.dev).\v"
	"The trace goes to -o FILE (gzip-compressed when FILE ends in .gz), else stdout. It is "
	"complete when -d expires, on Ctrl-C or SIGTERM, or when the last target exits. -o DIR/ "
	"(or an existing directory) writes one file per rank, DIR/rank-R.json, or per process "
	"without a rank, DIR/pid-P.json, as Holistic Trace Analysis loads them.\n\n"
	"EVENTS is a comma list of " GS_EVENT_FAMILY_NAMES ", cpu, gpu, nvtx. nvtx: NVTX ranges "
	"and marks (on with gpu) of processes started with NVTX_INJECTION64_PATH set, as -- CMD "
	"is. Without -e:\n"
	"  -e " DEFAULT_EVENTS "\n\n"
	"EXAMPLES:\n"
	"  gpusnoop record -p 1234 -d 10 -o trace.json.gz   # 10 s of pid 1234\n"
	"  gpusnoop record -e cuda-launch,cuda-sync -o t.json -- ./train\n"
	"  gpusnoop record -e cpu,cuda-sync -F 499 -p 1234 -o t.json  # + CPU samples\n"
	"  gpusnoop record -e gpu -o t.json -- ./train      # + GPU work, NVTX\n"
	"  gpusnoop record -e nvtx,cuda-launch -o t.json -- ./train  # NVTX ranges\n"
	"  gpusnoop record -e gpu -o traces/ -- torchrun ... # one file per rank\n"
	"  gpusnoop record -e torch-mem --memory-snapshot m.pickle -- ./train\n"
	"  gpusnoop record -a -d 5 -o all.json.gz           # every CUDA process";

static const struct argp record_argp = {
	record_options, record_parse,	 "[-p PID ... | -a | -- CMD ARGS]",
	record_doc,	record_children, NULL,
	NULL,
};

/* -F only with -e cpu; one output. Returns 0 or -EINVAL (logged). */
static int check_opts(const struct record_opts *o, unsigned int *hz)
{
	int err;

	*hz = GS_CPU_DEFAULT_HZ;
	if (o->freq && (!o->cpu || gs_cpu_parse_hz(o->freq, hz))) {
		if (!o->cpu)
			gs_err("-F is the CPU sampling frequency: it needs -e cpu");
		return -EINVAL;
	}
	if (o->output_fd >= 0 && o->common.output) {
		gs_err("--output-fd and -o: give one");
		return -EINVAL;
	}
	if (o->max_bytes && o->output_fd < 0) {
		gs_err("--max-bytes: it needs --output-fd");
		return -EINVAL;
	}
	if (o->common.all && gs_record_ranks_wanted(o->common.output)) {
		gs_err("-o DIR/ writes a file per process or rank: not with -a; name a file");
		return -EINVAL;
	}
	if (o->snapshot && !(o->families & GS_FAM_BIT(GS_FAM_TORCH))) {
		gs_err("--memory-snapshot: it needs -e torch-mem");
		return -EINVAL;
	}
	if (o->inject && (!o->gpu || !o->common.nr_pids)) {
		gs_err("--inject: it needs -e gpu and -p PID");
		return -EINVAL;
	}
	/* NVTX reads its variable once, at the first NVTX call: nothing to load later */
	if (o->inject && o->nvtx_named)
		gs_info("NVTX ranges come only from processes started with NVTX_INJECTION64_PATH: "
			"injecting adds GPU activity only");
	/* -e gpu -- CMD: the command inherits CUDA_INJECTION64_PATH; -e nvtx: NVTX's too */
	err = o->gpu && o->common.argv ? gs_record_gpu_setenv() : 0;
	if (err) /* not a usage error (64): the environment names another library, or none is built */
		return err == -EINVAL ? -EIO : err;
	return o->nvtx && o->common.argv ? gs_record_nvtx_setenv(o->nvtx_named) : 0;
}

/* The output file and its parts, and the CPU sampler with -e cpu. 0 or -errno (logged). */
static int open_parts(struct record *r)
{
	struct gs_cpu_sampler_opts sopts;
	int err;

	if (r->opts.output_fd >= 0)
		err = gs_out__open_fd(&r->out, r->opts.output_fd, "the output descriptor",
				      r->opts.output_fd_gz ? GS_OUT_GZIP : GS_OUT_PLAIN);
	else if (gs_record_ranks_wanted(r->opts.common.output))
		err = gs_record_ranks__open(&r->ranks, r->opts.common.output, REORDER_WINDOW_NS)
			      ?: gs_out__open(&r->out, "/dev/null", GS_OUT_PLAIN); /* the sink */
	else
		err = gs_out__open(&r->out, r->opts.common.output, 0);
	if (err)
		return err;
	r->stacks = gs_stack_table__new(gs_tracker__symcache(r->tracker));
	r->names = gs_kernel_names__new(gs_tracker__symcache(r->tracker));
	r->named = gs_addr_map__new();
	r->stats = gs_trace_stats__new();
	/* the document begins here; a failure before the end removes its temporary file */
	r->writer = gs_trace_writer__new(gs_out__file(r->out), REORDER_WINDOW_NS);
	if (r->writer && r->opts.max_bytes)
		gs_trace_writer__watch_size(r->writer, size_capped, r);
	if (r->opts.gpu) {
		r->gpu = gs_record_gpu__new(&(struct gs_record_gpu_emit){ .ctx = r,
									  .begin = gpu_render_begin,
									  .end = gpu_render_end,
									  .output = gpu_output,
									  .row = gpu_row });
		if (r->gpu && r->opts.common.argv)
			gs_record_gpu__default_rank(r->gpu);
	}
	if (r->opts.nvtx)
		r->nvtx = gs_record_nvtx__new(
			&(struct gs_record_nvtx_emit){ .ctx = r,
						       .begin = gpu_render_begin,
						       .end = gpu_render_end,
						       .track = nvtx_track,
						       .name_thread = nvtx_name_thread });
	if (!r->stacks || !r->names || !r->named || !r->stats || !r->writer ||
	    (r->opts.gpu && !r->gpu) || (r->opts.nvtx && !r->nvtx)) {
		gs_err("out of memory");
		return -ENOMEM;
	}
	if (r->opts.cpu) {
		sopts = (struct gs_cpu_sampler_opts){
			.freq_hz = r->hz,
			.records = true,
			.all = r->opts.common.all,
		};
		err = gs_cpu_sampler__open(&r->sampler, r->tracker, &sopts);
		if (err)
			return err;
		r->kallsyms = gs_kallsyms__read("/proc/kallsyms");
		if (!r->kallsyms)
			gs_warn("/proc/kallsyms: %s: kernel frames stay unnamed", strerror(errno));
	}
	return 0;
}

/* Resolves the targets and attaches; --inject then loads the injection library into them. */
static int start_targets(struct record *r)
{
	int err = gs_tracker__start(r->tracker);

	if (!err && r->opts.gpu && !r->opts.inject)
		gs_record_gpu_check_env(r->opts.common.pids, r->opts.common.nr_pids);
	if (err || !r->opts.inject)
		return err;
	err = gs_record_gpu_inject(r->opts.common.pids, r->opts.common.nr_pids);
	gs_tracker__poll(r->tracker, 0); /* the loader's event: the library's probes go in */
	return err;
}

/* Whether a CUDA family had a target to trace; logs the failure when not. */
static bool saw_cuda(const struct record *r)
{
	if (r->opts.families && !gs_tracker__saw_cuda(r->tracker) && !r->opts.common.all) {
		gs_err("no target loaded a CUDA library (libcudart, libcuda or a static cudart)");
		return false;
	}
	return true;
}

/* Once the file is final: the summary (what `gpusnoop stats` prints of the file, too). */
static int print_summary(const struct record *r)
{
	uint64_t dropped = gs_tracker__dropped(r->tracker);

	fprintf(stderr, "gpusnoop record: %" PRIu64 " events in %.1f s, %" PRIu64 " dropped\n",
		r->events, (double)(gs_clock_ns(CLOCK_MONOTONIC) - r->start_mono_ns) / 1e9,
		dropped);
	gs_trace_stats__print_summary(r->stats, stderr);
	if (dropped)
		fprintf(stderr,
			"  WARNING: %" PRIu64 " events were lost: the trace is incomplete\n",
			dropped);
	/* record's own lines: what the trace holds no rows of */
	gs_record_summary__print_torch(gs_trace_stats__record_summary(r->stats), stderr);
	gs_record_gpu__summary(r->gpu, stderr);
	gs_record_nvtx__summary(r->nvtx, stderr, r->opts.nvtx_named);
	return 0;
}

/* --memory-snapshot: whose file is FILE itself (-p PID, -- CMD) */
static pid_t snapshot_target(struct record *r)
{
	return r->opts.common.nr_pids == 1 ? r->opts.common.pids[0] : gs_tracker__child(r->tracker);
}

/*
 * --memory-snapshot: the processes still running, their state at the end (the exited ones
 * wrote theirs). -1: FILE was the target's, written at its exit (or it showed no PyTorch).
 */
static int end_snapshots(struct record *r)
{
	pid_t target = snapshot_target(r);
	pid_t primary = gs_mem_model__torch_proc(&r->mem, target) ? target : -1;

	if (!r->opts.snapshot)
		return 0;
	gs_stack_table__resymbolize(r->stacks);
	return gs_snapshot_files_write(&r->mem, r->opts.snapshot, primary, 0, 0, "end",
				       gs_clock_ns(CLOCK_MONOTONIC));
}

int gs_cmd_record(int argc, char **argv)
{
	struct record r = { .opts = { .output_fd = -1 }, .argc = argc, .argv = argv };
	struct gs_tracker_ops ops = {
		.ctx = &r,
		.mem_alloc = on_alloc,
		.mem_free = on_free,
		.mem_free_ret = on_free_ret,
		.cuda_call = on_cuda_call,
		.cpu_sample = on_cpu_sample,
		.torch_mem = on_torch_mem,
		.torch_oom = on_torch_oom,
		.gpu_event = on_gpu_event,
		.proc_gone = on_proc_gone,
	};
	struct gs_tracker_opts topts;
	int err, status = 1;

	if (parse_events(DEFAULT_EVENTS, &r.opts) ||
	    argp_parse(&record_argp, argc, argv, ARGP_IN_ORDER, NULL, &r.opts))
		return 1;
	err = gs_common_opts__finish(&r.opts.common) ?: check_opts(&r.opts, &r.hz);
	if (err)
		return gs_exit_status(err);
	/* past the daemon's RLIMIT_FSIZE a write fails (EFBIG, the recording too), not the
	 * process: its log lines may go to a file already longer than the cap */
	if (r.opts.max_bytes)
		signal(SIGXFSZ, SIG_IGN);
	/* PyTorch's reserved memory is the caching allocator's cudaMalloc/cudaFree */
	topts = gs_common_opts__tracker(
		&r.opts.common,
		r.opts.families |
			(r.opts.families & GS_FAM_BIT(GS_FAM_TORCH) ? GS_FAM_BIT(GS_FAM_MEM) : 0));
	topts.torch = r.opts.families & GS_FAM_BIT(GS_FAM_TORCH);
	topts.free_returns = true;	       /* every free is a slice with its duration */
	topts.gpu = r.opts.gpu || r.opts.nvtx; /* both come through the injection library */
	/* a rank's file is chosen by its environment, read at its exec: held there, always */
	topts.stop_every_exec = gs_record_ranks_wanted(r.opts.common.output);
	if (gs_tracker__open(&r.tracker, &topts, &ops))
		goto out_free;
	/* after the targets were checked: a bad -p leaves an existing file as it was */
	if (open_parts(&r))
		goto out_free;
	gs_mem_model__init(&r.mem, r.stacks, gs_tracker__symcache(r.tracker),
			   r.opts.families & GS_FAM_BIT(GS_FAM_TORCH));
	if (r.opts.snapshot && gs_mem_model__snapshots(&r.mem, 0))
		goto out_free; /* ENOMEM */
	r.start_mono_ns = gs_clock_ns(CLOCK_MONOTONIC);
	r.start_real_ns = gs_clock_ns(CLOCK_REALTIME);
	if (r.gpu)
		gs_record_gpu__set_clock(r.gpu, (int64_t)(r.start_real_ns - r.start_mono_ns));
	/* from here on the file is always finished, whatever stops the recording */
	err = start_targets(&r);
	if (!err) {
		gs_info("recording%s; Ctrl-C to stop", r.opts.common.all ? " every process" : "");
		err = run_loop(&r);
	}
	write_metadata(&r);
	/* a failed start or recording, or no CUDA user, leaves no file: out_free removes it */
	if (err || !saw_cuda(&r))
		goto out_free;
	/* finished means finished: the file is complete and in place before probes go */
	err = r.ranks ? gs_record_ranks__close(r.ranks) : 0;
	err = gs_out__close(r.out) ?: err ?: end_snapshots(&r);
	r.out = NULL;
	if (err)
		goto out_free;
	status = print_summary(&r);
out_free:
	gs_cpu_sampler__free(r.sampler);
	gs_kallsyms__free(r.kallsyms);
	gs_trace_writer__free(r.writer);
	gs_record_ranks__free(r.ranks);
	for (size_t i = 0; i < r.nr_stack_json; i++)
		free(r.stack_json[i]);
	free(r.stack_json);
	gs_mem_model__release(&r.mem);
	gs_trace_stats__free(r.stats);
	gs_record_gpu__free(r.gpu);
	gs_record_nvtx__free(r.nvtx);
	gs_addr_map__free(r.named);
	gs_kernel_names__free(r.names);
	gs_stack_table__free(r.stacks);
	gs_tracker__free(r.tracker);
	gs_out__abort(r.out); /* only on a failure before the trace began */
	return status;
}
