// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_merge.c: gs_stitch on small synthetic traces: clocks, pids per host, Kineto, errors. */
#include <errno.h>
#include <stdlib.h>
#include <yajl/yajl_tree.h>
#include "stitch/merge.h"
#include "tests/unit/harness.h"

/* an input in memory, read in small pieces so events straddle reads */
struct mem_in {
	const char *text;
	size_t pos;
};

static long mem_read(void *ctx, void *buf, size_t len)
{
	struct mem_in *m = ctx;
	size_t left = strlen(m->text) - m->pos;
	size_t n = left < 11 ? left : 11;

	(void)len;
	memcpy(buf, m->text + m->pos, n);
	m->pos += n;
	return (long)n;
}

static int mem_rewind(void *ctx)
{
	((struct mem_in *)ctx)->pos = 0;
	return 0;
}

struct result {
	int ret;
	char err[512];
	char *text;
	yajl_val doc;
	struct gs_stitch_stats stats;
};

static void stitch_with(struct result *r, const char *const *texts, size_t nr,
			const struct gs_stitch_opts *opts_in, const char *const *hosts,
			int64_t kineto_offset_ns)
{
	static const char *const names[] = { "a.json", "b.json", "c.json", "d.json" };
	struct gs_stitch_opts opts = {
		.window_ns = 1000000,
		.same_boot_ns = GS_STITCH_DEFAULT_SAME_BOOT_NS,
	};
	struct gs_stitch_input in[4];
	struct mem_in mem[4];
	size_t len = 0;
	FILE *f;

	if (opts_in)
		opts = *opts_in;
	memset(r, 0, sizeof(*r));
	f = open_memstream(&r->text, &len);
	for (size_t i = 0; i < nr; i++) {
		mem[i] = (struct mem_in){ .text = texts[i] };
		in[i] = (struct gs_stitch_input){
			.name = names[i],
			.ctx = &mem[i],
			.read = mem_read,
			.rewind = mem_rewind,
			.kineto_host = hosts ? hosts[i] : NULL,
			.kineto_offset_ns = kineto_offset_ns,
		};
	}
	r->ret = gs_stitch(in, nr, &opts, f, &r->stats, r->err, sizeof(r->err));
	fclose(f);
	if (!r->ret)
		r->doc = yajl_tree_parse(r->text, NULL, 0);
}

static void stitch(struct result *r, const char *const *texts, size_t nr,
		   const struct gs_stitch_opts *opts)
{
	stitch_with(r, texts, nr, opts, NULL, 0);
}

static void stitch_offset(struct result *r, const char *const *texts, size_t nr, int64_t off)
{
	stitch_with(r, texts, nr, NULL, NULL, off);
}

static void result_free(struct result *r)
{
	yajl_tree_free(r->doc);
	free(r->text);
}

static yajl_val get(yajl_val v, const char *key)
{
	const char *path[] = { key, NULL };

	return yajl_tree_get(v, path, yajl_t_any);
}

static size_t nr_events(const struct result *r)
{
	yajl_val ev = get(r->doc, "traceEvents");

	return YAJL_IS_ARRAY(ev) ? ev->u.array.len : 0;
}

static yajl_val event(const struct result *r, size_t i)
{
	return get(r->doc, "traceEvents")->u.array.values[i];
}

/* the i-th event's field as text: numbers keep their text, strings their value */
static const char *field(const struct result *r, size_t i, const char *key)
{
	yajl_val v = i < nr_events(r) ? get(event(r, i), key) : NULL;

	if (YAJL_IS_NUMBER(v))
		return YAJL_GET_NUMBER(v);
	if (YAJL_IS_STRING(v))
		return YAJL_GET_STRING(v);
	return NULL;
}

/* the first event with this "name" field, or -1 */
static long find(const struct result *r, const char *name, const char *ph)
{
	for (size_t i = 0; i < nr_events(r); i++) {
		const char *n = field(r, i, "name"), *p = field(r, i, "ph");

		if (n && !strcmp(n, name) && p && !strcmp(p, ph))
			return (long)i;
	}
	return -1;
}

