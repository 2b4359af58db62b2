// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stitch.c: `gpusnoop stitch IN... -o OUT`, the thin CLI over stitch/merge.c. */
#include <argp.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "profilers/options.h"
#include "profilers/cmd/subcommands.h"
#include "stitch/merge.h"
#include "stitch/trace_parse.h"
#include "user/log.h"
#include "user/out_file.h"

#define MAX_INPUTS 256

struct stitch_opts {
	const char *inputs[MAX_INPUTS];
	size_t nr_inputs;
	/* --kineto-host/--kineto-offset as they stood when each input was named */
	const char *kineto_host[MAX_INPUTS];
	int64_t kineto_offset_ns[MAX_INPUTS];
	bool kineto_set[MAX_INPUTS]; /* one of them came before this input */
	const char *cur_host;
	int64_t cur_offset_ns;
	bool cur_set;
	const char *output;
	struct gs_stitch_opts merge;
	int verbosity;
};

/* an input file, plain or gzip (zlib reads both) */
struct in_file {
	const char *path;
	gzFile gz;
	char why[128];
};

static long in_read(void *ctx, void *buf, size_t len)
{
	struct in_file *f = ctx;
	int errnum;
	int n = gzread(f->gz, buf, (unsigned int)len);
	const char *msg;

	if (n >= 0)
		return n;
	msg = gzerror(f->gz, &errnum);
	if (errnum == Z_ERRNO) {
		snprintf(f->why, sizeof(f->why), "%s", strerror(errno));
		return errno ? -errno : -EIO;
	}
	snprintf(f->why, sizeof(f->why), "gzip: %s", msg);
	return -EIO;
}

static int in_rewind(void *ctx)
{
	struct in_file *f = ctx;

	return gzrewind(f->gz) ? -EIO : 0;
}

static const char *in_read_error(void *ctx)
{
	struct in_file *f = ctx;

	return f->why[0] ? f->why : NULL;
}

static void on_stop_signal(int sig)
{
	gs_stop_requested = sig;
}

static const struct argp_option stitch_options[] = {
	{ "output", 'o', "FILE", 0, "Merged trace (gzip when FILE ends in .gz; default stdout)",
	  0 },
	{ "window", 'w', "SECONDS", 0,
	  "Reorder window (default 2): events of one input later than this are counted late", 0 },
	{ "kineto-offset", 'k', "NS", 0,
	  "Nanoseconds added to the timestamps of the Kineto traces named after it (default 0: "
	  "Kineto is wall-clock)",
	  0 },
	{ "kineto-host", 'H', "HOST", 0,
	  "Host of the Kineto traces named after it (default: the first gpusnoop input's)", 0 },
	{ "verbose", 'v', NULL, 0, "More diagnostics", 0 },
	{ 0 },
};

