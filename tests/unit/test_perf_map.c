// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_perf_map.c: perf map parsing, incremental re-reading, and JIT frames in the symbolizer. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
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

/*
 * JITs leave the file behind: perf reads it after the exit, and so does gpusnoop, checking
 * it against the owner it learnt while the process lived.
 */
GS_TEST(reads_what_a_gone_process_left)
{
	struct gs_perf_map *map = gs_perf_map__new();
	char path[64], want[64];
	int release[2] = { -1, -1 };
	uint64_t off;
	pid_t pid;
	int status;

	if (!GS_EXPECT(map) || !GS_EXPECT(pipe(release) == 0))
		goto out_free;
	pid = fork();
	if (pid == 0) {
		char c;

		close(release[1]);
		_exit(read(release[0], &c, 1) < 0);
	}
	close(release[0]);
	if (!GS_EXPECT(pid > 0))
		goto out_free;
	/* seen living: no map yet, but its owner is known from now on */
	GS_EXPECT_EQ(gs_perf_map__update(map, pid), -ENOENT);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	GS_EXPECT_EQ(write_file(path, "w", "5000 10 left_behind\n"), 0);
	close(release[1]);
	release[1] = -1;
	if (!GS_EXPECT(waitpid(pid, &status, 0) == pid))
		goto out_unlink;
	GS_EXPECT_EQ(gs_perf_map__update(map, pid), 0);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x5005, &off), "left_behind");
	GS_EXPECT_EQ(off, 5);
	snprintf(want, sizeof(want), "/tmp/perf-%d.map", (int)pid);
	GS_EXPECT_STR_EQ(gs_perf_map__path(map), want);
out_unlink:
	unlink(path);
out_free:
	if (release[1] >= 0)
		close(release[1]);
	gs_perf_map__free(map);
}

/* One symbol line per start address: "%x 1 sN\n". */
static char *many_lines(size_t nr, size_t *len)
{
	char *text = malloc(nr * 24), *p = text;

	if (!text)
		return NULL;
	for (size_t i = 0; i < nr; i++)
		p += sprintf(p, "%zx 1 s%zu\n", 0x1000 + i, i);
	*len = (size_t)(p - text);
	return text;
}

GS_TEST(entries_are_bounded)
{
	struct gs_perf_map *map = gs_perf_map__new();
	size_t len, nr = GS_PERF_MAP_MAX_ENTRIES + 1000;
	char *text = many_lines(nr, &len);
	char want[32];

	if (!GS_EXPECT(map && text))
		goto out;
	/* all of it is consumed, only the first GS_PERF_MAP_MAX_ENTRIES are kept */
	GS_EXPECT_EQ(gs_perf_map__add_text(map, text, len), (long)len);
	GS_EXPECT_EQ(gs_perf_map__count(map), GS_PERF_MAP_MAX_ENTRIES);
	snprintf(want, sizeof(want), "s%lu", GS_PERF_MAP_MAX_ENTRIES - 1);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x1000 + GS_PERF_MAP_MAX_ENTRIES - 1, NULL),
			 want);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x1000 + GS_PERF_MAP_MAX_ENTRIES, NULL), NULL);
	/* and more later is ignored too */
	GS_EXPECT_EQ(gs_perf_map__add_text(map, "ffff0000 10 late\n", 17), 17);
	GS_EXPECT_EQ(gs_perf_map__count(map), GS_PERF_MAP_MAX_ENTRIES);
out:
	free(text);
	gs_perf_map__free(map);
}

