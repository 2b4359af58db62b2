// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record.c: `gpusnoop record`, CUDA calls of live processes as one Chrome/Perfetto timeline. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include "profilers/cuda_api.h"
#include "profilers/cuda_call.h"
#include "profilers/kernel_names.h"
#include "profilers/mem_accounting.h"
#include "profilers/options.h"
#include "profilers/record_summary.h"
#include "profilers/subcommands.h"
#include "profilers/tracker.h"
#include "stitch/chrome_trace.h"
#include "user/addr_map.h"
#include "user/clock.h"
#include "user/log.h"
#include "user/out_file.h"
#include "user/proc_info.h"
#include "user/stack_table.h"

#define POLL_MS		100
#define STATUS_EVERY_NS 1000000000ULL
#define MEMORY_COUNTER	"CUDA memory"

struct record_opts {
	struct gs_common_opts common;
	uint32_t families;
};

struct record {
	struct record_opts opts;
	int argc;
	char **argv;
	struct gs_tracker *tracker;
	struct gs_stack_table *stacks;
	struct gs_kernel_names *names;
	struct gs_mem_accounting mem;
	struct gs_addr_map *named; /* (pid, tid) already given an M event; tid 0: the process */
	struct gs_record_summary *summary;
	char **stack_json; /* by stack id: the JSON array of its frames, made once */
	size_t nr_stack_json;
	struct gs_chrome_trace trace;
	FILE *out;
	uint64_t start_mono_ns, start_real_ns;
	uint64_t events;
	int error;
};

static void fatal(struct record *r, int err)
{
	if (!r->error) {
		gs_err("recording: %s", strerror(-err));
		r->error = err;
	}
}

/* Names the process and the thread track the first time either appears. */
static void name_tracks(struct record *r, pid_t pid, pid_t tid)
{
	uint64_t seen;
	char comm[32];

	if (!gs_addr_map__get(r->named, pid, 0, &seen)) {
		gs_chrome_trace__process_name(&r->trace, pid, gs_tracker__comm(r->tracker, pid));
		gs_addr_map__set(r->named, pid, 0, 1);
	}
	if (!gs_addr_map__get(r->named, pid, (uint64_t)tid, &seen)) {
		gs_read_comm(pid, tid, comm, sizeof(comm));
		gs_chrome_trace__thread_name(&r->trace, pid, tid, comm);
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

	name_tracks(r, (pid_t)hdr->pid, (pid_t)hdr->tid);
	j = gs_chrome_trace__event(&r->trace, "X", gs_cuda_api_name(api_id), category(api),
				   hdr->pid, hdr->tid, start);
	gs_chrome_trace_format_us(hdr->ts_ns - start, dur, sizeof(dur));
	gs_json__raw(j, "dur", dur);
	gs_json__begin_object(j, "args");
	return j;
}

static void hex_arg(struct gs_json *j, const char *key, uint64_t value)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, value);
	gs_json__string(j, key, buf);
}

static void error_args(struct gs_json *j, uint16_t api_id, int32_t ret)
{
	const struct gs_cuda_api *api = gs_cuda_api_get(api_id);

	if (!ret)
		return;
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
		const struct gs_frame *f = &s->frames[i];

		if (f->symbol)
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64 " (%s)", f->symbol, f->offset,
				 f->module ? f->module : "?");
		else if (f->module)
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, f->module, f->offset);
		else
			snprintf(buf, sizeof(buf), "0x%" PRIx64, f->address);
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
	gs_chrome_trace__end_event(&r->trace);
	r->events++;
}

static void memory_counter(struct record *r, pid_t pid, uint64_t ts_ns)
{
	struct gs_mem_proc *p = gs_mem_accounting__find(&r->mem, pid);

	if (p)
		gs_chrome_trace__counter(&r->trace, pid, MEMORY_COUNTER, ts_ns, "bytes",
					 gs_alloc_table__bytes(p->allocs));
}

