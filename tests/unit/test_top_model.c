// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_top_model.c: `gpusnoop top`'s rows, rates, sort orders, keys and batch lines. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include "profilers/cuda/api.h"
#include "profilers/cuda/call.h"
#include "profilers/top_model.h"
#include "profilers/top_term.h"
#include "profilers/top_view.h"
#include "tests/unit/harness.h"

#define SEC 1000000000ULL

static const struct gs_cuda_api *api_named(const char *name)
{
	size_t nr;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr);

	for (size_t i = 1; i < nr; i++)
		if (!strcmp(apis[i].name, name))
			return &apis[i];
	return NULL;
}

static struct gs_cuda_call call_of(const char *name)
{
	struct gs_cuda_call e;

	memset(&e, 0, sizeof(e));
	e.api = api_named(name)->id;
	return e;
}

GS_TEST(calls_count_launches_syncs_and_successful_copies)
{
	struct gs_top_counts c = { 0 };
	struct gs_cuda_call launch = call_of("cudaLaunchKernel");
	struct gs_cuda_call sync = call_of("cudaStreamSynchronize");
	struct gs_cuda_call copy = call_of("cudaMemcpy");
	struct gs_cuda_call backwards = call_of("cudaDeviceSynchronize");

	gs_top_counts__add_call(&c, api_named("cudaLaunchKernel"), &launch);
	gs_top_counts__add_call(&c, api_named("cudaLaunchKernel"), &launch);
	sync.entry_ts_ns = 1000;
	sync.hdr.ts_ns = 3500;
	gs_top_counts__add_call(&c, api_named("cudaStreamSynchronize"), &sync);
	/* a return before its entry: a sync counted, no time */
	backwards.entry_ts_ns = 5000;
	backwards.hdr.ts_ns = 10;
	gs_top_counts__add_call(&c, api_named("cudaDeviceSynchronize"), &backwards);
	copy.args[2] = 1 << 20; /* cudaMemcpy(dst, src, count, kind) */
	copy.args[3] = 1;
	gs_top_counts__add_call(&c, api_named("cudaMemcpy"), &copy);
	copy.ret = 1; /* failed: no copy */
	gs_top_counts__add_call(&c, api_named("cudaMemcpy"), &copy);
	gs_top_counts__add_call(&c, NULL, &copy);
	GS_EXPECT_EQ(c.launches, 2);
	GS_EXPECT_EQ(c.syncs, 2);
	GS_EXPECT_EQ(c.sync_ns, 2500);
	GS_EXPECT_EQ(c.copies, 1);
	GS_EXPECT_EQ(c.copy_bytes, 1 << 20);
}

GS_TEST(rates_cover_the_interval_since_the_last_sample)
{
	struct gs_top_model m;
	struct gs_top_proc *p;

	gs_top_model__init(&m, 10 * SEC);
	p = gs_top_model__proc(&m, 42, true);
	if (!GS_EXPECT(p))
		return;
	GS_EXPECT_EQ(p->rank, -1);
	p->total.launches = 3000;
	p->total.sync_ns = SEC;
	p->total.copies = 14;
	gs_top_model__sample(&m, 12 * SEC);
	GS_EXPECT(p->launch_rate == 1500.0);
	GS_EXPECT(p->sync_rate == 0.5);
	GS_EXPECT(p->copy_rate == 7.0);
	/* nothing more happened: the next interval's rates are zero, the totals stay */
	gs_top_model__sample(&m, 13 * SEC);
	GS_EXPECT(p->launch_rate == 0.0);
	GS_EXPECT(p->sync_rate == 0.0);
	GS_EXPECT_EQ(p->total.launches, 3000);
	/* a sample at the same instant divides by nothing: rates are left as they were */
	p->total.launches += 10;
	gs_top_model__sample(&m, 13 * SEC);
	GS_EXPECT(p->launch_rate == 0.0);
	gs_top_model__release(&m);
}