static const char *process_name(const struct result *r, const char *pid)
{
	for (size_t i = 0; i < nr_events(r); i++) {
		const char *n = field(r, i, "name"), *p = field(r, i, "pid");

		if (n && !strcmp(n, "process_name") && p && !strcmp(p, pid))
			return YAJL_GET_STRING(get(get(event(r, i), "args"), "name"));
	}
	return NULL;
}

#define META(host, off)                                                \
	"],\"metadata\":{\"tool\":\"gpusnoop\",\"host\":\"" host "\"," \
	"\"monotonic_to_realtime_ns\":" off ",\"dropped_events\":3,\"lost\":{\"x\":1}}}\n"

/* host h1, boot offset 1e18: pid 100, slices at 1000 and 3000 us */
static const char trace_a[] =
	"{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":100,\"tid\":0,\"ts\":0.000,"
	"\"args\":{\"name\":\"train\"}}\n"
	",{\"ph\":\"X\",\"name\":\"a1\",\"cat\":\"cuda_runtime\",\"pid\":100,\"tid\":101,"
	"\"ts\":1000.000,\"dur\":5.000,\"args\":{\"kernel\":\"k\"}}\n"
	",{\"ph\":\"X\",\"name\":\"a2\",\"pid\":100,\"tid\":101,\"ts\":3000.000,\"dur\":1.5}"
	"\n" META("h1", "1000000000000000000");

/* same host and boot (offset 40 ns off: measured a moment later), pid 200 at 2000 us */
static const char trace_b_same_host[] =
	"{\"traceEvents\":[\n"
	"{\"ph\":\"X\",\"name\":\"b1\",\"pid\":200,\"tid\":200,\"ts\":2000.000,\"dur\":1}\n" META(
		"h1", "1000000000000000040");

/* another host, the same pid 100, booted 500 us later: its 1000 us is h1's 1500 us */
static const char trace_c_other_host[] =
	"{\"traceEvents\":[\n"
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":100,\"tid\":0,\"ts\":0,"
	"\"args\":{\"name\":\"train\"}}\n"
	",{\"ph\":\"X\",\"name\":\"c1\",\"pid\":100,\"tid\":100,\"ts\":1000.000,\"dur\":1}\n"
	",{\"ph\":\"X\",\"name\":\"c2\",\"pid\":300,\"tid\":300,\"ts\":1600.250,\"dur\":1}\n" META(
		"h2", "1000000000000500000");

GS_TEST(one_host_keeps_its_timestamps_and_pids)
{
	const char *in[] = { trace_a, trace_b_same_host };
	struct result r;

	stitch(&r, in, 2, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0) || !GS_EXPECT(r.doc != NULL)) {
		printf("  %s\n", r.err);
		goto out;
	}
	GS_EXPECT_EQ(nr_events(&r), 4);
	GS_EXPECT_EQ(r.stats.domains, 1);
	GS_EXPECT_EQ(r.stats.dropped, 6);
	GS_EXPECT_EQ(r.stats.late, 0);
	/* M first (written at once), then by time: a1 1000, b1 2000, a2 3000 */
	GS_EXPECT_STR_EQ(field(&r, 1, "name"), "a1");
	GS_EXPECT_STR_EQ(field(&r, 1, "ts"), "1000.000");
	GS_EXPECT_STR_EQ(field(&r, 1, "pid"), "100");
	GS_EXPECT_STR_EQ(field(&r, 1, "dur"), "5.000");
	GS_EXPECT_STR_EQ(field(&r, 2, "name"), "b1");
	GS_EXPECT_STR_EQ(field(&r, 2, "ts"), "2000.000"); /* not moved by the 40 ns */
	GS_EXPECT_STR_EQ(field(&r, 3, "name"), "a2");
	GS_EXPECT_STR_EQ(field(&r, 3, "ts"), "3000.000");
	GS_EXPECT_STR_EQ(process_name(&r, "100"), "train"); /* one host: names unchanged */
	GS_EXPECT_STR_EQ(field(&r, 1, "cat"), "cuda_runtime");
	GS_EXPECT_STR_EQ(YAJL_GET_STRING(get(get(event(&r, 1), "args"), "kernel")), "k");
	{
		yajl_val md = get(r.doc, "metadata");
		yajl_val inputs = get(md, "inputs");

		GS_EXPECT_STR_EQ(YAJL_GET_NUMBER(get(md, "monotonic_to_realtime_ns")),
				 "1000000000000000000");
		GS_EXPECT_STR_EQ(YAJL_GET_NUMBER(get(md, "dropped_events")), "6");
		GS_EXPECT_STR_EQ(YAJL_GET_STRING(get(md, "host")), "h1");
		if (GS_EXPECT(YAJL_IS_ARRAY(inputs) && inputs->u.array.len == 2)) {
			yajl_val b = inputs->u.array.values[1];

			GS_EXPECT_STR_EQ(YAJL_GET_STRING(get(b, "file")), "b.json");
			GS_EXPECT_STR_EQ(YAJL_GET_STRING(get(b, "format")), "gpusnoop");
			GS_EXPECT_STR_EQ(YAJL_GET_NUMBER(get(b, "dropped_events")), "3");
			GS_EXPECT_STR_EQ(YAJL_GET_NUMBER(get(b, "shift_ns")), "0");
			GS_EXPECT_STR_EQ(YAJL_GET_STRING(get(get(b, "metadata"), "host")), "h1");
		}
	}
