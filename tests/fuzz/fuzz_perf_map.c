// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_perf_map.c: libFuzzer harness for the /tmp/perf-PID.map parser (user/perf_map.c). */
#include <fcntl.h>
#include <inttypes.h>
#include <unistd.h>
#include "tests/fuzz/fuzz.h"
#include "user/perf_map.h"

/* past the reader's 64 KiB chunk, so that lines straddle its reads */
#define FILE_MIN (80 * 1024)

/* Looks addr up; a hit must lie in its symbol, whose name is a readable string. */
static void lookup(struct gs_perf_map *map, uint64_t addr)
{
	uint64_t off = UINT64_MAX;
	const char *name = gs_perf_map__lookup(map, addr, &off);

	if (!name)
		return;
	GS_FUZZ_CHECK(off <= addr);
	GS_FUZZ_CHECK(strlen(name) < SIZE_MAX);
	GS_FUZZ_CHECK(gs_perf_map__lookup(map, addr - off, NULL) == name);
}

static void write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t done = write(fd, buf, len);

		if (done <= 0)
			abort();
		buf += done;
		len -= (size_t)done;
	}
}

/*
 * As gs_perf_map__update() meets a file a JIT is appending to: /tmp/perf-PID.map of this
 * process holding the input (repeated past a read chunk for some inputs), read once when
 * cut short and again once complete.
 */
static void fuzz_file(const uint8_t *data, size_t size)
{
	size_t total = size, cut = gs_fuzz_cut(data, size, 3);
	struct gs_perf_map *map;
	char path[64], *text;
	int fd;

	/* one in 16 of them: 80 KiB of parsing costs a hundred in-memory inputs */
	if (gs_fuzz_cut(data, size, 4) % 16 == 0)
		while (total < FILE_MIN)
			total += size;
	text = malloc(total);
	if (!text)
		abort();
	for (size_t off = 0; off < total; off += size)
		memcpy(text + off, data, size);
	cut = cut * (total / size);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	map = gs_perf_map__new();
	if (fd < 0 || !map)
		abort();
	write_all(fd, text, cut);
	gs_perf_map__update(map, getpid());
	write_all(fd, text + cut, total - cut);
	gs_perf_map__update(map, getpid());
	close(fd);
	unlink(path);
	lookup(map, gs_fuzz_u64(data, size, 0));
	lookup(map, gs_fuzz_u64(data, size, 8));
	gs_perf_map__free(map);
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	size_t cut = gs_fuzz_cut(data, size, 1);
	struct gs_perf_map *map = gs_perf_map__new();
	long used;
	char *s, *line;

	if (!map)
		return 0;
	/*
	 * As gs_perf_map__update() reads a file a JIT is still appending to: what ends in a
	 * line the first time, then the rest (from where it stopped) once it grew.
	 */
	used = gs_perf_map__add_text(map, text, cut);
	if (used < 0)
		goto out_free;
	GS_FUZZ_CHECK((size_t)used <= cut);
	GS_FUZZ_CHECK(!used || text[used - 1] == '\n');
	lookup(map, gs_fuzz_u64(data, size, 0));
	used = gs_perf_map__add_text(map, text + used, size - (size_t)used);
	if (used < 0)
		goto out_free;

	lookup(map, 0);
	lookup(map, UINT64_MAX);
	for (size_t off = 0; off < size && off < 64; off += 8)
		lookup(map, gs_fuzz_u64(data, size, off));
	/* at, inside and just past the start of each line's symbol */
	s = gs_fuzz_strdup(data, size);
	line = s;
	for (int i = 0; line && *line && i < 32; i++) {
		uint64_t start = strtoull(line, NULL, 16);

		lookup(map, start);
		lookup(map, start + 1);
		lookup(map, start - 1);
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	free(s);
out_free:
	gs_perf_map__free(map);
	/* a file's worth of system calls: one input in 16, chosen by a hash, not by its text */
	if (size && gs_fuzz_cut(data, size, 5) % 16 == 0)
		fuzz_file(data, size);
	return 0;
}
