// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stats.c: `gpusnoop stats TRACE...`: nsys-stats-like tables read back from gpusnoop traces. */
#include <argp.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include "profilers/options.h"
#include "profilers/cmd/subcommands.h"
#include "profilers/cmd/stats_reader.h"
#include "profilers/timeline/rank_files.h"
#include "profilers/timeline/trace_stats.h"
#include "stitch/trace_parse.h"
#include "user/log.h"
#include "user/out_file.h"

#define MAX_INPUTS    256
#define MAX_DIR_FILES 4096
#define READ_CHUNK    (1 << 17)
#define EXIT_DATAERR  65 /* sysexits: a malformed trace */
#define EXIT_NOINPUT  66 /* sysexits: an input that cannot be opened */

struct stats_opts {
	const char *inputs[MAX_INPUTS];
	size_t nr_inputs;
	const char *output;
	enum gs_stats_format format;
	bool summary; /* --summary: record's end-of-run summary alone */
	int verbosity;
};

static const struct argp_option stats_options[] = {
	{ "format", 'f', "text|csv|json", 0, "Output format (default text)", 0 },
	{ "output", 'o', "FILE", 0, "Write the tables to FILE instead of stdout", 0 },
	{ "summary", 's', NULL, 0,
	  "Only record's end-of-run summary (as `gpusnoop record` printed it for the trace)", 0 },
	{ "verbose", 'v', NULL, 0, "More diagnostics", 0 },
	{ 0 },
};