out:
	result_free(&r);
}

GS_TEST(two_hosts_same_pid_become_two_processes_on_one_clock)
{
	const char *in[] = { trace_a, trace_c_other_host };
	struct result r;

	stitch(&r, in, 2, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0) || !GS_EXPECT(r.doc != NULL)) {
		printf("  %s\n", r.err);
		goto out;
	}
	GS_EXPECT_EQ(r.stats.domains, 2);
	GS_EXPECT_STR_EQ(process_name(&r, "100"), "train (pid 100 on h1)");
	GS_EXPECT_STR_EQ(process_name(&r, "10000100"), "train (pid 100 on h2)");
	/* pid 300 had no name: it gets one saying where it ran */
	GS_EXPECT_STR_EQ(process_name(&r, "10000300"), "pid 300 on h2");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "c1", "X"), "pid"), "10000100");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "c1", "X"), "tid"), "100");
	/* h2 booted 500 us after h1: its 1000 us is h1's 1500 us */
	GS_EXPECT_STR_EQ(field(&r, find(&r, "c1", "X"), "ts"), "1500.000");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "c2", "X"), "ts"), "2100.250");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "a1", "X"), "ts"), "1000.000");
	/* in time order: a1 1000, c1 1500, c2 2100.25, a2 3000 */
	GS_EXPECT(find(&r, "a1", "X") < find(&r, "c1", "X"));
	GS_EXPECT(find(&r, "c1", "X") < find(&r, "c2", "X"));
	GS_EXPECT(find(&r, "c2", "X") < find(&r, "a2", "X"));
out:
	result_free(&r);
}

GS_TEST(same_host_another_boot_is_another_clock)
{
	/* h1 again, but its boot time is a minute later: a reboot, pids may repeat */
	static const char rebooted[] = "{\"traceEvents\":[\n"
				       "{\"ph\":\"X\",\"name\":\"r1\",\"pid\":100,\"tid\":1,\"ts\":"
				       "10.000,\"dur\":1}\n" META("h1", "1000000060000000000");
	const char *in[] = { trace_a, rebooted };
	struct result r;

	stitch(&r, in, 2, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	GS_EXPECT_EQ(r.stats.domains, 2);
	GS_EXPECT_STR_EQ(field(&r, find(&r, "r1", "X"), "pid"), "10000100");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "r1", "X"), "ts"), "60000010.000");
	GS_EXPECT_STR_EQ(process_name(&r, "10000100"), "pid 100 on h1 boot 2");
out:
	result_free(&r);
}

