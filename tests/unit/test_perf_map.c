// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_perf_map.c: perf map parsing, incremental re-reading, and JIT frames in the symbolizer. */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/perf_map.h"
#include "user/symcache.h"

static const char text[] = "7f0000001000 40 py::train_step:/src/train.py\n"
			   "0x7f0000002000 0x10 LazyCompile:~add /app/x.js:3\n"
			   "not a line\n"
			   "7f0000003000 0 zero_size\n"
			   "7f0000004000 20\n"
			   "7f0000001000 8 recompiled\n"
			   "7f0000005000 10 partial_li";

GS_TEST(parses_lines_and_keeps_the_partial_one)
{
	struct gs_perf_map *map = gs_perf_map__new();
	uint64_t off = 0;
	long used;

	if (!GS_EXPECT(map))
		return;
	used = gs_perf_map__add_text(map, text, sizeof(text) - 1);
	/* everything up to the last newline; "partial_li" is read again once complete */
	GS_EXPECT_EQ(used, strrchr(text, '\n') + 1 - text);
	GS_EXPECT_EQ(gs_perf_map__count(map), 3);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f0000002000, &off),
			 "LazyCompile:~add /app/x.js:3");
	GS_EXPECT_EQ(off, 0);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f000000200f, &off),
			 "LazyCompile:~add /app/x.js:3");
	GS_EXPECT_EQ(off, 0xf);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f0000002010, &off), NULL);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f0000000fff, &off), NULL);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f0000003000, &off), NULL);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f0000004000, &off), NULL);
	/* the later line for the same start wins, with its own size */
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f0000001004, &off), "recompiled");
	GS_EXPECT_EQ(off, 4);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7f0000001020, &off), NULL);
	gs_perf_map__free(map);
}

static int write_file(const char *path, const char *mode, const char *s)
{
	FILE *f = fopen(path, mode);

	if (!f)
		return -errno;
	fputs(s, f);
	return fclose(f) ? -errno : 0;
}

GS_TEST(rereads_only_what_was_appended)
{
	struct gs_perf_map *map = gs_perf_map__new();
	char path[64], want[64];
	uint64_t off;

	if (!GS_EXPECT(map))
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	unlink(path);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), -ENOENT);
	GS_EXPECT_STR_EQ(gs_perf_map__path(map), NULL);

	if (!GS_EXPECT_EQ(write_file(path, "w", "1000 10 first\n2000 10 sec"), 0))
		goto out;
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_EQ(gs_perf_map__count(map), 1);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x2000, &off), NULL);
	snprintf(want, sizeof(want), "/tmp/perf-%d.map", (int)getpid());
	GS_EXPECT_STR_EQ(gs_perf_map__path(map), want);

	/* the JIT finishes the line and appends another */
	GS_EXPECT_EQ(write_file(path, "a", "ond\n3000 10 third\n"), 0);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_EQ(gs_perf_map__count(map), 3);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x2008, &off), "second");
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x3000, &off), "third");
	/* unchanged: nothing read, nothing added */
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_EQ(gs_perf_map__count(map), 3);

	/* a new, shorter file (the process restarted its JIT): starts over */
	unlink(path);
	GS_EXPECT_EQ(write_file(path, "w", "4000 10 new\n"), 0);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_EQ(gs_perf_map__count(map), 1);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x1000, &off), NULL);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x4000, &off), "new");
out:
	unlink(path);
	gs_perf_map__free(map);
}

/* JITs leave the file behind: perf reads it after the exit, and so does gpusnoop. */
GS_TEST(reads_what_a_gone_process_left)
{
	struct gs_perf_map *map = gs_perf_map__new();
	char path[64], want[64];
	uint64_t off;
	pid_t pid;
	int status;

	if (!GS_EXPECT(map))
		return;
	pid = fork();
	if (pid == 0)
		_exit(0);
	if (!GS_EXPECT(pid > 0) || !GS_EXPECT(waitpid(pid, &status, 0) == pid))
		goto out_free;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	if (!GS_EXPECT_EQ(write_file(path, "w", "5000 10 left_behind\n"), 0))
		goto out_free;
	GS_EXPECT_EQ(gs_perf_map__update(map, pid), 0);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x5005, &off), "left_behind");
	GS_EXPECT_EQ(off, 5);
	snprintf(want, sizeof(want), "/tmp/perf-%d.map", (int)pid);
	GS_EXPECT_STR_EQ(gs_perf_map__path(map), want);
	unlink(path);
out_free:
	gs_perf_map__free(map);
}

/* Code in an anonymous executable mapping of this process, named by its perf map. */
GS_TEST(symcache_names_jit_frames)
{
	struct gs_symcache *cache = gs_symcache__new();
	void *code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t base = (uint64_t)(uintptr_t)code;
	char path[64], line[128];
	struct gs_frame f;

	if (!GS_EXPECT(cache && code != MAP_FAILED))
		goto out;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(line, sizeof(line), "%" PRIx64 " 100 jit_one\n", base);
	if (!GS_EXPECT_EQ(write_file(path, "w", line), 0))
		goto out;
	gs_symcache__resolve(cache, getpid(), base + 0x10, &f);
	GS_EXPECT_STR_EQ(f.symbol, "jit_one");
	GS_EXPECT_EQ(f.offset, 0x10);
	GS_EXPECT_STR_EQ(f.module, path);
	GS_EXPECT_EQ(f.address, base + 0x10);

	/* not named yet: no symbol, no module, the address as offset */
	gs_symcache__resolve(cache, getpid(), base + 0x1000, &f);
	GS_EXPECT_STR_EQ(f.symbol, NULL);
	GS_EXPECT_STR_EQ(f.module, NULL);
	GS_EXPECT_EQ(f.offset, base + 0x1000);

	/* compiled later: the grown file is read again */
	snprintf(line, sizeof(line), "%" PRIx64 " 200 jit_two\n", base + 0x1000);
	GS_EXPECT_EQ(write_file(path, "a", line), 0);
	gs_symcache__resolve(cache, getpid(), base + 0x1008, &f);
	GS_EXPECT_STR_EQ(f.symbol, "jit_two");
	GS_EXPECT_EQ(f.offset, 8);

	/* forgotten with the process: a new snapshot reads the file afresh */
	gs_symcache__forget(cache, getpid());
	unlink(path);
	gs_symcache__resolve(cache, getpid(), base + 0x10, &f);
	GS_EXPECT_STR_EQ(f.symbol, NULL);
out:
	unlink(path);
	if (code != MAP_FAILED)
		munmap(code, 8192);
	gs_symcache__free(cache);
}

GS_TEST_MAIN(parses_lines_and_keeps_the_partial_one, rereads_only_what_was_appended,
	     reads_what_a_gone_process_left, symcache_names_jit_frames)
