// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_cookie_keys.c: the 5.10 builds' probe cookies: written once, bounded, pruned per file. */
#include <errno.h>
#include "user/cookie_keys.h"
#include "tests/unit/harness.h"

static struct gs_cookie_key key(uint64_t dev, uint64_t ino, uint64_t off)
{
	return (struct gs_cookie_key){ .dev = dev, .ino = ino, .off = off };
}

GS_TEST(a_key_is_written_once_and_an_alias_rewrites_it)
{
	struct gs_cookie_keys *s = gs_cookie_keys__new(16);
	struct gs_cookie_key k = key(0x800001, 42, 0x1100);

	if (!GS_EXPECT(s))
		return;
	GS_EXPECT_EQ(gs_cookie_keys__add(s, &k, 7), 1);
	/* another process mapping the same file: nothing to write */
	GS_EXPECT_EQ(gs_cookie_keys__add(s, &k, 7), 0);
	GS_EXPECT_EQ(gs_cookie_keys__add(s, &k, 9), 1);
	GS_EXPECT_EQ(gs_cookie_keys__add(s, &k, 9), 0);
	GS_EXPECT_EQ(gs_cookie_keys__count(s), 1);
	gs_cookie_keys__free(s);
}

GS_TEST(bounded_by_the_maps_size)
{
	struct gs_cookie_keys *s = gs_cookie_keys__new(3);
	struct gs_cookie_key k;

	if (!GS_EXPECT(s))
		return;
	for (uint64_t off = 0; off < 3; off++) {
		k = key(1, 2, off);
		GS_EXPECT_EQ(gs_cookie_keys__add(s, &k, off + 1), 1);
	}
	k = key(1, 2, 3);
	GS_EXPECT_EQ(gs_cookie_keys__add(s, &k, 4), -ENOSPC);
	GS_EXPECT_EQ(gs_cookie_keys__count(s), 3);
	/* a write that failed is taken back: room again */
	k = key(1, 2, 1);
	gs_cookie_keys__remove(s, &k);
	gs_cookie_keys__remove(s, &k);
	GS_EXPECT_EQ(gs_cookie_keys__count(s), 2);
	k = key(1, 2, 3);
	GS_EXPECT_EQ(gs_cookie_keys__add(s, &k, 4), 1);
	gs_cookie_keys__free(s);
}

GS_TEST(a_file_no_longer_probed_gives_back_its_keys)
{
	struct gs_cookie_keys *s = gs_cookie_keys__new(64);
	struct gs_cookie_key out[4], k;
	size_t n, total = 0;

	if (!GS_EXPECT(s))
		return;
	/* libcudart (ino 10): 6 functions; libcuda (ino 11, same device): 2; ino 10 elsewhere */
	for (uint64_t off = 0; off < 6; off++) {
		k = key(5, 10, off * 16);
		gs_cookie_keys__add(s, &k, off);
	}
	k = key(5, 11, 0);
	gs_cookie_keys__add(s, &k, 1);
	k = key(5, 11, 16);
	gs_cookie_keys__add(s, &k, 2);
	k = key(6, 10, 0);
	gs_cookie_keys__add(s, &k, 3);
	/* at most max at a time: called again while it fills out */
	while ((n = gs_cookie_keys__take_file(s, 5, 10, out, 4))) {
		for (size_t i = 0; i < n; i++)
			GS_EXPECT(out[i].dev == 5 && out[i].ino == 10 && out[i].off % 16 == 0);
		total += n;
		if (n < 4)
			break;
	}
	GS_EXPECT_EQ(total, 6);
	GS_EXPECT_EQ(gs_cookie_keys__count(s), 3);
	GS_EXPECT_EQ(gs_cookie_keys__take_file(s, 5, 10, out, 4), 0);
	GS_EXPECT_EQ(gs_cookie_keys__take_file(s, 6, 10, out, 4), 1);
	GS_EXPECT_EQ(gs_cookie_keys__take_file(s, 5, 11, out, 4), 2);
	GS_EXPECT_EQ(gs_cookie_keys__count(s), 0);
	gs_cookie_keys__free(s);
	gs_cookie_keys__free(NULL);
}

GS_TEST_MAIN(a_key_is_written_once_and_an_alias_rewrites_it, bounded_by_the_maps_size,
	     a_file_no_longer_probed_gives_back_its_keys)
