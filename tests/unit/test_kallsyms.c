// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_kallsyms.c: parsing /proc/kallsyms text and looking kernel addresses up. */
#include <errno.h>
#include <stdint.h>
#include "tests/unit/harness.h"
#include "user/kallsyms.h"

static const char text[] = "ffffffff81000000 T _stext\n"
			   "ffffffff81000000 T _text\n"
			   "ffffffff81001000 t do_one_initcall\n"
			   "ffffffff81002000 D some_data\n"
			   "ffffffff81003000 W weak_fn\n"
			   "ffffffff81004000 T schedule\n"
			   "ffffffffc0201000 t ext4_readdir\t[ext4]\n"
			   "ffffffffc0202000 T nv_alloc\t[nvidia]\n"
			   "garbage line\n"
			   "\n";

GS_TEST(looks_up_covering_symbol)
{
	struct gs_kallsyms *ks = gs_kallsyms__parse(text);
	const char *mod = "x";
	uint64_t off = 99;

	if (!GS_EXPECT(ks))
		return;
	/* data (D) and junk are dropped: 7 text symbols */
	GS_EXPECT_EQ(gs_kallsyms__count(ks), 7);
	GS_EXPECT_STR_EQ(gs_kallsyms__lookup(ks, 0xffffffff81004123ULL, &off, &mod), "schedule");
	GS_EXPECT_EQ(off, 0x123);
	GS_EXPECT(mod == NULL);
	GS_EXPECT_STR_EQ(gs_kallsyms__lookup(ks, 0xffffffff81001fffULL, &off, NULL),
			 "do_one_initcall");
	GS_EXPECT_EQ(off, 0xfff);
	/* the data symbol at ...2000 is not a function: the one before it covers */
	GS_EXPECT_STR_EQ(gs_kallsyms__lookup(ks, 0xffffffff81002010ULL, &off, NULL),
			 "do_one_initcall");
	GS_EXPECT_STR_EQ(gs_kallsyms__lookup(ks, 0xffffffff81003000ULL, &off, NULL), "weak_fn");
	GS_EXPECT_EQ(off, 0);
	gs_kallsyms__free(ks);
}

GS_TEST(aliases_resolve_to_first_name)
{
	struct gs_kallsyms *ks = gs_kallsyms__parse(text);
	uint64_t off;

	if (!GS_EXPECT(ks))
		return;
	GS_EXPECT_STR_EQ(gs_kallsyms__lookup(ks, 0xffffffff81000010ULL, &off, NULL), "_stext");
	GS_EXPECT_EQ(off, 0x10);
	gs_kallsyms__free(ks);
}

GS_TEST(modules_and_bounds)
{
	struct gs_kallsyms *ks = gs_kallsyms__parse(text);
	const char *mod = NULL;
	uint64_t off;

	if (!GS_EXPECT(ks))
		return;
	GS_EXPECT_STR_EQ(gs_kallsyms__lookup(ks, 0xffffffffc0201004ULL, &off, &mod),
			 "ext4_readdir");
	GS_EXPECT_STR_EQ(mod, "ext4");
	GS_EXPECT_STR_EQ(gs_kallsyms__lookup(ks, 0xffffffffc0202008ULL, &off, &mod), "nv_alloc");
	GS_EXPECT_STR_EQ(mod, "nvidia");
	GS_EXPECT(gs_kallsyms__lookup(ks, 0xffffffff80000000ULL, &off, &mod) == NULL);
	gs_kallsyms__free(ks);
}

GS_TEST(hidden_addresses_are_no_symbols)
{
	/* what an unprivileged reader sees with kptr_restrict */
	struct gs_kallsyms *ks = gs_kallsyms__parse("0000000000000000 T _stext\n"
						    "0000000000000000 T schedule\n");

	GS_EXPECT(ks == NULL);
	GS_EXPECT_EQ(errno, EINVAL);
}

GS_TEST(reads_this_kernels_file)
{
	struct gs_kallsyms *ks = gs_kallsyms__read("/proc/kallsyms");

	/* without root every address reads as 0: then there is nothing to parse */
	if (!ks) {
		GS_EXPECT(errno == EINVAL || errno == EACCES);
		return;
	}
	GS_EXPECT(gs_kallsyms__count(ks) > 1000);
	gs_kallsyms__free(ks);
}

GS_TEST_MAIN(looks_up_covering_symbol, aliases_resolve_to_first_name, modules_and_bounds,
	     hidden_addresses_are_no_symbols, reads_this_kernels_file)