GS_TEST(an_input_older_than_the_first_host_moves_the_zero)
{
	/* h0 booted 2 s before h1 and recorded at its 1 s: before h1's clock began */
	static const char older[] = "{\"traceEvents\":[\n"
				    "{\"ph\":\"X\",\"name\":\"o1\",\"pid\":5,\"tid\":5,\"ts\":"
				    "1000000.000,\"dur\":1}\n" META("h0", "999999998000000000");
	const char *in[] = { trace_a, older };
	struct result r;

	stitch(&r, in, 2, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	/* realtime 999999999000000000 is the new zero; h1 keeps its spacing, shifted by 1 s */
	GS_EXPECT_STR_EQ(field(&r, find(&r, "o1", "X"), "ts"), "0.000");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "a1", "X"), "ts"), "1001000.000");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "a2", "X"), "ts"), "1003000.000");
	GS_EXPECT_STR_EQ(YAJL_GET_NUMBER(get(get(r.doc, "metadata"), "monotonic_to_realtime_ns")),
			 "999999999000000000");
out:
	result_free(&r);
}

/* Kineto: wall-clock microseconds from baseTimeNanoseconds; pid 100 is the same process */
static const char kineto[] =
	"{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"GPU\"}],\n"
	"\"traceEvents\": [\n"
	"{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"gemm\", \"pid\": 0, \"tid\": 7,"
	" \"ts\": 1600.5, \"dur\": 10, \"args\": {\"stream\": 7, \"correlation\": 9}},\n"
	"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 100, \"tid\": 101,"
	" \"ts\": 1100, \"dur\": 600},\n"
	"{\"name\": \"process_name\", \"ph\": \"M\", \"ts\": 1000, \"pid\": 0, \"tid\": 0,"
	" \"args\": {\"name\": \"GPU 0\"}}\n"
	"], \"traceName\": \"t.json\", \"baseTimeNanoseconds\": 1000000000000000000}";

GS_TEST(kineto_lands_on_the_gpusnoop_clock)
{
	const char *in[] = { trace_a, kineto };
	struct result r;

	stitch(&r, in, 2, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	GS_EXPECT_EQ(r.stats.domains, 1);
	GS_EXPECT_STR_EQ(field(&r, find(&r, "aten::mm", "X"), "ts"), "1100.000");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "aten::mm", "X"), "pid"), "100"); /* train's */
	GS_EXPECT_STR_EQ(field(&r, find(&r, "gemm", "X"), "ts"), "1600.500");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "gemm", "X"), "pid"), "0");
	GS_EXPECT_STR_EQ(field(&r, find(&r, "gemm", "X"), "cat"), "kernel");
	GS_EXPECT_STR_EQ(process_name(&r, "0"), "GPU 0");
	/* Kineto is not in time order; the output is */
	GS_EXPECT(find(&r, "a1", "X") < find(&r, "aten::mm", "X"));
	GS_EXPECT(find(&r, "aten::mm", "X") < find(&r, "gemm", "X"));
	GS_EXPECT(find(&r, "gemm", "X") < find(&r, "a2", "X"));
	{
		yajl_val k = get(get(r.doc, "metadata"), "inputs")->u.array.values[1];

		GS_EXPECT_STR_EQ(YAJL_GET_STRING(get(k, "format")), "kineto");
		GS_EXPECT_STR_EQ(YAJL_GET_NUMBER(get(k, "base_time_ns")), "1000000000000000000");
		GS_EXPECT_STR_EQ(YAJL_GET_STRING(get(get(k, "metadata"), "traceName")), "t.json");
	}
	GS_EXPECT_STR_EQ(r.stats.warning, "");
out:
	result_free(&r);
}

GS_TEST(kineto_offset_and_absolute_timestamps)
{
	/* no baseTimeNanoseconds: ts is microseconds since the epoch */
	static const char absolute[] =
		"{\"schemaVersion\": 1, \"traceEvents\": [\n"
		"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"op\", \"pid\": 100, \"tid\": 1,"
		" \"ts\": 1000000000000002000, \"dur\": 1}]}";
	char fixed[sizeof(absolute)];
	const char *in[] = { trace_a, fixed };
	struct result r;

	/* 1e18 ns since the epoch as microseconds */
	snprintf(fixed, sizeof(fixed), "%s", absolute);
	memcpy(strstr(fixed, "1000000000000002000"), "   1000000000002000", 19);
	stitch_offset(&r, in, 2, -250000);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	GS_EXPECT_STR_EQ(field(&r, find(&r, "op", "X"), "ts"), "1750.000"); /* 2000 us - 250 us */
out:
	result_free(&r);
}