static void on_alloc(void *ctx, const struct gs_mem_alloc *e)
{
	struct record *r = ctx;
	struct gs_json *j;
	int err = gs_mem_accounting__alloc(&r->mem, e, NULL);

	if (err) {
		fatal(r, err);
		return;
	}
	j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	gs_json__u64(j, "bytes", e->size);
	if (!e->ret)
		hex_arg(j, "ptr", e->ptr);
	error_args(j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
	if (!e->ret)
		memory_counter(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

/* at entry, where the memory is given back: the slice comes with the return */
static void on_free(void *ctx, const struct gs_mem_free *e)
{
	struct record *r = ctx;

	gs_mem_accounting__free(&r->mem, e);
	if (e->ptr)
		memory_counter(r, (pid_t)e->hdr.pid, e->hdr.ts_ns);
}

static void on_free_ret(void *ctx, const struct gs_mem_free_ret *e)
{
	struct record *r = ctx;
	struct gs_json *j;

	gs_mem_accounting__free_ret(&r->mem, e);
	j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	hex_arg(j, "ptr", e->ptr);
	error_args(j, e->api, e->ret);
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
		gs_record_summary__launch(r->summary, kernel);
		dims_arg(j, "grid", l.grid);
		dims_arg(j, "block", l.block);
		gs_json__u64(j, "shared memory", l.shared_mem);
	}
	hex_arg(j, "stream", l.stream);
	error_args(j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
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
	error_args(j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
	gs_record_summary__sync(r->summary, (pid_t)e->hdr.pid,
				gs_tracker__comm(r->tracker, (pid_t)e->hdr.pid),
				e->hdr.ts_ns - e->entry_ts_ns);
}

static void record_copy(struct record *r, const struct gs_cuda_api *api,
			const struct gs_cuda_call *e)
{
	struct gs_json *j = begin_slice(r, &e->hdr, e->api, e->entry_ts_ns);
	struct gs_copy c;

	gs_decode_copy(api, e, &c);
	gs_json__u64(j, "bytes", c.bytes);
	gs_json__string(j, "kind", gs_copy_kind_name(c.kind));
	if (c.has_stream)
		hex_arg(j, "stream", c.stream);
	error_args(j, e->api, e->ret);
	stack_arg(r, j, (pid_t)e->hdr.pid, e->frames, e->nr_frames);
	end_slice(r, j);
	if (!e->ret)
		gs_record_summary__copy(r->summary, c.kind, c.bytes);
}

static void learn_name(struct record *r, const struct gs_cuda_api *api,
		       const struct gs_cuda_call *e)
{
	pid_t pid = (pid_t)e->hdr.pid;

	switch (api->shape) {
	case GS_SHAPE_REGISTER_FUNCTION: /* (handle, hostFun, deviceFun, deviceName, ...) */
		gs_kernel_names__add_registration(r->names, pid, e->args[1], e->args[3]);
		break;
	case GS_SHAPE_GET_KERNEL: /* (cudaKernel_t *out, hostFun) */
		if (!e->ret)
			gs_kernel_names__add_handle(r->names, pid, e->out, e->args[1]);
		break;
	case GS_SHAPE_GET_FUNCTION: /* (CUfunction *out, module, name) */
		if (!e->ret)
			gs_kernel_names__add_function(r->names, pid, e->out, e->str);
		break;
	default:
		break;
	}
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
	default:
		break;
	}
}

static void on_proc_gone(void *ctx, pid_t pid, bool exec)
{
	struct record *r = ctx;
	struct gs_mem_proc *p = gs_mem_accounting__find(&r->mem, pid);

	gs_kernel_names__forget(r->names, pid);
	if (p && exec) {
		gs_alloc_table__clear(p->allocs);
		memory_counter(r, pid, gs_clock_ns(CLOCK_MONOTONIC));
	} else if (p) {
		gs_mem_accounting__remove(&r->mem, p);
	}
	/* a new image may name its threads anew */
	gs_addr_map__forget_pid(r->named, pid, NULL);
}

static void write_metadata(struct record *r)
{
	struct gs_json *j = gs_chrome_trace__metadata(&r->trace);
	uint64_t stats[GS_STAT__MAX];
	char stamp[64];
	struct utsname u;
	struct tm tm;
	time_t secs = (time_t)(r->start_real_ns / 1000000000ULL);

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
	for (int i = 0; i < r->argc; i++)
		gs_json__string(j, NULL, r->argv[i]);
	gs_json__end_array(j);
	gs_json__u64(j, "events", r->events);
	gs_json__u64(j, "dropped_events",
		     stats[GS_STAT_RINGBUF_FULL] + stats[GS_STAT_INFLIGHT_FULL]);
	gs_json__begin_object(j, "lost");
	gs_json__u64(j, "ringbuf_full", stats[GS_STAT_RINGBUF_FULL]);
	gs_json__u64(j, "inflight_full", stats[GS_STAT_INFLIGHT_FULL]);
	gs_json__u64(j, "stack_failed", stats[GS_STAT_STACK_FAILED]);
	gs_json__u64(j, "user_read_failed", stats[GS_STAT_USER_READ_FAILED]);
	gs_json__end_object(j);
	gs_chrome_trace__finish(&r->trace);
}

/* A live status line, only for a person watching a terminal. */
static void show_status(struct record *r, uint64_t now, uint64_t *last_ns, uint64_t *last_events)
{
	double secs = (double)(now - *last_ns) / 1e9;

	if (!isatty(STDERR_FILENO) || now - *last_ns < STATUS_EVERY_NS)
		return;
	fprintf(stderr, "\rrecording: %.0f events/s, %" PRIu64 " dropped   ",
		(double)(r->events - *last_events) / secs, gs_tracker__dropped(r->tracker));
	*last_ns = now;
	*last_events = r->events;
}

static int run_loop(struct record *r)
{
	uint64_t duration_ns = (uint64_t)(r->opts.common.duration_s * 1e9);
	uint64_t last_status = r->start_mono_ns, last_events = 0;
	int err = 0;

	while (!gs_stop_requested && !r->error) {
		uint64_t now;
		int n = gs_tracker__poll(r->tracker, POLL_MS);

		if (n < 0) {
			gs_err("reading events: %s", strerror(-n));
			err = n;
			break;
		}
		if (gs_tracker__done(r->tracker))
			break;
		now = gs_clock_ns(CLOCK_MONOTONIC);
		if (duration_ns && now - r->start_mono_ns >= duration_ns)
			break;
		show_status(r, now, &last_status, &last_events);
	}
	if (isatty(STDERR_FILENO))
		fputs("\r\033[K", stderr);
	gs_tracker__poll(r->tracker, 0); /* what arrived before the stop */
	return err ? err : r->error;
}

static const struct argp_option record_options[] = {
	{ "events", 'e', "EVENTS", 0, "Comma list of " GS_EVENT_FAMILY_NAMES " (default: all)", 0 },
	{ 0 },
};

static error_t record_parse(int key, char *arg, struct argp_state *state)
{
	struct record_opts *o = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		break;
	case 'e':
		if (gs_parse_event_families(arg, &o->families))
			argp_error(state, "unknown events '%s' (%s)", arg, GS_EVENT_FAMILY_NAMES);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp_child record_children[] = {
	{ &gs_common_argp, 0, "Targets and output:", 0 },
	{ 0 },
};

static const char record_doc[] =
	"Record CUDA launches, synchronizations, copies and allocations of live processes as a "
	"Chrome Trace Event JSON timeline (open it in ui.perfetto.dev).\v"
	"The trace goes to -o FILE (gzip-compressed when FILE ends in .gz), else stdout. It is "
	"complete when -d expires, on Ctrl-C or SIGTERM, or when the last target exits.\n\n"
	"EXAMPLES:\n"
	"  gpusnoop record -p 1234 -d 10 -o trace.json.gz    # 10 s of pid 1234\n"
	"  gpusnoop record -e cuda-launch,cuda-sync -o t.json -- ./train\n"
	"  gpusnoop record -a -d 5 -o all.json.gz              # every CUDA process";

static const struct argp record_argp = {
	record_options, record_parse,	 "[-p PID ... | -a | -- CMD ARGS]",
	record_doc,	record_children, NULL,
	NULL,
};

int gs_cmd_record(int argc, char **argv)
{
	struct record r = { .argc = argc, .argv = argv };
	struct gs_tracker_ops ops = {
		.ctx = &r,
		.mem_alloc = on_alloc,
		.mem_free = on_free,
		.mem_free_ret = on_free_ret,
		.cuda_call = on_cuda_call,
		.proc_gone = on_proc_gone,
	};
	struct gs_tracker_opts topts;
	int err, status = 1;

	r.opts.families = GS_FAM_BIT(GS_FAM_MEM) | GS_FAM_BIT(GS_FAM_LAUNCH) |
			  GS_FAM_BIT(GS_FAM_NAMES) | GS_FAM_BIT(GS_FAM_SYNC) |
			  GS_FAM_BIT(GS_FAM_COPY);
	if (argp_parse(&record_argp, argc, argv, ARGP_IN_ORDER, NULL, &r.opts))
		return 1;
	if (gs_common_opts__finish(&r.opts.common))
		return 1;
	r.out = gs_out_open(r.opts.common.output);
	if (!r.out) {
		gs_err("%s: %s", r.opts.common.output, strerror(errno));
		return 1;
	}
	topts = gs_common_opts__tracker(&r.opts.common, r.opts.families);
	topts.free_returns = true; /* every free is a slice with its duration */
	if (gs_tracker__open(&r.tracker, &topts, &ops))
		goto out_close;
	r.stacks = gs_stack_table__new(gs_tracker__symcache(r.tracker));
	r.names = gs_kernel_names__new(gs_tracker__symcache(r.tracker));
	r.named = gs_addr_map__new();
	r.summary = gs_record_summary__new();
	if (!r.stacks || !r.names || !r.named || !r.summary) {
		gs_err("out of memory");
		goto out_free;
	}
	gs_mem_accounting__init(&r.mem, r.stacks);
	r.start_mono_ns = gs_clock_ns(CLOCK_MONOTONIC);
	r.start_real_ns = gs_clock_ns(CLOCK_REALTIME);
	/* from here on the file is always finished, whatever stops the recording */
	gs_chrome_trace__begin(&r.trace, r.out);
	err = gs_tracker__start(r.tracker);
	if (!err) {
		gs_info("recording%s; Ctrl-C to stop", r.opts.common.all ? " every process" : "");
		err = run_loop(&r);
	}
	write_metadata(&r);
	status = err ? 1 : 0;
	gs_record_summary__print(r.summary, stderr, r.events, gs_tracker__dropped(r.tracker),
				 (double)(gs_clock_ns(CLOCK_MONOTONIC) - r.start_mono_ns) / 1e9);
	if (!err && !gs_tracker__saw_cuda(r.tracker) && !r.opts.common.all) {
		gs_err("no target loaded a CUDA library (libcudart, libcuda or a static cudart)");
		status = 1;
	}

out_free:
	for (size_t i = 0; i < r.nr_stack_json; i++)
		free(r.stack_json[i]);
	free(r.stack_json);
	gs_mem_accounting__release(&r.mem);
	gs_record_summary__free(r.summary);
	gs_addr_map__free(r.named);
	gs_kernel_names__free(r.names);
	gs_stack_table__free(r.stacks);
	gs_tracker__free(r.tracker);
out_close:
	err = gs_out_close(r.out);
	if (err) {
		gs_err("writing %s: %s", r.opts.common.output ? r.opts.common.output : "stdout",
		       strerror(-err));
		status = 1;
	}
	return status;
}
