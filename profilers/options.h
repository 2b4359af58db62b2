/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* options.h: the target and output options every subcommand shares (an argp child). */
#ifndef GS_OPTIONS_H
#define GS_OPTIONS_H

#include <argp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "profilers/proc_filter.h"
#include "profilers/tracker.h"
#include "user/units.h" /* gs_parse_seconds(), for the options */

#define GS_MAX_PIDS 256
/* sysexits' EX_USAGE: every usage error (argp's and ours) exits with it */
#define GS_EXIT_USAGE 64
/* The exit status for a failed setup step: GS_EXIT_USAGE for -EINVAL, else 1. */
static inline int gs_exit_status(int err)
{
	return err == -EINVAL ? GS_EXIT_USAGE : 1;
}

/* --children / --no-children; the default depends on the target mode */
enum gs_children { GS_CHILDREN_DEFAULT = 0, GS_CHILDREN_ON, GS_CHILDREN_OFF };

struct gs_common_opts {
	pid_t pids[GS_MAX_PIDS];
	size_t nr_pids;
	bool all;
	enum gs_children children;
	char **argv;	    /* -- CMD ARGS, NULL-terminated */
	double duration_s;  /* 0: until interrupted or the targets exit */
	const char *output; /* NULL: stdout */
	int verbosity;
	size_t ringbuf_bytes;
	enum gs_stack_mode stacks; /* --stacks */
	unsigned stack_sample;	   /* --stack-sample N (record, leaks); 0: every stack */
	bool no_python;		   /* --no-python */
	const char *other_target;  /* a subcommand's own way to name targets, for messages */
	const char *comm_re;	   /* --comm REGEX (gs_filter_argp) */
	const char *cgroup;	   /* --cgroup PATH (gs_filter_argp) */
	/* made by gs_common_opts__finish() from the two above; lives as long as the command */
	struct gs_proc_filter *filter;
};

/* Pass as an argp child with the opts as input (see profilers/cmd/leaks.c). */
extern const struct argp gs_common_argp;
/* --stacks fp|dwarf, for the subcommands that honor it: another child, same input. */
extern const struct argp gs_stacks_argp;
/* the same with --stacks none too (record, leaks): GS_STACKS_NONE, no stack walked at all */
extern const struct argp gs_stacks_none_argp;
/*
 * --comm REGEX and --cgroup PATH: only the processes whose comm matches, in that cgroup or
 * below; either alone implies -a. Another child, same input. gs_comm_argp: --comm alone, for
 * a subcommand with a --cgroup of its own.
 */
extern const struct argp gs_filter_argp;
extern const struct argp gs_comm_argp;
/* -h as --help: a child of every subcommand's argp, needing no input. */
extern const struct argp gs_help_argp;

/* Set by SIGINT/SIGTERM once gs_common_opts__finish() ran: the CLI's one flag. */
extern volatile sig_atomic_t gs_stop_requested;

/*
 * After argp: applies -v, checks that exactly one target mode was given (logs and returns
 * -EINVAL otherwise), and turns SIGINT/SIGTERM into gs_stop_requested.
 */
int gs_common_opts__finish(struct gs_common_opts *opts);
/* The tracker's view of the common options, probing the given API families. */
struct gs_tracker_opts gs_common_opts__tracker(const struct gs_common_opts *opts,
					       uint32_t families);
/* Whether -o names stdout: none, "-" or /dev/stdout. */
bool gs_writes_stdout(const char *output);
/*
 * A binary format (pprof, gzip) is not written to a terminal: with output NULL, "-" or
 * /dev/stdout while stdout is one, logs and returns -EINVAL (a usage error), else 0.
 */
int gs_refuse_binary_tty(const char *output, const char *format);
/* -f text|json of the commands that print reports: sets *json, argp_error() on anything else. */
void gs_parse_report_format(struct argp_state *state, const char *arg, bool *json);

#endif /* GS_OPTIONS_H */
