// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_pickle_writer.c: the pickle encoder and the snapshot ring, read back by Python's pickle. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/snapshot_file.h"
#include "profilers/torch/accounting.h"
#include "profilers/torch/snapshot.h"
#include "tests/unit/harness.h"
#include "user/pickle_writer.h"
#include "user/stack_table.h"
#include "user/symcache.h"

/*
 * python3 reads path with an Unpickler that refuses every global (the careful reader's
 * setting) and runs check on the loaded object `d`; true when it printed "ok".
 */
static bool python_accepts(const char *path, const char *check)
{
	char script[64] = "/tmp/gs-test-pickle-py-XXXXXX", cmd[256], line[256] = "";
	int fd = mkstemp(script);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
	FILE *p;

	if (!f)
		return false;
	fprintf(f,
		"import pickle, sys\n"
		"class R(pickle.Unpickler):\n"
		"    def find_class(self, m, n):\n"
		"        raise pickle.UnpicklingError(\"global \" + m + \".\" + n)\n"
		"d = R(open(sys.argv[1], \"rb\")).load()\n"
		"%s\n"
		"print(\"ok\")\n",
		check);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "python3 %s %s 2>&1", script, path);
	p = popen(cmd, "r");
	while (p && fgets(line, sizeof(line), p) && strcmp(line, "ok\n"))
		fputs(line, stdout);
	if (p)
		pclose(p);
	unlink(script);
	return !strcmp(line, "ok\n");
}

static FILE *tmp_file(char *path, size_t len)
{
	int fd;

	snprintf(path, len, "/tmp/gs-test-pickle-XXXXXX");
	fd = mkstemp(path);
	return fd >= 0 ? fdopen(fd, "w+") : NULL;
}

GS_TEST(ints_of_every_width)
{
	static const int64_t ints[] = { 0,	   1,	      255,	 256,
					65535,	   65536,     -1,	 -128,
					-129,	   INT32_MIN, INT32_MAX, (int64_t)INT32_MAX + 1,
					INT64_MIN, INT64_MAX };
	struct gs_pickle pk;
	char path[64];
	FILE *f = tmp_file(path, sizeof(path));

	if (!GS_EXPECT(f))
		return;
	gs_pickle__begin(&pk, f);
	gs_pickle__list_begin(&pk);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		gs_pickle__int(&pk, ints[i]);
	gs_pickle__uint(&pk, UINT64_MAX);
	gs_pickle__uint(&pk, 0x7fffffffffffULL);
	gs_pickle__uint(&pk, 0x80000000ULL);
	gs_pickle__list_end(&pk);
	GS_EXPECT_EQ(gs_pickle__end(&pk), 0);
	fclose(f);
	GS_EXPECT(python_accepts(path, "assert d == [0, 1, 255, 256, 65535, 65536, -1, -128, "
				       "-129, -2**31, 2**31 - 1, 2**31, -2**63, 2**63 - 1, "
				       "2**64 - 1, 0x7fffffffffff, 0x80000000], d"));
	unlink(path);
}

GS_TEST(hostile_strings_stay_strings)
{
	/* quotes, newlines, NULs, pickle opcodes, invalid UTF-8, surrogates, overlong forms */
	static const struct {
		const char *s;
		size_t len;
	} in[] = {
		{ "'\"\n\r\\", 5 },
		{ "a\0b", 3 },
		{ "c__builtin__\nos.system\n(S'id'\ntR.", 33 },
		{ "\x80\x02X\xff\xff\xff\xff.", 8 },
		{ "\xed\xa0\x80", 3 },	   /* a surrogate */
		{ "\xc0\xaf", 2 },	   /* overlong '/' */
		{ "\xf4\x90\x80\x80", 4 }, /* past U+10FFFF */
		{ "\xe2\x82", 2 },	   /* cut short */
		{ "\xe2\x82\xac\xf0\x9f\x98\x80", 7 },
	};
	struct gs_pickle pk;
	char path[64];
	FILE *f = tmp_file(path, sizeof(path));

	if (!GS_EXPECT(f))
		return;
	gs_pickle__begin(&pk, f);
	gs_pickle__list_begin(&pk);
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		/* {"name": s, "pair": (i, [])}: keys memoized after their first use */
		gs_pickle__dict_begin(&pk);
		gs_pickle__key(&pk, "name");
		gs_pickle__str(&pk, in[i].s, in[i].len);
		gs_pickle__key(&pk, "pair");
		gs_pickle__int(&pk, (int64_t)i);
		gs_pickle__list_begin(&pk);
		gs_pickle__list_end(&pk);
		gs_pickle__tuple2(&pk);
		gs_pickle__dict_end(&pk);
	}
	gs_pickle__list_end(&pk);
	GS_EXPECT_EQ(gs_pickle__end(&pk), 0);
	fclose(f);
	GS_EXPECT(python_accepts(
		path, "F = \"\\ufffd\"\n"
		      "want = [\"\\x27\\x22\\n\\r\\\\\", \"a\\x00b\",\n"
		      "        \"c__builtin__\\nos.system\\n(S\\x27id\\x27\\ntR.\",\n"
		      "        F + \"\\x02X\" + F * 4 + \".\", F * 3, F * 2, F * 4, F * 2,\n"
		      "        \"\\u20ac\\U0001f600\"]\n"
		      "assert [x[\"name\"] for x in d] == want, d\n"
		      "assert [x[\"pair\"] for x in d] == [(i, []) for i in range(9)], d"));
	unlink(path);
	GS_EXPECT_EQ(gs_utf8_valid_len("\xe2\x82", 2), 6);
	GS_EXPECT_EQ(gs_utf8_valid_len("\xe2\x82\xac", 3), 3);
	GS_EXPECT_EQ(gs_utf8_valid_len("a\xff", 2), 4);
}

