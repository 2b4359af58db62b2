// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_perf_map.c: libFuzzer harness for the /tmp/perf-PID.map parser (user/perf_map.c). */
#include <inttypes.h>
#include "tests/fuzz/fuzz.h"
#include "user/perf_map.h"

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
	return 0;
}
