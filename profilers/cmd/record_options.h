/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* record_options.h: `gpusnoop record`'s command line: its options, parsed and checked. */
#ifndef GS_RECORD_OPTIONS_H
#define GS_RECORD_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include "profilers/options.h"

/* -e without -e: the one list --help shows and the README repeats (tests/e2e/test_cli.py) */
#define DEFAULT_EVENTS "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy,torch-mem"

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
	const char *format;   /* --format json|perfetto; NULL: by -o's name */
	bool perfetto;	      /* Perfetto's protobuf trace, not JSON */
};

/* The defaults, then argv parsed into o (argp's usage errors exit there). 0, or non-zero. */
int gs_record_opts__parse(struct record_opts *o, int argc, char **argv);
/* -F only with -e cpu; one output; ... *hz: the sampling rate. 0 or -errno (logged). */
int gs_record_opts__check(struct record_opts *o, unsigned int *hz);

#endif /* GS_RECORD_OPTIONS_H */
