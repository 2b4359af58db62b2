// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record_options.c: `gpusnoop record`'s options: the table, --help, parsing and the checks. */
#include <argp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/cmd/record_inject.h"
#include "profilers/cmd/record_options.h"
#include "profilers/timeline/rank_files.h"
#include "profilers/cpu_sampler.h"
#include "profilers/cuda/api.h"
#include "user/log.h"
#include "user/perfetto_json.h"

enum { OPT_OUTPUT_FD = 0x3000, OPT_INJECT, OPT_MAX_BYTES, OPT_MEMORY_SNAPSHOT, OPT_FORMAT };

static const struct argp_option record_options[] = {
	{ "events", 'e', "EVENTS", 0, "What to record: a comma list of the events below", 0 },
	{ "freq", 'F', "HZ", 0, "CPU samples per second on each CPU with -e cpu (default 99)", 0 },
	{ "format", OPT_FORMAT, "FORMAT", 0,
	  "json (Chrome Trace Event JSON, the default) or perfetto (Perfetto's protobuf trace, "
	  "the default for -o *.pftrace or *.perfetto-trace)",
	  0 },
	{ "inject", OPT_INJECT, NULL, 0,
	  "With -e gpu -p: load the CUPTI injection library into processes started without it "
	  "(ptrace; risks in gpusnoop-record(8))",
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

/*
 * -e: the CUDA families, and "cpu" for CPU samples. Returns 0 or -EINVAL, the first name
 * that is not an event in bad (or the whole list, too long).
 */
static int parse_events(const char *arg, struct record_opts *o, char *bad, size_t bad_len)
{
	char *list = strdup(arg), *tok, *save = NULL, cuda[256] = "";
	uint32_t one;
	size_t len = 0;
	int err = 0;

	if (!list)
		return -ENOMEM;
	snprintf(bad, bad_len, "%s", arg);
	o->cpu = o->gpu = o->nvtx = o->nvtx_named = false;
	for (tok = strtok_r(list, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "cpu"))
			o->cpu = true;
		else if (!strcmp(tok, "gpu"))
			o->gpu = o->nvtx = true;
		else if (!strcmp(tok, "nvtx"))
			o->nvtx = o->nvtx_named = true;
		else if (gs_parse_event_families(tok, &one)) {
			err = -EINVAL;
			snprintf(bad, bad_len, "%s", tok);
		} else if (len + strlen(tok) + 2 < sizeof(cuda))
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
	char bad[64];

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = &o->common;
		state->child_inputs[1] = &o->common;
		state->child_inputs[2] = &o->common;
		break;
	case 'e':
		if (parse_events(arg, o, bad, sizeof(bad)))
			argp_error(state, "unknown event '%s' (%s, cpu, gpu, nvtx)", bad,
				   GS_EVENT_FAMILY_NAMES);
		break;
	case 'F':
		o->freq = arg;
		break;
	case OPT_INJECT:
		o->inject = true;
		break;
	case OPT_FORMAT:
		if (strcmp(arg, "json") && strcmp(arg, "perfetto"))
			argp_error(state, "unknown format '%s' (json, perfetto)", arg);
		o->format = arg;
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
	"timeline, Chrome Trace Event JSON or Perfetto's own format (open it in ui.perfetto.dev).\v"
	"The trace goes to -o FILE (gzip-compressed when FILE ends in .gz), else stdout. It is "
	"complete when -d expires, on Ctrl-C or SIGTERM, or when the last target exits. -o DIR/ "
	"(or an existing directory) writes one file per rank, DIR/rank-R.json, or per process "
	"without a rank, DIR/pid-P.json (DIR/no-rank/pid-P.json beside ranks), as Holistic Trace "
	"Analysis loads them.\n\n"
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
int gs_record_opts__check(struct record_opts *o, unsigned int *hz)
{
	int err;

	*hz = GS_CPU_DEFAULT_HZ;
	o->perfetto =
		o->format ? !strcmp(o->format, "perfetto") : gs_is_perfetto_path(o->common.output);
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
	if (o->common.all && gs_rank_files_wanted(o->common.output)) {
		gs_err("-o DIR/ writes a file per process or rank: not with -a; name a file");
		return -EINVAL;
	}
	if (o->perfetto && gs_rank_files_wanted(o->common.output)) {
		gs_err("--format perfetto: one file, not -o DIR/");
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

int gs_record_opts__parse(struct record_opts *o, int argc, char **argv)
{
	char bad[64];

	return parse_events(DEFAULT_EVENTS, o, bad, sizeof(bad)) ||
	       argp_parse(&record_argp, argc, argv, ARGP_IN_ORDER, NULL, o);
}