static error_t stats_parse(int key, char *arg, struct argp_state *state)
{
	struct stats_opts *o = state->input;

	switch (key) {
	case 'f':
		if (!strcmp(arg, "text"))
			o->format = GS_STATS_TEXT;
		else if (!strcmp(arg, "csv"))
			o->format = GS_STATS_CSV;
		else if (!strcmp(arg, "json"))
			o->format = GS_STATS_JSON;
		else
			argp_error(state, "unknown format '%s' (text, csv or json)", arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 's':
		o->summary = true;
		break;
	case 'v':
		o->verbosity++;
		break;
	case ARGP_KEY_ARG:
		if (o->nr_inputs == MAX_INPUTS)
			argp_error(state, "more than %d inputs", MAX_INPUTS);
		o->inputs[o->nr_inputs++] = arg;
		break;
	case ARGP_KEY_END:
		if (!o->nr_inputs)
			argp_error(state, "no input trace");
		if (o->summary && o->format != GS_STATS_TEXT)
			argp_error(state, "--summary is text");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char stats_doc[] =
	"Summarize gpusnoop traces as `nsys stats` does: CUDA API calls by count, total, mean, "
	"p50 and p99 time; GPU kernels by device time; copies by kind and size; memory "
	"operations; NVTX ranges by time; each per process (or device). The numbers are those "
	"of the summary `gpusnoop record` printed at the end of the recording: both are counted "
	"from the trace's rows by the same code.\v"
	"TRACE is a gpusnoop trace (.json or .json.gz), a directory of them (record -o DIR/: "
	"one file per rank, and those of processes without a rank in DIR/no-rank/), or a stitched "
	"trace, of which the gpusnoop rows are counted (rows "
	"with Kineto's \"External id\" or \"cbid\" are PyTorch's own). Several are summed. A "
	"malformed trace is one line of error and exit status 65; an unreadable one, 66.\n\n"
	"EXAMPLES:\n"
	"  gpusnoop stats trace.json.gz\n"
	"  gpusnoop stats --format csv ranks/ > stats.csv\n"
	"  gpusnoop stats -f json job.json | jq '.tables.gpu_kernels.rows[0]'";

static const struct argp_child stats_children[] = {
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const struct argp stats_argp = {
	stats_options, stats_parse, "TRACE...", stats_doc, stats_children, NULL, NULL,
};

/* Reads one trace into the engine. Returns 0 or the exit status (logged, one line). */
static int read_trace(struct gs_stats_reader *rd, const char *path)
{
	struct gs_trace_parse_ops ops = { .ctx = rd, .event = gs_stats_reader_event };
	struct gs_trace_parser *p = gs_trace_parser__new(&ops);
	char *buf = malloc(READ_CHUNK);
	gzFile gz = NULL;
	int n = 0, err = 0, status = 0, errnum;

	if (!p || !buf) {
		gs_err("out of memory");
		status = 1;
		goto out;
	}
	gz = gzopen(path, "rb");
	if (!gz) {
		gs_err("%s: %s", path, errno ? strerror(errno) : "cannot open");
		status = EXIT_NOINPUT;
		goto out;
	}
	while (!err && (n = gzread(gz, buf, READ_CHUNK)) > 0 && !gs_stop_requested) {
		if (!gs_trace_parser__bytes(p) && gs_is_perfetto_data(buf, (size_t)n)) {
			gs_err("%s: a Perfetto protobuf trace: stats reads JSON only (record it "
			       "with --format json)",
			       path);
			status = EXIT_DATAERR;
			goto out;
		}
		err = gs_trace_parser__feed(p, buf, (size_t)n);
	}
	if (gs_stop_requested) {
		gs_err("%s: interrupted", path);
		status = 1;
		goto out;
	}
	if (n < 0) {
		const char *msg = gzerror(gz, &errnum);

		gs_err("%s: %s", path, errnum == Z_ERRNO ? strerror(errno) : msg);
		status = errnum == Z_ERRNO ? 1 : EXIT_DATAERR; /* a broken gzip stream is data */
		goto out;
	}
	err = err ?: gs_trace_parser__finish(p);
	if (err == -EINVAL) {
		gs_err("%s: not a valid trace: %s at byte %" PRIu64, path,
		       gs_trace_parser__error(p), gs_trace_parser__error_offset(p));
		status = EXIT_DATAERR;
	} else if (err) {
		gs_err("%s: %s", path, strerror(-err));
		status = 1;
	}
out:
	if (gz)
		gzclose(gz);
	free(buf);
	gs_trace_parser__free(p);
	return status;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_trace_name(const char *name)
{
	size_t n = strlen(name);

	return name[0] != '.' && ((n > 5 && !strcmp(name + n - 5, ".json")) ||
				  (n > 8 && !strcmp(name + n - 8, ".json.gz")));
}

/* A directory (record -o DIR/): its *.json and *.json.gz files, in name order. */
static int read_dir(struct gs_stats_reader *rd, const char *path)
{
	DIR *d = opendir(path);
	char **names = NULL, full[4096];
	size_t nr = 0;
	struct dirent *de;
	int status = 0;

	if (!d) {
		gs_err("%s: %s", path, strerror(errno));
		return EXIT_NOINPUT;
	}
	names = calloc(MAX_DIR_FILES, sizeof(*names));
	while (names && (de = readdir(d)) && nr < MAX_DIR_FILES)
		if (is_trace_name(de->d_name) && (names[nr] = strdup(de->d_name)))
			nr++;
	closedir(d);
	if (!names) {
		gs_err("out of memory");
		return 1;
	}
	qsort(names, nr, sizeof(*names), cmp_str);
	if (!nr) {
		gs_err("%s: no *.json or *.json.gz trace in the directory", path);
		status = EXIT_NOINPUT;
	}
	for (size_t i = 0; i < nr && !status; i++) {
		if ((size_t)snprintf(full, sizeof(full), "%s/%s", path, names[i]) >= sizeof(full)) {
			gs_err("%s/%s: name too long", path, names[i]);
			status = EXIT_NOINPUT;
		} else {
			status = read_trace(rd, full);
		}
	}
	for (size_t i = 0; i < nr; i++)
		free(names[i]);
	free(names);
	return status;
}

static int read_input(struct gs_stats_reader *rd, const char *path)
{
	char no_rank[4096];
	struct stat st;
	int status;

	if (stat(path, &st) || !S_ISDIR(st.st_mode))
		return read_trace(rd, path);
	status = read_dir(rd, path);
	if (status || (size_t)snprintf(no_rank, sizeof(no_rank), "%s/%s", path,
				       GS_RANK_FILES_NO_RANK_DIR) >= sizeof(no_rank))
		return status;
	/* record -o DIR/ keeps rankless processes' files apart from the ranks' (rank_files.h) */
	if (!lstat(no_rank, &st) && S_ISDIR(st.st_mode))
		status = read_dir(rd, no_rank);
	return status;
}

static void on_stop_signal(int sig)
{
	gs_stop_requested = sig;
}

int gs_cmd_stats(int argc, char **argv)
{
	struct stats_opts o = { .format = GS_STATS_TEXT };
	struct sigaction sa = { .sa_handler = on_stop_signal };
	struct gs_stats_reader rd = { 0 };
	struct gs_out *out = NULL;
	int status = 1, err;

	if (argp_parse(&stats_argp, argc, argv, 0, NULL, &o))
		return GS_EXIT_USAGE;
	gs_log_set_level(o.verbosity ? GS_LOG_DEBUG : GS_LOG_INFO);
	signal(SIGPIPE, SIG_IGN); /* a closed pipe is a write error, reported */
	/* Ctrl-C stops the reading: the unfinished output is removed, not left behind */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rd.stats = gs_trace_stats__new();
	if (!rd.stats) {
		gs_err("out of memory");
		return 1;
	}
	/* before the reading, which may take long: a bad -o fails at once */
	if (gs_out__open(&out, o.output, GS_OUT_PLAIN))
		goto out_free;
	for (size_t i = 0; i < o.nr_inputs; i++) {
		status = read_input(&rd, o.inputs[i]);
		if (status)
			goto out_free; /* out_free removes the unfinished output */
	}
	status = 1;
	if (o.summary) {
		gs_trace_stats__print_summary(rd.stats, gs_out__file(out));
		err = 0;
	} else {
		err = gs_trace_stats__print(rd.stats, gs_out__file(out), o.format);
	}
	if (err) {
		gs_out__fail(out, err);
		out = NULL;
		goto out_free;
	}
	err = gs_out__close(out);
	out = NULL;
	status = err ? 1 : 0;
out_free:
	gs_out__abort(out);
	free(rd.obj);
	gs_trace_stats__free(rd.stats);
	return status;
}
