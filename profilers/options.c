// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* options.c: -p/-a/-- CMD, -d, -o, -v, --ringbuf shared by every subcommand; --stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/options.h"
#include "user/log.h"

enum {
	OPT_RINGBUF = 0x1000,
	OPT_STACKS,
	OPT_STACK_SAMPLE,
	OPT_NO_PYTHON,
	OPT_CHILDREN,
	OPT_NO_CHILDREN,
	OPT_COMM,
	OPT_CGROUP,
};

/*
 * --stacks dwarf sends a 16 KiB stack slice with each record: 8 MiB would hold only ~500
 * of them while userspace unwinds, so its default ring buffer is larger.
 */
#define DWARF_RINGBUF_BYTES (32UL << 20)

static const struct argp_option options[] = {
	{ "pid", 'p', "PID", 0,
	  "Trace these processes (PID[,PID...], repeatable); only the processes listed, unless "
	  "--children",
	  0 },
	{ "children", OPT_CHILDREN, NULL, 0,
	  "With -p: also the processes' descendants, those running and those started later", 0 },
	{ "no-children", OPT_NO_CHILDREN, NULL, 0,
	  "With -- CMD: the command only, not the processes it starts (followed by default)", 0 },
	{ "all", 'a', NULL, 0, "Trace every process, including ones started later", 0 },
	{ "duration", 'd', "SECS", 0, "Stop after SECS seconds (default 0: no limit)", 0 },
	{ "output", 'o', "FILE", 0, "Write output to FILE instead of stdout", 0 },
	{ "verbose", 'v', NULL, 0, "More diagnostics (-vv: libbpf's too)", 0 },
	{ "ringbuf", OPT_RINGBUF, "MiB", 0,
	  "Ring buffer size (default 8, 32 with --stacks dwarf; a power of 2)", 0 },
	{ 0 },
};

void gs_parse_report_format(struct argp_state *state, const char *arg, bool *json)
{
	if (!strcmp(arg, "json"))
		*json = true;
	else if (strcmp(arg, "text"))
		argp_error(state, "unknown format '%s' (text or json)", arg);
}

/*
 * -p 1,2 and -p "1 2" (what `pgrep` prints for two matches, newline-separated, inside
 * "$(...)") as well as repeated -p; duplicates are kept once.
 */
static void parse_pids(struct argp_state *state, struct gs_common_opts *o, const char *arg)
{
	const char *p = arg;
	char *end;
	long v;

	for (;;) {
		while (*p == ',' || *p == ' ' || *p == '\n' || *p == '\t')
			p++;
		if (!*p)
			break;
		errno = 0;
		v = strtol(p, &end, 10);
		if (end == p || errno || v <= 0 || v > 0x3fffffff ||
		    (*end && *end != ',' && *end != ' ' && *end != '\n' && *end != '\t'))
			argp_error(state, "invalid pid list '%s' (PID[,PID...])", arg);
		p = end;
		for (size_t i = 0; i < o->nr_pids; i++)
			if (o->pids[i] == (pid_t)v)
				goto next;
		if (o->nr_pids == GS_MAX_PIDS)
			argp_error(state, "at most %d pids", GS_MAX_PIDS);
		o->pids[o->nr_pids++] = (pid_t)v;
	next:;
	}
	if (p == arg || !o->nr_pids)
		argp_error(state, "invalid pid list '%s' (PID[,PID...])", arg);
}

bool gs_writes_stdout(const char *output)
{
	return !output || !strcmp(output, "-") || !strcmp(output, "/dev/stdout");
}

int gs_refuse_binary_tty(const char *output, const char *format)
{
	if (!gs_writes_stdout(output) || !isatty(STDOUT_FILENO))
		return 0;
	gs_err("%s is binary: not written to a terminal; give -o FILE or redirect stdout", format);
	return -EINVAL;
}

