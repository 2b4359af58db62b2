// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* main.c: the gpusnoop command, git/perf style: `gpusnoop <subcommand> [options]`. */
#include <stdio.h>
#include <string.h>
#include "profilers/cmd/subcommands.h"

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
	{ "daemon", "always on: OOM reports, Prometheus metrics, remote control", gs_cmd_daemon },
	{ "ctl", "ask a running gpusnoop daemon (status, leaks, snapshot)", gs_cmd_ctl },
	{ "stitch", "merge gpusnoop and PyTorch (Kineto) traces into one timeline", gs_cmd_stitch },
};

#define NR_SUBCOMMANDS (sizeof(subcommands) / sizeof(subcommands[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: gpusnoop <command> [options] [-p PID ... | -a | -- CMD ARGS]\n\n"
		   "commands:\n");
	for (size_t i = 0; i < NR_SUBCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(f, "\n'gpusnoop <command> --help' describes a command's options.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 1;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("gpusnoop %s\n", GS_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "list")) {
		for (size_t i = 0; i < NR_SUBCOMMANDS; i++)
			printf("%-8s %s\n", subcommands[i].name, subcommands[i].summary);
		return 0;
	}
	for (size_t i = 0; i < NR_SUBCOMMANDS; i++)
		if (!strcmp(argv[1], subcommands[i].name))
			return subcommands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "gpusnoop: error: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 1;
}