GS_TEST(each_hostile_string_decodes_as_written)
{
	static const char *const cases[][2] = {
		{ "'\"\n\r\\", "'\\\"\\n\\r\\\\" },
		{ "c__builtin__\nos.system\n(S'id'\ntR.",
		  "c__builtin__\\nos.system\\n(S'id'\\ntR." },
		{ "\x80\x02X\xff\xff\xff\xff.", "\\ufffd\\x02X\\ufffd\\ufffd\\ufffd\\ufffd." },
		{ "\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd" },
		{ "\xc0\xaf", "\\ufffd\\ufffd" },
		{ "\xe2\x82", "\\ufffd\\ufffd" },
	};
	char path[64], check[512];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_pickle pk;
		FILE *f = tmp_file(path, sizeof(path));

		if (!GS_EXPECT(f))
			return;
		gs_pickle__begin(&pk, f);
		gs_pickle__cstr(&pk, cases[i][0]);
		GS_EXPECT_EQ(gs_pickle__end(&pk), 0);
		fclose(f);
		snprintf(check, sizeof(check), "assert d == \"%s\", repr(d)", cases[i][1]);
		GS_EXPECT(python_accepts(path, check));
		unlink(path);
	}
}

GS_TEST(snapshot_ring_keeps_the_last_entries)
{
	struct gs_torch_snap s;
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *stacks = cache ? gs_stack_table__new(cache) : NULL;
	struct gs_snap_proc *p;
	char path[64];
	FILE *f;

	if (!GS_EXPECT(stacks))
		goto out;
	gs_torch_snap__init(&s, 5);
	for (uint64_t i = 1; i <= 8; i++) {
		struct gs_snap_entry e = {
			.ts_ns = i * 1000000,
			.addr = 0x7f0000000000ULL + i * 512,
			.size = 512,
			.dev = GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 1),
			.action = i % 2 ? GS_SNAP_ALLOC : GS_SNAP_FREE,
		};

		GS_EXPECT_EQ(gs_torch_snap__record(&s, 42, &e), 0);
	}
	p = gs_torch_snap__find(&s, 42);
	if (!GS_EXPECT(p))
		goto out_snap;
	GS_EXPECT_EQ(p->nr, 5);
	GS_EXPECT_EQ(p->dropped, 3);
	f = tmp_file(path, sizeof(path));
	if (!GS_EXPECT(f))
		goto out_snap;
	/* written: entries 5..8 (the snapshot's own mark pushed 4 out) and the mark */
	GS_EXPECT_EQ(gs_torch_snap__write(&s, 42, NULL, stacks, 9000000, f), 0);
	fclose(f);
	GS_EXPECT(python_accepts(
		path,
		"t = d[\"device_traces\"]\n"
		"assert d[\"segments\"] == [] and len(t) == 2 and t[0] == [{\"action\": "
		"\"snapshot\","
		" \"addr\": 0, \"size\": 0, \"stream\": 0, \"time_us\": t[0][0][\"time_us\"],"
		" \"frames\": []}], t\n"
		"a = [(e[\"action\"], e[\"addr\"] - 0x7f0000000000) for e in t[1]]\n"
		"assert a == [(\"alloc\", 5 * 512), (\"free_requested\", 6 * 512),"
		" (\"free_completed\", 6 * 512), (\"alloc\", 7 * 512), (\"free_requested\", 8 * "
		"512),"
		" (\"free_completed\", 8 * 512), (\"snapshot\", -0x7f0000000000)], a\n"
		"assert d[\"gpusnoop\"] == {\"pid\": 42, \"devices\": [\"cuda:0\", \"cuda:1\"],"
		" \"max_entries\": 5, \"trace_entries_dropped\": 4}, d[\"gpusnoop\"]"));
	unlink(path);
	gs_torch_snap__proc_gone(&s, 42, false);
	GS_EXPECT(!gs_torch_snap__find(&s, 42));
