// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* main.c: the gpusnoop command, git/perf style: `gpusnoop <subcommand> [options]`. */
#include <argp.h>
#include <stdio.h>
#include <string.h>
#include "profilers/options.h"
#include "profilers/cmd/subcommands.h"

/*
 * every subcommand's --version (argp's), and what help2man puts in the man pages; `make bundle`
 * says what the self-contained build carries (GS_BUNDLE: "static libbpf 1.1.2, glibc >= 2.31")
 */
#ifdef GS_BUNDLE
const char *argp_program_version = "gpusnoop " GS_VERSION " (bundle: " GS_BUNDLE ")";
#else
const char *argp_program_version = "gpusnoop " GS_VERSION;
#endif

struct subcommand {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

static const struct subcommand subcommands[] = {
	{ "leaks", "outstanding CUDA allocations per process, grouped by stack", gs_cmd_leaks },
	{ "record", "CUDA launches, syncs, copies and memory as a Perfetto timeline",
	  gs_cmd_record },
	{ "profile", "sampled CPU stacks as folded stacks or pprof", gs_cmd_profile },
	{ "top", "live per-process view: GPU memory, launches, syncs, copies, kernels",
	  gs_cmd_top },
	{ "daemon", "always on: OOM reports, Prometheus metrics, remote control", gs_cmd_daemon },
	{ "ctl", "ask the daemon: status, leaks PID, snapshot PID, record PID SECONDS",
	  gs_cmd_ctl },
	{ "stitch", "merge gpusnoop and PyTorch (Kineto) traces into one timeline", gs_cmd_stitch },
	{ "stats", "tables of a trace: API calls, kernels, copies, memory, NVTX", gs_cmd_stats },
	{ "check", "this kernel's BPF features and what each command can do here", gs_cmd_check },
};

#define NR_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fprintf(f, "Usage: gpusnoop COMMAND [OPTION...] [-p PID ... | -a | -- CMD ARGS]\n"
		   "Trace CUDA and PyTorch memory, calls and CPU stacks of running processes\n"
		   "with eBPF.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < NR_SUBCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(f, "\nOptions:\n"
		   "  -h, --help      Give this help list\n"
		   "  -V, --version   Print the program version\n\n"
		   "'gpusnoop COMMAND --help' or 'gpusnoop help COMMAND' describes a command.\n");
}

static const struct subcommand *find_subcommand(const char *name)
{
	for (size_t i = 0; i < NR_SUBCOMMANDS; i++)
		if (!strcmp(name, subcommands[i].name))
			return &subcommands[i];
	fprintf(stderr, "gpusnoop: error: unknown command '%s'\n", name);
	usage(stderr);
	return NULL;
}

/*
 * argv[0] of a subcommand is "gpusnoop NAME": argp names the program by it in "Usage:",
 * in its errors and in "Try 'gpusnoop NAME --help'".
 */
static int run_subcommand(const struct subcommand *cmd, int argc, char **argv)
{
	char name[32];

	snprintf(name, sizeof(name), "gpusnoop %s", cmd->name);
	argv[0] = name;
	return cmd->run(argc, argv);
}

int main(int argc, char **argv)
{
	const struct subcommand *cmd;

	argp_err_exit_status = GS_EXIT_USAGE;
	if (argc < 2) {
		usage(stderr);
		return GS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") && argc > 2) {
		char *help_argv[] = { NULL, "--help", NULL };

		cmd = find_subcommand(argv[2]);
		return cmd ? run_subcommand(cmd, 2, help_argv) : GS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V") ||
	    !strcmp(argv[1], "version")) {
		printf("%s\n", argp_program_version);
		return 0;
	}
	if (!strcmp(argv[1], "list")) {
		for (size_t i = 0; i < NR_SUBCOMMANDS; i++)
			printf("%-8s %s\n", subcommands[i].name, subcommands[i].summary);
		return 0;
	}
	cmd = find_subcommand(argv[1]);
	return cmd ? run_subcommand(cmd, argc - 1, argv + 1) : GS_EXIT_USAGE;
}
