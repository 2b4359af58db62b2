// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_chrome_trace.c: the streamed Chrome Trace Event document, byte for byte. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "stitch/chrome_trace.h"
#include "tests/unit/harness.h"

GS_TEST(microseconds_keep_nanoseconds)
{
	char buf[32];

	gs_chrome_trace_format_us(1234567, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "1234.567");
	gs_chrome_trace_format_us(5, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "0.005");
	/* 3 days of uptime: a double would round the nanoseconds away */
	gs_chrome_trace_format_us(259200000000123ULL, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "259200000000.123");
	/* as "%" PRIu64 ".%03u" spells it, whatever the value; cut as snprintf cuts */
	for (uint64_t ns = 0, step = 1; ns < UINT64_MAX / 3; ns = ns * 3 + step++) {
		char want[32];

		snprintf(want, sizeof(want), "%" PRIu64 ".%03u", ns / 1000,
			 (unsigned int)(ns % 1000));
		gs_chrome_trace_format_us(ns, buf, sizeof(buf));
		GS_EXPECT_STR_EQ(buf, want);
	}
	gs_chrome_trace_format_us(UINT64_MAX, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "18446744073709551.615");
	gs_chrome_trace_format_us(1234567, buf, 5);
	GS_EXPECT_STR_EQ(buf, "1234");
}

GS_TEST(document_with_events_and_metadata)
{
	struct gs_chrome_trace t;
	struct gs_json *j;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!GS_EXPECT(f != NULL))
		return;
	gs_chrome_trace__begin(&t, f);
	gs_chrome_trace__process_name(&t, 7, "train");
	j = gs_chrome_trace__event(&t, "X", "cudaMalloc", "cuda_runtime", 7, 8, 1500);
	gs_json__raw(j, "dur", "0.250");
	gs_chrome_trace__end_event(&t);
	gs_chrome_trace__counter(&t, 7, "CUDA memory", 2000, "bytes", 4096);
	j = gs_chrome_trace__metadata(&t);
	gs_json__u64(j, "dropped_events", 0);
	gs_chrome_trace__finish(&t);
	fclose(f);
	GS_EXPECT_STR_EQ(
		text, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
		      "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"tid\":0,\"ts\":0.000,"
		      "\"args\":{\"name\":\"train\"}}\n"
		      ",{\"ph\":\"X\",\"name\":\"cudaMalloc\",\"cat\":\"cuda_runtime\",\"pid\":7,"
		      "\"tid\":8,\"ts\":1.500,\"dur\":0.250}\n"
		      ",{\"ph\":\"C\",\"name\":\"CUDA memory\",\"cat\":\"counter\",\"pid\":7,"
		      "\"tid\":0,\"ts\":2.000,\"dur\":0,\"args\":{\"bytes\":4096}}\n"
		      "],\"metadata\":{\"dropped_events\":0}}\n");
	GS_EXPECT_EQ(t.nr_events, 3);
	free(text);
}

GS_TEST(finish_without_metadata_is_still_complete)
{
	struct gs_chrome_trace t;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!GS_EXPECT(f != NULL))
		return;
	gs_chrome_trace__begin(&t, f);
	gs_chrome_trace__finish(&t);
	gs_chrome_trace__finish(&t); /* idempotent */
	fclose(f);
	GS_EXPECT_STR_EQ(text, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n]}\n");
	free(text);
}

GS_TEST(raw_events_mix_with_built_ones)
{
	struct gs_chrome_trace t;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!GS_EXPECT(f != NULL))
		return;
	gs_chrome_trace__begin(&t, f);
	gs_chrome_trace__raw_event(&t, "{\"pid\":1,\"ts\":2.000,\"ph\":\"i\"}", 29);
	gs_chrome_trace__process_name(&t, 1, "p");
	gs_chrome_trace__raw_event(&t, "{\"ph\":\"M\"}xyz", 10); /* len, not NUL, ends it */
	gs_chrome_trace__finish(&t);
	fclose(f);
	GS_EXPECT_STR_EQ(text, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
			       "{\"pid\":1,\"ts\":2.000,\"ph\":\"i\"}\n"
			       ",{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,"
			       "\"ts\":0.000,\"args\":{\"name\":\"p\"}}\n"
			       ",{\"ph\":\"M\"}\n]}\n");
	GS_EXPECT_EQ(t.nr_events, 3);
	free(text);
}

GS_TEST_MAIN(microseconds_keep_nanoseconds, document_with_events_and_metadata,
	     finish_without_metadata_is_still_complete, raw_events_mix_with_built_ones)