GS_TEST(rows_sort_by_key_and_reverse_ties_by_pid)
{
	struct gs_top_model m;
	struct gs_top_proc *rows[4];
	pid_t pids[] = { 30, 10, 20 };
	uint64_t mem[] = { 100, 300, 100 };

	gs_top_model__init(&m, 0);
	for (int i = 0; i < 3; i++) {
		struct gs_top_proc *p = gs_top_model__proc(&m, pids[i], true);

		p->mem_bytes = mem[i];
		p->total.launches = (uint64_t)(i + 1) * 10;
	}
	gs_top_model__sample(&m, SEC);
	GS_EXPECT_EQ(gs_top_model__rows(&m, GS_TOP_SORT_MEM, false, rows, 4), 3);
	GS_EXPECT_EQ(rows[0]->pid, 10);
	GS_EXPECT_EQ(rows[1]->pid, 20); /* a tie: lower pid first */
	GS_EXPECT_EQ(rows[2]->pid, 30);
	GS_EXPECT_EQ(gs_top_model__rows(&m, GS_TOP_SORT_MEM, true, rows, 4), 3);
	GS_EXPECT_EQ(rows[0]->pid, 20);
	GS_EXPECT_EQ(rows[2]->pid, 10);
	GS_EXPECT_EQ(gs_top_model__rows(&m, GS_TOP_SORT_LAUNCHES, false, rows, 4), 3);
	GS_EXPECT_EQ(rows[0]->pid, 20); /* 30 launches/s */
	GS_EXPECT_EQ(rows[1]->pid, 10);
	/* idle now: equal rates, the totals decide */
	gs_top_model__proc(&m, 10, false)->total.launches += 1000;
	gs_top_model__sample(&m, 2 * SEC);
	gs_top_model__sample(&m, 3 * SEC);
	GS_EXPECT_EQ(gs_top_model__rows(&m, GS_TOP_SORT_LAUNCHES, false, rows, 4), 3);
	GS_EXPECT_EQ(rows[0]->pid, 10);
	GS_EXPECT_EQ(rows[1]->pid, 20);
	/* the first two only */
	GS_EXPECT_EQ(gs_top_model__rows(&m, GS_TOP_SORT_PID, true, rows, 2), 2);
	GS_EXPECT_EQ(rows[0]->pid, 10);
	GS_EXPECT_EQ(rows[1]->pid, 20);
	gs_top_model__proc(&m, 10, false)->gone = true;
	GS_EXPECT_EQ(gs_top_model__rows(&m, GS_TOP_SORT_PID, false, rows, 4), 3); /* shown once */
	gs_top_model__remove_gone(&m);
	GS_EXPECT(!gs_top_model__proc(&m, 10, false));
	GS_EXPECT_EQ(gs_top_model__proc(&m, 20, false)->mem_bytes, 100);
	GS_EXPECT_EQ(gs_top_model__rows(&m, GS_TOP_SORT_PID, false, rows, 4), 2);
	gs_top_model__release(&m);
}

GS_TEST(kernels_counted_by_name_capped_with_other)
{
	struct gs_top_model m;
	struct gs_top_proc *p;
	struct gs_top_kernel k[3];
	char name[32];

	gs_top_model__init(&m, 0);
	p = gs_top_model__proc(&m, 7, true);
	GS_EXPECT(!gs_top_proc__top_kernel(p));
	for (int i = 0; i < 10; i++)
		gs_top_proc__launch(p, "gemm");
	gs_top_proc__launch(p, "relu");
	gs_top_proc__launch(p, NULL);
	GS_EXPECT_STR_EQ(gs_top_proc__top_kernel(p)->name, "gemm");
	for (int i = 0; i < GS_TOP_MAX_KERNELS + 5; i++) {
		snprintf(name, sizeof(name), "k%d", i);
		gs_top_proc__launch(p, name);
	}
	GS_EXPECT_EQ(p->nr_kernels, GS_TOP_MAX_KERNELS);
	/* gemm, relu, [graph] and 61 of the new names were kept; 8 launches went to other */
	GS_EXPECT_EQ(p->other_kernel_launches, 8);
	GS_EXPECT_EQ(gs_top_proc__kernels(p, k, 3), 3);
	GS_EXPECT_STR_EQ(k[0].name, "gemm");
	GS_EXPECT_STR_EQ(k[1].name, GS_TOP_OTHER_KERNELS);
	GS_EXPECT_EQ(k[1].launches, 8);
	GS_EXPECT_STR_EQ(k[2].name, GS_TOP_GRAPH_KERNEL); /* ties by name: '[' before 'k' */
	gs_top_model__release(&m);
}

GS_TEST(sort_names_round_trip)
{
	for (int i = 0; i < GS_TOP_SORT__MAX; i++)
		GS_EXPECT_EQ(gs_top_sort_parse(gs_top_sort_name(i)), i);
	GS_EXPECT(gs_top_sort_parse("memory") < 0);
	GS_EXPECT(!gs_top_sort_name(GS_TOP_SORT__MAX));
}