GS_TEST(long_lines_and_garbage_are_skipped)
{
	struct gs_perf_map *map = gs_perf_map__new();
	static char text[3 * GS_PERF_MAP_MAX_LINE];
	char *p = text;
	long used;

	if (!GS_EXPECT(map))
		return;
	/* a line of exactly GS_PERF_MAP_MAX_LINE bytes is kept, one byte more is not */
	p += sprintf(p, "1000 10 ");
	memset(p, 'a', GS_PERF_MAP_MAX_LINE - 8);
	p += GS_PERF_MAP_MAX_LINE - 8;
	*p++ = '\n';
	p += sprintf(p, "2000 10 ");
	memset(p, 'b', GS_PERF_MAP_MAX_LINE - 7);
	p += GS_PERF_MAP_MAX_LINE - 7;
	*p++ = '\n';
	/* numbers too long, sizes that wrap, no separators, binary noise, an embedded NUL */
	p += sprintf(p, "10000000000000000 10 seventeen_digits\n");
	p += sprintf(p, "ffffffffffffff00 100 wraps\n");
	p += sprintf(p, "3000\t10\ttabs\n \n\n0x 10 x\n4000 0x 5\n\x01\xff\xfe\x80\n");
	memcpy(p, "5000 10 nul\0after\n", 18);
	p += 18;
	p += sprintf(p, "6000 10 \xff\xfe\x1b[31m\n");
	used = gs_perf_map__add_text(map, text, (size_t)(p - text));
	GS_EXPECT_EQ(used, p - text);
	GS_EXPECT_EQ(gs_perf_map__count(map), 3);
	GS_EXPECT_EQ(strlen(gs_perf_map__lookup(map, 0x1000, NULL)), GS_PERF_MAP_MAX_LINE - 8);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x2000, NULL), NULL);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x5000, NULL), "nul");
	/* names are kept as the bytes they are: escaping is each output's business */
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x6000, NULL), "\xff\xfe\x1b[31m");
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0xffffffffffffff00, NULL), NULL);
	gs_perf_map__free(map);
}

/* A line longer than a read chunk, still without its newline, is skipped across reads. */
GS_TEST(a_huge_line_in_the_file_is_skipped)
{
	struct gs_perf_map *map = gs_perf_map__new();
	char path[64];
	FILE *f;

	if (!GS_EXPECT(map))
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!GS_EXPECT(f))
		goto out;
	fputs("1000 10 before\n7000 10 ", f);
	for (int i = 0; i < 200 * 1024; i++)
		fputc('x', f);
	GS_EXPECT_EQ(fclose(f), 0);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_EQ(gs_perf_map__count(map), 1);
	/* the rest of the long line, then good ones */
	GS_EXPECT_EQ(write_file(path, "a", "xxxx\n2000 10 after\n"), 0);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_EQ(gs_perf_map__count(map), 2);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x2000, NULL), "after");
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x7000, NULL), NULL);
out:
	unlink(path);
	gs_perf_map__free(map);
}

/* What was read is not read again: bytes rewritten in place before the end stay unseen. */
GS_TEST(reads_only_past_what_was_read)
{
	struct gs_perf_map *map = gs_perf_map__new();
	char path[64];

	if (!GS_EXPECT(map))
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if (!GS_EXPECT_EQ(write_file(path, "w", "1000 10 a\n"), 0))
		goto out;
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	/* same inode, same first line length: "r+" writes over it */
	GS_EXPECT_EQ(write_file(path, "r+", "2000 10 b\n"), 0);
	GS_EXPECT_EQ(write_file(path, "a", "3000 10 c\n"), 0);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x1000, NULL), "a");
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x2000, NULL), NULL);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x3000, NULL), "c");
out:
	unlink(path);
	gs_perf_map__free(map);
}

/* A 1 GiB sparse file: 64 MiB are read in chunks, not 1 GiB into memory; the rest ignored. */
GS_TEST(a_huge_file_is_read_only_up_to_the_bound)
{
	struct gs_perf_map *map = gs_perf_map__new();
	struct rusage before, after;
	char path[64], line[64];
	int fd = -1;

	if (!GS_EXPECT(map))
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (!GS_EXPECT(fd >= 0))
		goto out;
	snprintf(line, sizeof(line), "\n8000 10 beyond_the_bound\n");
	if (!GS_EXPECT(pwrite(fd, line, strlen(line), 1L << 30) == (ssize_t)strlen(line)))
		goto out;
	getrusage(RUSAGE_SELF, &before);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	getrusage(RUSAGE_SELF, &after);
	GS_EXPECT_EQ(gs_perf_map__count(map), 0);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x8000, NULL), NULL);
	/* ru_maxrss is in KiB; reading it whole took the full GiB */
	GS_EXPECT(after.ru_maxrss - before.ru_maxrss < 16 * 1024);
	/* nothing more is read, however often it is asked */
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_EQ(gs_perf_map__count(map), 0);
out:
	if (fd >= 0)
		close(fd);
	unlink(path);
	gs_perf_map__free(map);
}

