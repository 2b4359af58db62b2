/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* fuzz.h: what every libFuzzer harness shares: the entry point and input helpers. */
#ifndef GS_FUZZ_H
#define GS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * A broken invariant is a crash, so libFuzzer keeps the input like any sanitizer report.
 * abort() rather than assert(): it holds with -DNDEBUG too.
 */
#define GS_FUZZ_CHECK(cond)                                                                      \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

/* The input as a C string (an embedded NUL ends it early); caller frees. */
static inline char *gs_fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * A position in [0, size] taken from the data itself, so that an input and its split are
 * replayed together: the same file is read in chunks cut in different places.
 */
static inline size_t gs_fuzz_cut(const uint8_t *data, size_t size, unsigned int salt)
{
	uint32_t h = 2166136261u ^ salt;

	if (!size)
		return 0;
	/* the first and last bytes: cheap, and each mutation of either moves the cut */
	h = (h ^ data[0]) * 16777619u;
	h = (h ^ data[size - 1]) * 16777619u;
	h = (h ^ (uint32_t)size) * 16777619u;
	return h % (size + 1);
}

/* Eight bytes at off (less at the end) as an address to look up. */
static inline uint64_t gs_fuzz_u64(const uint8_t *data, size_t size, size_t off)
{
	uint64_t v = 0;

	if (off < size)
		memcpy(&v, data + off, size - off < sizeof(v) ? size - off : sizeof(v));
	return v;
}

#endif /* GS_FUZZ_H */