GS_TEST(kineto_clock_that_is_not_wall_clock_is_reported)
{
	static const char relative[] = "{\"schemaVersion\": 1, \"traceEvents\": [\n"
				       "{\"ph\": \"X\", \"name\": \"op\", \"pid\": 1, \"tid\": 1, "
				       "\"ts\": 5, \"dur\": 1}]}";
	const char *in[] = { trace_a, relative };
	struct result r;

	stitch(&r, in, 2, NULL);
	GS_EXPECT_EQ(r.ret, 0);
	GS_EXPECT(strstr(r.stats.warning, "b.json: its timestamps are ") != NULL);
	GS_EXPECT(strstr(r.stats.warning, "--kineto-offset") != NULL);
	result_free(&r);
}

GS_TEST(two_ranks_on_two_hosts_keep_their_processes_and_flows_apart)
{
	/* the same Kineto trace as rank 0 on h1 and rank 1 on h2: same pids, same flow ids */
	static const char rank[] =
		"{\"schemaVersion\": 1, \"traceEvents\": [\n"
		"{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\","
		" \"pid\": 100, \"tid\": 101, \"ts\": 1000000000000001200, \"dur\": 5},\n"
		"{\"ph\": \"s\", \"id\": 9, \"pid\": 100, \"tid\": 101, \"ts\": "
		"1000000000000001200,"
		" \"cat\": \"ac2g\", \"name\": \"ac2g\"},\n"
		"{\"ph\": \"f\", \"id\": 9, \"pid\": 0, \"tid\": 7, \"ts\": 1000000000000001300,"
		" \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"},\n"
		"{\"ph\": \"i\", \"id\": \"0x10\", \"pid\": 0, \"tid\": 7, \"ts\": "
		"1000000000000001300,"
		" \"name\": \"string id\"}]}";
	static const char *const hosts[] = { NULL, NULL, "h1", "h2" };
	char r0[sizeof(rank)];
	const char *in[] = { trace_a, trace_c_other_host, r0, r0 };
	struct result r;
	int flows = 0;

	/* ts: 1e18 ns since the epoch, in microseconds */
	snprintf(r0, sizeof(r0), "%s", rank);
	for (char *p = r0; (p = strstr(p, "1000000000000001")) != NULL;)
		memcpy(p, "   1000000000001", 16);
	stitch_with(&r, in, 4, NULL, hosts, 0);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	GS_EXPECT_EQ(r.stats.domains, 2);
	for (size_t i = 0; i < nr_events(&r); i++) {
		const char *ph = field(&r, i, "ph"), *pid = field(&r, i, "pid");
		const char *id = field(&r, i, "id");

		if (!ph || (strcmp(ph, "s") && strcmp(ph, "f")))
			continue;
		flows++;
		/* the same id 9: input 2's (h1) is 1, on h1's pids; input 3's (h2) is 2, on h2's */
		if (!strcmp(id, "1")) {
			GS_EXPECT_STR_EQ(pid, !strcmp(ph, "s") ? "100" : "0");
			GS_EXPECT_STR_EQ(field(&r, i, "ts"),
					 !strcmp(ph, "s") ? "1200.000" : "1300.000");
		} else if (GS_EXPECT_STR_EQ(id, "2")) {
			GS_EXPECT_STR_EQ(pid, !strcmp(ph, "s") ? "10000100" : "10000000");
		}
	}
	GS_EXPECT_EQ(flows, 4);
	/* a string id is not a number to move */
	GS_EXPECT_STR_EQ(field(&r, find(&r, "string id", "i"), "id"), "0x10");
	GS_EXPECT_STR_EQ(process_name(&r, "10000000"), "pid 0 on h2");
	GS_EXPECT_STR_EQ(process_name(&r, "0"), "pid 0 on h1");
out:
	result_free(&r);
}