/* Whatever the path names, only a regular file owned by the process's user is read. */
GS_TEST(refuses_symlinks_fifos_and_foreign_files)
{
	struct gs_perf_map *map = gs_perf_map__new();
	char path[64], target[64];
	pid_t child;
	int status;

	if (!GS_EXPECT(map))
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	snprintf(target, sizeof(target), "/tmp/gs-perf-map-target-%d", (int)getpid());
	unlink(path);
	/* a symlink to a file of the right shape */
	if (!GS_EXPECT_EQ(write_file(target, "w", "1000 10 secret\n"), 0))
		goto out;
	if (!GS_EXPECT(symlink(target, path) == 0))
		goto out;
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), -EPERM);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x1000, NULL), NULL);
	unlink(path);

	/* a FIFO with no writer: refused at once, never read (in a child: a hang fails) */
	if (!GS_EXPECT(mkfifo(path, 0600) == 0))
		goto out;
	child = fork();
	if (child == 0) {
		alarm(10);
		_exit(gs_perf_map__update(map, getppid()) == -EPERM ? 0 : 1);
	}
	if (GS_EXPECT(child > 0) && GS_EXPECT(waitpid(child, &status, 0) == child))
		GS_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unlink(path);

	/* a regular file of another user (root can make one) */
	if (getuid() == 0) {
		if (!GS_EXPECT_EQ(write_file(path, "w", "1000 10 foreign\n"), 0))
			goto out;
		GS_EXPECT(chown(path, 65534, 65534) == 0);
		GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), -EPERM);
		GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x1000, NULL), NULL);
		unlink(path);
	}

	/* the same content, the process's own file: read */
	GS_EXPECT_EQ(write_file(path, "w", "1000 10 own\n"), 0);
	GS_EXPECT_EQ(gs_perf_map__update(map, getpid()), 0);
	GS_EXPECT_STR_EQ(gs_perf_map__lookup(map, 0x1000, NULL), "own");
out:
	unlink(path);
	unlink(target);
	gs_perf_map__free(map);
}

/*
 * resolve() reads on a miss, but an address looked for after the last read is not looked for
 * again at once: only a new address, or a second later, reads what was appended.
 */
GS_TEST(resolve_rereads_once_per_missed_address)
{
	struct gs_perf_map *map = gs_perf_map__new();
	struct timespec t0, t1;
	const char *again;
	char path[64];
	uint64_t off;

	if (!GS_EXPECT(map))
		return;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	if (!GS_EXPECT_EQ(write_file(path, "w", "1000 10 one\n"), 0))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	GS_EXPECT_STR_EQ(gs_perf_map__resolve(map, getpid(), 0x1004, &off), "one");
	GS_EXPECT_STR_EQ(gs_perf_map__resolve(map, getpid(), 0x2004, &off), NULL);
	GS_EXPECT_EQ(write_file(path, "a", "2000 10 two\n3000 10 three\n"), 0);
	/* 0x2004 was looked for after the last read: not again yet (unless a second passed) */
	again = gs_perf_map__resolve(map, getpid(), 0x2004, &off);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (t1.tv_sec - t0.tv_sec < 1 || (t1.tv_sec - t0.tv_sec == 1 && t1.tv_nsec < t0.tv_nsec))
		GS_EXPECT_STR_EQ(again, NULL);
	/* a new address reads what was appended, which names the other one too */
	GS_EXPECT_STR_EQ(gs_perf_map__resolve(map, getpid(), 0x3004, &off), "three");
	GS_EXPECT_STR_EQ(gs_perf_map__resolve(map, getpid(), 0x2004, &off), "two");
	GS_EXPECT_EQ(off, 4);
out:
	unlink(path);
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
	     reads_what_a_gone_process_left, entries_are_bounded,
	     long_lines_and_garbage_are_skipped, a_huge_line_in_the_file_is_skipped,
	     reads_only_past_what_was_read, a_huge_file_is_read_only_up_to_the_bound,
	     refuses_symlinks_fifos_and_foreign_files, resolve_rereads_once_per_missed_address,
	     symcache_names_jit_frames)