out_snap:
	gs_torch_snap__release(&s);
out:
	gs_stack_table__free(stacks);
	gs_symcache__free(cache);
}

static void add(struct gs_alloc_table *t, uint64_t ptr, uint64_t size, uint16_t key)
{
	struct gs_alloc a = { .ptr = ptr, .size = size, .ts_ns = 1, .api = key };
	bool replaced;

	GS_EXPECT_EQ(gs_alloc_table__insert(t, &a, &replaced), 0);
}

/*
 * Segments with what a missed free or a hostile size leaves: a block overlapping the one
 * before (left out), one running past its segment's end (cut there), one in no segment we
 * saw (a segment of its own, marked), a CPU tensor (a segment after the CUDA devices).
 */
GS_TEST(segments_tile_their_blocks)
{
	struct gs_torch_proc tp = { .pid = 43 };
	struct gs_torch_snap s;
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_stack_table *stacks = cache ? gs_stack_table__new(cache) : NULL;
	uint16_t cuda0 = GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 0);
	uint16_t cuda1 = GS_TORCH_DEV_KEY(GS_TORCH_DEV_CUDA, 1);
	char path[64];
	FILE *f;

	tp.blocks = gs_alloc_table__new();
	tp.segments = gs_alloc_table__new();
	gs_torch_snap__init(&s, 0);
	if (!GS_EXPECT(stacks && tp.blocks && tp.segments))
		goto out;
	add(tp.segments, 0x10000, 0x1000, cuda0);
	add(tp.blocks, 0x10000, 0x200, cuda0);
	add(tp.blocks, 0x10100, 0x200, cuda0);
	add(tp.blocks, 0x10800, 0x1000, cuda0);
	add(tp.blocks, 0x50000, 0x200, cuda1);
	add(tp.blocks, 0x90000, 100, GS_TORCH_DEV_KEY(GS_TORCH_DEV_CPU, 0));
	f = tmp_file(path, sizeof(path));
	if (!GS_EXPECT(f))
		goto out;
	GS_EXPECT_EQ(gs_torch_snap__write(&s, 43, &tp, stacks, 1000, f), 0);
	fclose(f);
	GS_EXPECT(python_accepts(
		path,
		"S = [(s[\"device\"], s[\"address\"], s[\"total_size\"], s[\"allocated_size\"],\n"
		"      [(b[\"address\"], b[\"size\"], b[\"state\"]) for b in s[\"blocks\"]],\n"
		"      [f[\"name\"] for f in s[\"frames\"]]) for s in d[\"segments\"]]\n"
		"A = \"active_allocated\"\n"
		"assert S == [(0, 0x10000, 0x1000, 0xa00, [(0x10000, 0x200, A),\n"
		"              (0x10200, 0x600, \"inactive\"), (0x10800, 0x800, A)], []),\n"
		"             (1, 0x50000, 0x200, 0x200, [(0x50000, 0x200, A)],\n"
		"              [\"<segment allocated before gpusnoop attached>\"]),\n"
		"             (2, 0x90000, 100, 100, [(0x90000, 100, A)], [])], S\n"
		"assert d[\"gpusnoop\"][\"devices\"] == [\"cuda:0\", \"cuda:1\", \"cpu\"], d"));
	unlink(path);
out:
	gs_torch_snap__release(&s);
	gs_alloc_table__free(tp.blocks);
	gs_alloc_table__free(tp.segments);
	gs_stack_table__free(stacks);
	gs_symcache__free(cache);
}

GS_TEST(numbered_file_names)
{
	char buf[64];

	GS_EXPECT_EQ(gs_snapshot_file_name("snap.pickle", 0, 2, buf, sizeof(buf)), 0);
	GS_EXPECT_STR_EQ(buf, "snap.2.pickle");
	GS_EXPECT_EQ(gs_snapshot_file_name("out.d/snap", 42, 0, buf, sizeof(buf)), 0);
	GS_EXPECT_STR_EQ(buf, "out.d/snap.42");
	GS_EXPECT_EQ(gs_snapshot_file_name("a/.snap", 42, 3, buf, sizeof(buf)), 0);
	GS_EXPECT_STR_EQ(buf, "a/.snap.42.3");
	GS_EXPECT_EQ(gs_snapshot_file_name("s.pickle", 0, 0, buf, sizeof(buf)), 0);
	GS_EXPECT_STR_EQ(buf, "s.pickle");
	GS_EXPECT_EQ(gs_snapshot_file_name("snap.pickle", 1234567, 1, buf, 12), -ENAMETOOLONG);
}

GS_TEST_MAIN(ints_of_every_width, hostile_strings_stay_strings,
	     each_hostile_string_decodes_as_written, snapshot_ring_keeps_the_last_entries,
	     segments_tile_their_blocks, numbered_file_names)