GS_TEST(keys_parse_arrows_enter_and_escape)
{
	size_t used;

	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"q", 1, &used), 'q');
	GS_EXPECT_EQ(used, 1);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\033[A", 3, &used), GS_KEY_UP);
	GS_EXPECT_EQ(used, 3);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\033OB", 3, &used), GS_KEY_DOWN);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\033[6~x", 5, &used), GS_KEY_PGDN);
	GS_EXPECT_EQ(used, 4);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\033[1;5C", 6, &used), GS_KEY_NONE);
	GS_EXPECT_EQ(used, 6);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\033", 1, &used), GS_KEY_ESC);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\033[1", 3, &used), GS_KEY_ESC);
	GS_EXPECT_EQ(used, 1);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\r", 1, &used), GS_KEY_ENTER);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"\177", 1, &used), GS_KEY_BACKSPACE);
	GS_EXPECT_EQ(gs_top_key_parse((const unsigned char *)"", 0, &used), GS_KEY_NONE);
	GS_EXPECT_EQ(used, 0);
}

GS_TEST(bytes_fit_a_narrow_column)
{
	char buf[16];

	gs_top_format_bytes(0, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "0B");
	gs_top_format_bytes(8 << 20, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "8.0M");
	gs_top_format_bytes(1536, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "1.5K");
	gs_top_format_bytes(500ULL << 30, buf, sizeof(buf));
	GS_EXPECT_STR_EQ(buf, "500G");
	gs_top_format_bytes(UINT64_MAX, buf, sizeof(buf));
	GS_EXPECT(strlen(buf) <= 7);
}

GS_TEST(batch_lines_are_exact_and_blank_free)
{
	struct gs_top_model m;
	struct gs_top_screen s = { 0 };
	struct gs_top_view v = { .sort = GS_TOP_SORT_MEM, .iteration = 2 };
	struct gs_top_proc *p;
	char *second, *third;

	gs_top_model__init(&m, 0);
	p = gs_top_model__proc(&m, 1234, true);
	strcpy(p->comm, "a b\033[2J");
	p->rank = 3;
	p->mem_bytes = 8 << 20;
	p->total.launches = 4010;
	p->total.copies = 14;
	p->total.sync_ns = SEC / 2;
	gs_top_proc__launch(p, "gemm_kernel(float*, int)");
	gs_top_model__sample(&m, 2 * SEC);
	gs_top_screen__begin(&s, 0, 0, false);
	gs_top_view__batch(&s, &m, &v);
	gs_top_screen__end(&s);
	if (!GS_EXPECT(s.buf))
		return;
	second = strchr(s.buf, '\n') + 1;
	third = strchr(second, '\n') + 1;
	GS_EXPECT(!strncmp(s.buf, "gpusnoop top: iteration 2, 1 process, 0 events lost\n", 52));
	GS_EXPECT_STR_EQ(third,
			 "   1234    3 a\\x20b\\x1b[2J        8388608            -            - "
			 "       -      4010    2005.0    0.250      14     7.0    0 "
			 "gemm_kernel(float*, int)\n\n");
	GS_EXPECT(!strchr(s.buf, '\033'));
	gs_top_screen__release(&s);
	gs_top_model__release(&m);
}

GS_TEST(full_screen_lines_are_cut_to_the_width)
{
	struct gs_top_screen s = { 0 };

	gs_top_screen__begin(&s, 2, 5, true);
	gs_top_screen__line(&s, false, "%s", "h\xc3\xa9llo world");
	gs_top_screen__line(&s, true, "%s", "ab");
	gs_top_screen__line(&s, false, "%s", "past the last row");
	gs_top_screen__end(&s);
	GS_EXPECT_STR_EQ(s.buf, "\033[Hh\xc3\xa9llo\033[K\r\n\033[7mab   \033[0m\033[J");
	gs_top_screen__release(&s);
}

