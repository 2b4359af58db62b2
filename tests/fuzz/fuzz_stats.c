// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_stats.c: libFuzzer harness for `gpusnoop stats`: a trace's rows through the summary engine. */
#include <errno.h>
#include "profilers/cmd/stats_reader.h"
#include "profilers/timeline/trace_stats.h"
#include "stitch/trace_parse.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gs_stats_reader rd = { .stats = gs_trace_stats__new() };
	struct gs_trace_parse_ops ops = { .ctx = &rd, .event = gs_stats_reader_event };
	struct gs_trace_parser *p = gs_trace_parser__new(&ops);
	size_t cut = gs_fuzz_cut(data, size, 1);
	FILE *null = fopen("/dev/null", "w");
	int err;

	if (!rd.stats || !p || !null)
		abort();
	/* two chunks: a document split anywhere reads as whole */
	err = gs_trace_parser__feed(p, data, cut);
	err = err ?: gs_trace_parser__feed(p, data + cut, size - cut);
	err = err ?: gs_trace_parser__finish(p);
	GS_FUZZ_CHECK(!err || err == -EINVAL);
	/* whatever came before a malformed byte is printed, every way, without a crash */
	GS_FUZZ_CHECK(!gs_trace_stats__print(rd.stats, null, (enum gs_stats_format)(size % 3)));
	gs_trace_stats__print_summary(rd.stats, null);
	fclose(null);
	gs_trace_parser__free(p);
	gs_trace_stats__free(rd.stats);
	free(rd.obj);
	return 0;
}
