// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_sym_search.c: the upper bound by address over any entry layout. */
#include <stddef.h>
#include <stdint.h>
#include "user/sym_search.h"
#include "tests/unit/harness.h"

struct sym {
	const char *name;
	uint64_t addr; /* not the first field: the offset is honoured */
	uint32_t size;
};

static const struct sym syms[] = {
	{ "a", 0x100, 16 },
	{ "b", 0x200, 16 },
	{ "b_alias", 0x200, 16 },
	{ "c", 0x300, 16 },
};

GS_TEST(counts_entries_at_or_below_the_address)
{
	GS_EXPECT_EQ(GS_SYM_SEARCH(syms, 4, addr, 0x0ff), 0);
	GS_EXPECT_EQ(GS_SYM_SEARCH(syms, 4, addr, 0x100), 1);
	GS_EXPECT_EQ(GS_SYM_SEARCH(syms, 4, addr, 0x1ff), 1);
	/* equal addresses: past the last of them */
	GS_EXPECT_EQ(GS_SYM_SEARCH(syms, 4, addr, 0x200), 3);
	GS_EXPECT_EQ(GS_SYM_SEARCH(syms, 4, addr, 0x300), 4);
	GS_EXPECT_EQ(GS_SYM_SEARCH(syms, 4, addr, UINT64_MAX), 4);
}

GS_TEST(empty_table_has_nothing_below)
{
	GS_EXPECT_EQ(gs_sym_search(NULL, 0, sizeof(struct sym), offsetof(struct sym, addr), 5), 0);
}

GS_TEST_MAIN(counts_entries_at_or_below_the_address, empty_table_has_nothing_below)