GS_TEST(table_scrolls_to_the_selected_row)
{
	struct gs_top_model m;
	struct gs_top_screen s = { 0 };
	struct gs_top_view v = { .sort = GS_TOP_SORT_PID, .reverse = true, .selected = 9 };

	gs_top_model__init(&m, 0);
	for (pid_t pid = 101; pid <= 104; pid++)
		strcpy(gs_top_model__proc(&m, pid, true)->comm, "w");
	gs_top_screen__begin(&s, 6, 200, true); /* four header lines, two rows */
	gs_top_view__table(&s, &m, &v);
	gs_top_screen__end(&s);
	GS_EXPECT_EQ(v.selected, 3); /* clamped to the last row */
	GS_EXPECT(!strstr(s.buf, "    102 "));
	GS_EXPECT(strstr(s.buf, "    103 "));
	GS_EXPECT(strstr(s.buf, "\033[7m    104 ")); /* selected: reverse video */
	GS_EXPECT_EQ(s.line, 6);
	gs_top_screen__release(&s);
	gs_top_model__release(&m);
}

/* A reader that does not read: the writer never blocks, the queue is bounded, drops counted. */
GS_TEST(output_never_blocks_on_a_full_pipe)
{
	static char chunk[64 << 10], sink[64 << 10];
	struct gs_top_out o;
	int fds[2];
	size_t got = 0;

	if (!GS_EXPECT(!pipe(fds)))
		return;
	memset(chunk, 'x', sizeof(chunk));
	if (!GS_EXPECT(!gs_top_out__open(&o, fds[1], 3 * sizeof(chunk))))
		return;
	GS_EXPECT(o.own_fd); /* its own non-blocking description */
	for (int i = 0; i < 3; i++) {
		GS_EXPECT_EQ(gs_top_out__put(&o, chunk, sizeof(chunk)), 0);
		GS_EXPECT_EQ(gs_top_out__flush(&o), 0); /* returns with the pipe full */
	}
	GS_EXPECT(gs_top_out__pending(&o) > 0);
	/* past the bound: dropped whole, counted */
	while (gs_top_out__put(&o, chunk, sizeof(chunk)) == 0)
		;
	GS_EXPECT_EQ(o.dropped, sizeof(chunk));
	GS_EXPECT(!(fcntl(fds[1], F_GETFL) & O_NONBLOCK)); /* the caller's stays blocking */
	while (gs_top_out__pending(&o)) {
		ssize_t n = read(fds[0], sink, sizeof(sink));

		if (!GS_EXPECT(n > 0))
			break;
		got += (size_t)n;
		GS_EXPECT_EQ(gs_top_out__flush(&o), 0);
	}
	/* nothing waits any more: all of it is in the pipe, read without blocking */
	while (got < 4 * sizeof(chunk)) {
		ssize_t n = read(fds[0], sink, sizeof(sink));

		if (!GS_EXPECT(n > 0))
			break;
		got += (size_t)n;
	}
	GS_EXPECT_EQ(got, 4 * sizeof(chunk)); /* the first went to the pipe, three waited */
	gs_top_out__close(&o);
	close(fds[0]);
	close(fds[1]);
}

GS_TEST(rows_capped_and_said_so)
{
	struct gs_top_model m;
	struct gs_top_screen s = { 0 };
	struct gs_top_view v = { .sort = GS_TOP_SORT_PID, .iteration = 1 };
	const char *want = "gpusnoop top: iteration 1, 4096 processes (more not shown: at most "
			   "4096 rows), 0 events lost\n";

	gs_top_model__init(&m, 0);
	for (pid_t pid = 1; pid <= GS_TOP_MAX_PROCS; pid++)
		GS_EXPECT(gs_top_model__proc(&m, pid, true));
	GS_EXPECT(!gs_top_model__proc(&m, GS_TOP_MAX_PROCS + 1, true));
	GS_EXPECT_EQ(m.refused, 1);
	gs_top_screen__begin(&s, 0, 0, false);
	gs_top_view__batch(&s, &m, &v);
	GS_EXPECT(!strncmp(s.buf, want, strlen(want)));
	gs_top_screen__release(&s);
	gs_top_model__release(&m);
}

GS_TEST_MAIN(rows_capped_and_said_so, output_never_blocks_on_a_full_pipe,
	     table_scrolls_to_the_selected_row, calls_count_launches_syncs_and_successful_copies,
	     rates_cover_the_interval_since_the_last_sample,
	     rows_sort_by_key_and_reverse_ties_by_pid, kernels_counted_by_name_capped_with_other,
	     sort_names_round_trip, keys_parse_arrows_enter_and_escape, bytes_fit_a_narrow_column,
	     batch_lines_are_exact_and_blank_free, full_screen_lines_are_cut_to_the_width)