/* one flow (s, f) and one async pair (b, e), each with its own name, per id given */
#define FLOW(name, id, ts)                                                 \
	",{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"" name "\",\"id\":" id \
	",\"pid\":100,\"tid\":101,\"ts\":" ts "}\n"                        \
	",{\"ph\":\"f\",\"cat\":\"ac2g\",\"name\":\"" name "\",\"id\":" id \
	",\"pid\":0,\"tid\":7,\"ts\":" ts ",\"bp\":\"e\"}\n"
#define ASYNC(name, id, ts)                                             \
	",{\"ph\":\"b\",\"cat\":\"a\",\"name\":\"" name "\",\"id\":" id \
	",\"pid\":100,\"tid\":101,\"ts\":" ts "}\n"                     \
	",{\"ph\":\"e\",\"cat\":\"a\",\"name\":\"" name "\",\"id\":" id \
	",\"pid\":100,\"tid\":101,\"ts\":" ts "}\n"

/*
 * gpusnoop's ac2g ids are process number << 32 | correlation id: process 256 of one input is
 * 2^40 + correlation, which adding the input's index times 2^40 would give input 1's
 * correlation ids too; ids of 2^40 and more collide the same way.
 */
static const char flows_in0[] =
	"{\"traceEvents\":[\n"
	"{\"ph\":\"i\",\"name\":\"first\",\"pid\":100,\"tid\":101,\"ts\":1}\n" FLOW(
		"in0 process 256", "1099511627777", "10") FLOW("in0 big", "2199023255557", "11")
		ASYNC("in0 async", "7", "12") META("h1", "1000000000000000000");
static const char flows_in1[] =
	"{\"traceEvents\":[\n"
	"{\"ph\":\"i\",\"name\":\"first\",\"pid\":100,\"tid\":101,\"ts\":1}\n" FLOW(
		"in1 process 0", "1", "20") FLOW("in1 big", "1099511627781", "21")
		ASYNC("in1 async", "7", "22") META("h1", "1000000000000000000");

/* the output id of the events named name (each of its phases, once), or NULL */
static const char *id_of(const struct result *r, const char *name, const char *phases)
{
	const char *id = NULL;
	size_t seen = 0;

	for (size_t i = 0; i < nr_events(r); i++) {
		const char *n = field(r, i, "name"), *ph = field(r, i, "ph");

		if (!n || strcmp(n, name))
			continue;
		if (!ph || !strchr(phases, ph[0]) || (id && strcmp(id, field(r, i, "id"))))
			return NULL;
		id = field(r, i, "id");
		seen++;
	}
	return seen == strlen(phases) ? id : NULL;
}