static error_t parse(int key, char *arg, struct argp_state *state)
{
	struct gs_common_opts *o = state->input;
	char *end;
	long v;

	switch (key) {
	case 'p':
		parse_pids(state, o, arg);
		break;
	case 'a':
		o->all = true;
		break;
	case OPT_CHILDREN:
	case OPT_NO_CHILDREN:
		o->children = key == OPT_CHILDREN ? GS_CHILDREN_ON : GS_CHILDREN_OFF;
		break;
	case 'd':
		if (gs_parse_seconds(arg, &o->duration_s))
			argp_error(state, "invalid duration '%s' (seconds, at most a year)", arg);
		break;
	case 'o':
		o->output = arg;
		break;
	case 'v':
		o->verbosity++;
		break;
	case OPT_RINGBUF:
		v = strtol(arg, &end, 10);
		if (*end || v <= 0 || v > 1024 || (v & (v - 1)))
			argp_error(state, "invalid ring buffer size '%s' (MiB, a power of 2)", arg);
		o->ringbuf_bytes = (size_t)v << 20;
		break;
	case ARGP_KEY_ARGS:
		o->argv = state->argv + state->next;
		state->next = state->argc;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp gs_common_argp = { options, parse, NULL, NULL, NULL, NULL, NULL };

static const struct argp_option stacks_options[] = {
	{ "stacks", OPT_STACKS, "fp|dwarf", 0,
	  "User stacks by frame pointers (default) or by DWARF unwinding of a copied stack slice, "
	  "for code built without frame pointers (PyTorch)",
	  0 },
	{ "no-python", OPT_NO_PYTHON, NULL, 0,
	  "Native frames only: no Python functions in the stacks of CPython processes", 0 },
	{ 0 },
};

static error_t parse_stacks(int key, char *arg, struct argp_state *state)
{
	struct gs_common_opts *o = state->input;

	if (key == OPT_NO_PYTHON) {
		o->no_python = true;
		return 0;
	}
	if (key != OPT_STACKS)
		return ARGP_ERR_UNKNOWN;
	if (!strcmp(arg, "fp"))
		o->stacks = GS_STACKS_FP;
	else if (!strcmp(arg, "dwarf"))
		o->stacks = GS_STACKS_DWARF;
	else
		argp_error(state, "unknown --stacks '%s' (fp or dwarf)", arg);
	return 0;
}

const struct argp gs_stacks_argp = { stacks_options, parse_stacks, NULL, NULL, NULL, NULL, NULL };

static const struct argp_option stacks_none_options[] = {
	{ "stacks", OPT_STACKS, "fp|dwarf|none", 0,
	  "User stacks by frame pointers (default), by DWARF unwinding of a copied stack slice "
	  "(code built without frame pointers: PyTorch), or none: no stack walked, exact counts "
	  "and sizes only, at the lowest cost",
	  0 },
	{ "stack-sample", OPT_STACK_SAMPLE, "N", 0,
	  "Always-on use: one event in N of each call site gets its stack (native and Python), "
	  "the others their call site alone; counts and sizes stay exact (default 1: every "
	  "event its stack; --stacks fp only)",
	  0 },
	{ "no-python", OPT_NO_PYTHON, NULL, 0,
	  "Native frames only: no Python functions in the stacks of CPython processes", 0 },
	{ 0 },
};

/* --stack-sample N: 1..1000000 */
static void parse_stack_sample(struct gs_common_opts *o, const char *arg, struct argp_state *state)
{
	char *end;
	unsigned long n;

	errno = 0;
	n = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || n < 1 || n > 1000000)
		argp_error(state, "--stack-sample '%s': a count from 1 to 1000000", arg);
	else
		o->stack_sample = (unsigned)n;
}

static error_t parse_stacks_none(int key, char *arg, struct argp_state *state)
{
	struct gs_common_opts *o = state->input;

	if (key == OPT_STACK_SAMPLE) {
		parse_stack_sample(o, arg, state);
		return 0;
	}
	if (key == ARGP_KEY_END && o->stack_sample > 1 && o->stacks != GS_STACKS_FP) {
		argp_error(state, "--stack-sample needs --stacks fp (the default)");
		return 0;
	}

	if (key == OPT_STACKS && !strcmp(arg, "none")) {
		o->stacks = GS_STACKS_NONE;
		return 0;
	}
	if (key == OPT_STACKS && strcmp(arg, "fp") && strcmp(arg, "dwarf")) {
		argp_error(state, "unknown --stacks '%s' (fp, dwarf or none)", arg);
		return 0;
	}
	return parse_stacks(key, arg, state);
}

const struct argp gs_stacks_none_argp = {
	stacks_none_options, parse_stacks_none, NULL, NULL, NULL, NULL, NULL
};

#define COMM_OPTION                                                                       \
	{                                                                                 \
		"comm", OPT_COMM, "REGEX", 0,                                             \
			"Only processes whose name (comm) matches this extended regular " \
			"expression, those "                                              \
			"running and those started later (alone: implies -a)",            \
			0                                                                 \
	}

static const struct argp_option filter_options[] = {
	COMM_OPTION,
	{ "cgroup", OPT_CGROUP, "PATH", 0,
	  "Only processes in this cgroup directory or below it (v2, or a v1 hierarchy's; alone: "
	  "implies -a)",
	  0 },
	{ 0 },
};

static error_t parse_filter(int key, char *arg, struct argp_state *state)
{
	struct gs_common_opts *o = state->input;

	if (key == OPT_COMM)
		o->comm_re = arg;
	else if (key == OPT_CGROUP)
		o->cgroup = arg;
	else
		return ARGP_ERR_UNKNOWN;
	return 0;
}

const struct argp gs_filter_argp = { filter_options, parse_filter, NULL, NULL, NULL, NULL, NULL };
static const struct argp_option comm_options[] = { COMM_OPTION, { 0 } };

const struct argp gs_comm_argp = { comm_options, parse_filter, NULL, NULL, NULL, NULL, NULL };

/* argp knows --help and -?; -h is what perf, git and bcc's tools answer too */
static const struct argp_option help_options[] = {
	{ NULL, 'h', NULL, OPTION_HIDDEN, "Give this help list", -1 },
	{ 0 },
};

static error_t parse_help(int key, char *arg, struct argp_state *state)
{
	if (key != 'h')
		return ARGP_ERR_UNKNOWN;
	argp_state_help(state, stdout, ARGP_HELP_STD_HELP); /* exits 0, as --help does */
	return 0;
}

const struct argp gs_help_argp = { help_options, parse_help, NULL, NULL, NULL, NULL, NULL };

volatile sig_atomic_t gs_stop_requested;

static void on_stop_signal(int sig)
{
	gs_stop_requested = sig;
}

int gs_common_opts__finish(struct gs_common_opts *opts)
{
	struct sigaction sa = { .sa_handler = on_stop_signal };
	int modes = (opts->nr_pids > 0) + opts->all + (opts->argv != NULL), err;

	/* a filter alone watches every process for the ones it keeps, as profile --cgroup */
	if ((opts->comm_re || opts->cgroup) && !modes) {
		opts->all = true;
		modes = 1;
	}

	gs_log_set_level(opts->verbosity >= 2	? GS_LOG_LIBBPF
			 : opts->verbosity == 1 ? GS_LOG_DEBUG
						: GS_LOG_INFO);
	if (modes != 1) {
		gs_err("give exactly one of -p PID, -a%s%s or -- CMD ARGS",
		       opts->other_target ? ", " : "",
		       opts->other_target ? opts->other_target : "");
		return -EINVAL;
	}
	if (opts->children != GS_CHILDREN_DEFAULT && !opts->nr_pids && !opts->argv) {
		gs_err("--children and --no-children go with -p PID or -- CMD ARGS");
		return -EINVAL;
	}
	if (opts->comm_re || opts->cgroup) {
		err = gs_proc_filter__new(&opts->filter, opts->comm_re, opts->cgroup);
		if (err)
			return err;
	}
	/* before any output is created: a wrong pid must leave an existing -o file alone */
	for (size_t i = 0; i < opts->nr_pids; i++) {
		if (kill(opts->pids[i], 0) && errno == ESRCH) {
			gs_err("pid %d: no such process", (int)opts->pids[i]);
			return -ESRCH;
		}
	}
	/* no SA_RESTART: a signal must interrupt the ring buffer poll */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN); /* a closed pipe is a write error, reported */
	return 0;
}

struct gs_tracker_opts gs_common_opts__tracker(const struct gs_common_opts *opts, uint32_t families)
{
	return (struct gs_tracker_opts){
		.pids = opts->pids,
		.nr_pids = opts->nr_pids,
		.all = opts->all,
		/* as perf: -- CMD covers what it starts, -p only the processes named */
		.children = opts->children == GS_CHILDREN_ON ||
			    (opts->argv && opts->children == GS_CHILDREN_DEFAULT),
		.argv = opts->argv,
		.ringbuf_bytes = opts->ringbuf_bytes		   ? opts->ringbuf_bytes
				 : opts->stacks == GS_STACKS_DWARF ? DWARF_RINGBUF_BYTES
								   : 0,
		.families = families,
		.filter = opts->filter,
		.stacks = opts->stacks,
		.stack_sample = opts->stack_sample,
		/* --stacks none: not even the lookup that tells a Python process */
		.python = !opts->no_python && opts->stacks != GS_STACKS_NONE,
	};
}