static error_t stitch_parse(int key, char *arg, struct argp_state *state)
{
	struct stitch_opts *o = state->input;
	double secs;
	int64_t ns;

	switch (key) {
	case 'o':
		o->output = arg;
		break;
	case 'w':
		if (gs_parse_seconds(arg, &secs) || secs > 86400)
			argp_error(state, "invalid window '%s' (seconds, at most a day)", arg);
		o->merge.window_ns = (uint64_t)(secs * 1e9);
		break;
	case 'k':
		if (gs_parse_i64(arg, strlen(arg), &ns))
			argp_error(state, "invalid --kineto-offset '%s' (integer nanoseconds)",
				   arg);
		o->cur_offset_ns = ns;
		o->cur_set = true;
		break;
	case 'H':
		o->cur_host = arg;
		o->cur_set = true;
		break;
	case 'v':
		o->verbosity++;
		break;
	case ARGP_KEY_ARG:
		if (o->nr_inputs == MAX_INPUTS)
			argp_error(state, "more than %d inputs", MAX_INPUTS);
		o->kineto_host[o->nr_inputs] = o->cur_host;
		o->kineto_offset_ns[o->nr_inputs] = o->cur_offset_ns;
		o->kineto_set[o->nr_inputs] = o->cur_set;
		o->inputs[o->nr_inputs++] = arg;
		break;
	case ARGP_KEY_END:
		if (!o->nr_inputs)
			argp_error(state, "no input trace");
		/* inputs named before any Kineto option take the last ones given */
		for (size_t i = 0; i < o->nr_inputs; i++) {
			if (o->kineto_set[i])
				continue;
			o->kineto_host[i] = o->cur_host;
			o->kineto_offset_ns[i] = o->cur_offset_ns;
		}
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char stitch_doc[] =
	"Merge gpusnoop traces (several processes or hosts) and PyTorch profiler (Kineto) traces "
	"into one Chrome Trace Event JSON timeline (open it in ui.perfetto.dev).\v"
	"Inputs may be gzip-compressed. Clocks are aligned through each gpusnoop trace's "
	"recorded monotonic_to_realtime_ns; Kineto timestamps are wall-clock microseconds "
	"(plus baseTimeNanoseconds when present). The output clock is the first gpusnoop "
	"input's CLOCK_MONOTONIC. The same pid on two hosts becomes two processes, named with "
	"their host. --kineto-offset and --kineto-host apply to the Kineto traces named after "
	"them (given after every input, to all).\n\n"
	"EXAMPLES:\n"
	"  gpusnoop stitch a.json.gz b.json.gz -o ab.json.gz  # two processes or hosts\n"
	"  gpusnoop stitch t.json.gz train.pt.trace.json -o all.json.gz  # with Kineto\n"
	"  gpusnoop stitch t.json k.json --kineto-offset -1500000 -o all.json\n"
	"  gpusnoop stitch a.json b.json -H a rank0.json -H b rank1.json -o job.json";

static const struct argp_child stitch_children[] = {
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const struct argp stitch_argp = {
	stitch_options, stitch_parse, "IN... [-o OUT]", stitch_doc, stitch_children, NULL, NULL,
};

int gs_cmd_stitch(int argc, char **argv)
{
	struct stitch_opts o = { .merge = {
					 .window_ns = GS_STITCH_DEFAULT_WINDOW_NS,
					 .same_boot_ns = GS_STITCH_DEFAULT_SAME_BOOT_NS,
					 .stop = &gs_stop_requested,
					 .argc = argc,
					 .argv = argv,
				 } };
	struct sigaction sa = { .sa_handler = on_stop_signal };
	struct gs_stitch_input in[MAX_INPUTS];
	struct in_file files[MAX_INPUTS];
	struct gs_stitch_stats stats;
	struct gs_out *out = NULL;
	char err[512];
	size_t opened = 0;
	int ret, status = 1;

	if (argp_parse(&stitch_argp, argc, argv, ARGP_IN_ORDER, NULL, &o))
		return 1;
	gs_log_set_level(o.verbosity ? GS_LOG_DEBUG : GS_LOG_INFO);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	for (; opened < o.nr_inputs; opened++) {
		struct in_file *f = &files[opened];

		memset(f, 0, sizeof(*f));
		f->path = o.inputs[opened];
		f->gz = gzopen(f->path, "rb");
		if (!f->gz) {
			gs_err("%s: %s", f->path, errno ? strerror(errno) : "cannot open");
			goto out_close;
		}
		gzbuffer(f->gz, 1 << 17);
		in[opened] = (struct gs_stitch_input){
			.name = f->path,
			.ctx = f,
			.read = in_read,
			.rewind = in_rewind,
			.read_error = in_read_error,
			.kineto_host = o.kineto_host[opened],
			.kineto_offset_ns = o.kineto_offset_ns[opened],
		};
	}
	/* a temporary beside the output, renamed over it only when the merge completed */
	if (gs_out__open(&out, o.output, 0))
		goto out_close;
	ret = gs_stitch(in, o.nr_inputs, &o.merge, gs_out__file(out), &stats, err, sizeof(err));
	if (ret) {
		/* nothing half-written is left looking like a trace */
		if (gs_out__error(out)) { /* a full disk: said with its errno, not the merge's */
			gs_out__fail(out, ret);
		} else {
			gs_err("%s", err);
			gs_out__abort(out);
		}
		goto out_close;
	}
	if (stats.warning[0])
		gs_warn("%s", stats.warning);
	if (stats.late)
		gs_warn("%" PRIu64 " events came later than the %g s window: written out of order "
			"(--window)",
			stats.late, (double)o.merge.window_ns / 1e9);
	ret = gs_out__close(out);
	if (!ret)
		gs_info("stitched %zu input%s from %zu host%s: %" PRIu64 " events, %" PRIu64
			" dropped at recording, %" PRIu64 " late",
			o.nr_inputs, o.nr_inputs == 1 ? "" : "s", stats.domains,
			stats.domains == 1 ? "" : "s", stats.events, stats.dropped, stats.late);
	status = ret ? 1 : 0;
out_close:
	for (size_t i = 0; i < opened; i++)
		gzclose(files[i].gz);
	return status;
}
