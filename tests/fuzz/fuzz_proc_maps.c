// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_proc_maps.c: libFuzzer harness for the /proc/PID/maps parser (user/proc_maps.c). */
#include "tests/fuzz/fuzz.h"
#include "user/proc_maps.h"

static void find(const struct gs_maps *maps, uint64_t addr)
{
	const struct gs_mapping *m = gs_maps__find(maps, addr);

	if (!m)
		return;
	GS_FUZZ_CHECK(m >= maps->mappings && m < maps->mappings + maps->nr);
	GS_FUZZ_CHECK(addr >= m->start && addr < m->end);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = gs_fuzz_strdup(data, size);
	struct gs_maps *maps = gs_maps__parse(4242, text);

	free(text);
	if (!maps)
		return 0;
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];

		/* the path a probe would open: unescaped, without its " (deleted)" */
		if (m->path) {
			GS_FUZZ_CHECK(m->path[0] == '/');
			GS_FUZZ_CHECK(strlen(m->path) <= size);
		}
		if (i >= 16)
			continue;
		find(maps, m->start);
		find(maps, m->end - 1);
		find(maps, m->end);
	}
	find(maps, 0);
	find(maps, UINT64_MAX);
	for (size_t off = 0; off < size && off < 64; off += 8)
		find(maps, gs_fuzz_u64(data, size, off));
	gs_maps__free(maps);
	return 0;
}