GS_TEST(flow_and_async_ids_of_two_inputs_never_meet)
{
	static const char *const names[] = { "in0 process 256", "in0 big", "in0 async",
					     "in1 process 0",	"in1 big", "in1 async" };
	const char *in[] = { flows_in0, flows_in1 };
	struct result r;

	stitch(&r, in, 2, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	/* every pair keeps one id of its own: 1, 2, ... in order of first appearance */
	for (size_t i = 0; i < 6; i++) {
		const char *id = id_of(&r, names[i], strstr(names[i], "async") ? "be" : "sf");
		char want[8];

		snprintf(want, sizeof(want), "%zu", i + 1);
		if (!GS_EXPECT(id != NULL))
			printf("  %s: no single id on both ends\n", names[i]);
		else
			GS_EXPECT_STR_EQ(id, want);
	}
out:
	result_free(&r);
}

GS_TEST(too_many_ids_is_one_clear_error)
{
	struct gs_stitch_opts opts = {
		.window_ns = 1000000,
		.same_boot_ns = GS_STITCH_DEFAULT_SAME_BOOT_NS,
		.max_ids = 5,
	};
	const char *in[] = { flows_in0, flows_in1 };
	struct result r;

	stitch(&r, in, 2, &opts);
	GS_EXPECT_EQ(r.ret, -E2BIG);
	GS_EXPECT_STR_EQ(r.err, "b.json: more than 5 distinct flow and async ids in all inputs");
	result_free(&r);
	opts.max_ids = 6;
	stitch(&r, in, 2, &opts);
	GS_EXPECT_EQ(r.ret, 0);
	result_free(&r);
}

GS_TEST(events_later_than_the_window_are_written_and_counted)
{
	/* window 1 ms: e4 comes 15 ms late, after e2 was written; e5 only 0.5 ms */
	static const char disordered[] =
		"{\"traceEvents\":[\n"
		"{\"ph\":\"X\",\"name\":\"e1\",\"pid\":1,\"tid\":1,\"ts\":10000,\"dur\":1},\n"
		"{\"ph\":\"X\",\"name\":\"e2\",\"pid\":1,\"tid\":1,\"ts\":20000,\"dur\":1},\n"
		"{\"ph\":\"X\",\"name\":\"e3\",\"pid\":1,\"tid\":1,\"ts\":30000,\"dur\":1},\n"
		"{\"ph\":\"X\",\"name\":\"e4\",\"pid\":1,\"tid\":1,\"ts\":15000,\"dur\":1},\n"
		"{\"ph\":\"X\",\"name\":\"e5\",\"pid\":1,\"tid\":1,\"ts\":29500,\"dur\":1}\n" META(
			"h1", "1000000000000000000");
	const char *in[] = { disordered };
	struct result r;

	stitch(&r, in, 1, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	GS_EXPECT_EQ(nr_events(&r), 5);
	GS_EXPECT_EQ(r.stats.late, 1); /* e4, still written, where it arrived */
	GS_EXPECT_STR_EQ(field(&r, 0, "name"), "e1");
	GS_EXPECT_STR_EQ(field(&r, 1, "name"), "e2");
	GS_EXPECT_STR_EQ(field(&r, 2, "name"), "e4");
	GS_EXPECT_STR_EQ(field(&r, 2, "ts"), "15000.000");
	GS_EXPECT_STR_EQ(field(&r, 3, "name"), "e5"); /* reordered within the window */
	GS_EXPECT_STR_EQ(field(&r, 4, "name"), "e3");
	GS_EXPECT_STR_EQ(YAJL_GET_NUMBER(get(get(r.doc, "metadata"), "late_events")), "1");
out:
	result_free(&r);
}

GS_TEST(malformed_inputs_name_file_and_offset)
{
	static const struct {
		const char *text;
		const char *err;
	} cases[] = {
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"pid\":1}",
		  "b.json: offset 41: premature EOF" },
		{ "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":\"soon\"}]}",
		  "b.json: offset 37: traceEvents[0]: \"ts\" is not a number" },
		{ "{\"traceEvents\":[]}", "b.json: offset 0: neither a gpusnoop trace (no "
					  "metadata.tool) nor a Kineto trace (no schemaVersion or "
					  "baseTimeNanoseconds)" },
		{ "{\"traceEvents\":[],\"metadata\":{\"tool\":\"gpusnoop\",\"host\":\"x\"}}",
		  "b.json: offset 60: gpusnoop metadata without monotonic_to_realtime_ns" },
		{ "{\"traceEvents\":[],\"schemaVersion\":1,\"baseTimeNanoseconds\":1.5}",
		  "b.json: offset 61: baseTimeNanoseconds is not an integer" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *in[] = { trace_a, cases[i].text };
		struct result r;

		stitch(&r, in, 2, NULL);
		GS_EXPECT_EQ(r.ret, -EINVAL);
		GS_EXPECT_STR_EQ(r.err, cases[i].err);
		/* pass 1 read everything first: nothing of the trace was written */
		GS_EXPECT_STR_EQ(r.text, "");
		result_free(&r);
	}
}

/* two ranks' gpusnoop traces with Kineto's top-level keys, as record -e gpu writes them */
static const char rank3[] =
	"{\"deviceProperties\":[{\"id\":0}],"
	"\"distributedInfo\":{\"rank\": 3, \"world_size\": 4},\"traceEvents\":[\n"
	"{\"ph\":\"X\",\"name\":\"r3\",\"pid\":100,\"tid\":100,\"ts\":1000.000,\"dur\":1}\n" META(
		"h1", "1000000000000000000");
static const char rank5[] =
	"{\"deviceProperties\":[{\"id\":1,\"name\":\"a, \\\"b]\"},{\"id\":0,\"name\":\"dup\"},"
	"{\"name\":\"no id\"}],\"distributedInfo\":{\"rank\":5,\"note\":\"x:y, z\"},"
	"\"traceEvents\":[\n"
	"{\"ph\":\"X\",\"name\":\"r5\",\"pid\":100,\"tid\":100,\"ts\":1000.000,\"dur\":1}\n" META(
		"h2", "2000000000000000000");

GS_TEST(ranks_keep_distributed_info_and_devices_by_id)
{
	const char *in[] = { rank3, rank5, kineto };
	yajl_val devs, dist;
	struct result r;

	stitch(&r, in, 3, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0)) {
		printf("  %s\n", r.err);
		goto out;
	}
	dist = get(r.doc, "distributedInfo");
	devs = get(r.doc, "deviceProperties");
	if (!GS_EXPECT(YAJL_IS_OBJECT(dist)) || !GS_EXPECT(YAJL_IS_ARRAY(devs)))
		goto out;
	/* the first input's, with the space HTA's "rank":\s+(\d+) needs */
	GS_EXPECT(strstr(r.text, "\"distributedInfo\":{\"rank\": 3, \"world_size\": 4}") != NULL);
	GS_EXPECT(strstr(r.text, "\"rank\": 5") == NULL);
	GS_EXPECT_EQ(dist->u.object.len, 2);
	/* device 0 from rank3, device 1 and the entry without an id from rank5; Kineto's 0 dup */
	GS_EXPECT(strstr(r.text, "\"deviceProperties\":[{\"id\":0},{\"id\":1,\"name\":\"a, "
				 "\\\"b]\"},{\"name\":\"no id\"}]") != NULL);
	GS_EXPECT_EQ(devs->u.array.len, 3);
	GS_EXPECT_STR_EQ(field(&r, find(&r, "r5", "X"), "name"), "r5");
	result_free(&r);
	/* rank5 first: its compact object gains the space after each key, its strings do not */
	in[0] = rank5;
	in[1] = rank3;
	stitch(&r, in, 2, NULL);
	if (!GS_EXPECT_EQ(r.ret, 0))
		goto out;
	GS_EXPECT(strstr(r.text, "\"distributedInfo\":{\"rank\": 5, \"note\": \"x:y, z\"}") !=
		  NULL);
out:
	result_free(&r);
}

GS_TEST(kineto_alone_is_refused)
{
	const char *in[] = { kineto };
	struct result r;

	stitch(&r, in, 1, NULL);
	GS_EXPECT_EQ(r.ret, -EINVAL);
	GS_EXPECT_STR_EQ(r.err, "a.json: a Kineto trace needs a gpusnoop trace to stitch to");
	result_free(&r);
}

GS_TEST(stop_flag_interrupts)
{
	static volatile sig_atomic_t stop = 1;
	struct gs_stitch_opts opts = { .window_ns = 1, .stop = &stop };
	const char *in[] = { trace_a };
	struct result r;

	stitch(&r, in, 1, &opts);
	GS_EXPECT_EQ(r.ret, -EINTR);
	GS_EXPECT_STR_EQ(r.err, "interrupted");
	result_free(&r);
}

GS_TEST_MAIN(one_host_keeps_its_timestamps_and_pids,
	     two_hosts_same_pid_become_two_processes_on_one_clock,
	     same_host_another_boot_is_another_clock,
	     an_input_older_than_the_first_host_moves_the_zero, kineto_lands_on_the_gpusnoop_clock,
	     kineto_offset_and_absolute_timestamps, kineto_clock_that_is_not_wall_clock_is_reported,
	     two_ranks_on_two_hosts_keep_their_processes_and_flows_apart,
	     flow_and_async_ids_of_two_inputs_never_meet, too_many_ids_is_one_clear_error,
	     events_later_than_the_window_are_written_and_counted,
	     malformed_inputs_name_file_and_offset, ranks_keep_distributed_info_and_devices_by_id,
	     kineto_alone_is_refused, stop_flag_interrupts)
