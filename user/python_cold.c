// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_cold.c: finds the .cold part of the eval loop through its jumps and .eh_frame. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "user/python_cold.h"

#define MAX_EVAL_BYTES (64 << 10) /* the hot part is small; a larger one is not looked at */
#define MIN_COLD_BYTES (16 << 10) /* the loop's body is CPython's largest function */

/* The bytes at vaddr..+size of e's PROGBITS sections; NULL if not all there */
static const uint8_t *text_at(struct Elf *e, uint64_t vaddr, uint64_t size)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr - sh.sh_addr > sh.sh_size || size > sh.sh_addr + sh.sh_size - vaddr)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < sh.sh_size)
			return NULL;
		return (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr);
	}
	return NULL;
}

/*
 * .eh_frame_hdr's search table: (function start, FDE) pairs sorted by start, as int32
 * relative to the section (table encoding DW_EH_PE_datarel | sdata4, what GNU ld writes).
 */
struct fde_table {
	const uint8_t *pairs;
	uint64_t base; /* the section's address */
	uint32_t count;
};

static bool fde_table_of(struct Elf *e, struct fde_table *t)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;
		const uint8_t *h;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".eh_frame_hdr"))
			continue;
		d = elf_getdata(scn, NULL);
		h = d ? d->d_buf : NULL;
		/* version 1, eh_frame_ptr pcrel sdata4, count udata4, table datarel sdata4 */
		if (!h || d->d_size < 12 || h[0] != 1 || h[1] != 0x1b || h[2] != 0x03 ||
		    h[3] != 0x3b)
			return false;
		memcpy(&t->count, h + 8, sizeof(t->count));
		if (t->count > (d->d_size - 12) / 8)
			return false;
		t->pairs = h + 12;
		t->base = sh.sh_addr;
		return true;
	}
	return false;
}

static uint64_t fde_start(const struct fde_table *t, uint32_t i)
{
	int32_t rel;

	memcpy(&rel, t->pairs + (size_t)i * 8, sizeof(rel));
	return t->base + (int64_t)rel;
}

/* The function holding addr: from its start to the next one's (gaps count); false if none */
static bool fde_of(const struct fde_table *t, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	uint32_t a = 0, b = t->count;

	while (b - a > 1) {
		uint32_t mid = a + (b - a) / 2;

		if (fde_start(t, mid) <= addr)
			a = mid;
		else
			b = mid;
	}
	if (b >= t->count || fde_start(t, a) > addr)
		return false;
	*lo = fde_start(t, a);
	*hi = fde_start(t, b);
	return *lo < *hi;
}

int gs_py_find_eval_cold(struct Elf *e, uint64_t eval, uint64_t size, uint64_t *start,
			 uint64_t *cold_size)
{
	const uint8_t *code = size <= MAX_EVAL_BYTES ? text_at(e, eval, size) : NULL;
	struct fde_table t = { 0 };
	uint64_t best = 0, best_size = 0;

	if (!code || !fde_table_of(e, &t))
		return -ENOENT;
	/* jmp rel32 (e9) and jcc rel32 (0f 80..8f): bytes that look like one are checked too */
	for (uint64_t i = 0; i + 6 <= size; i++) {
		uint64_t at, lo, hi;
		int32_t rel;
		size_t len;

		if (code[i] == 0xe9)
			len = 5;
		else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80)
			len = 6;
		else
			continue;
		memcpy(&rel, code + i + len - 4, sizeof(rel));
		at = eval + i + len + (int64_t)rel;
		if ((at >= eval && at < eval + size) || !fde_of(&t, at, &lo, &hi))
			continue;
		if (hi - lo >= MIN_COLD_BYTES && hi - lo > best_size &&
		    (lo < eval || lo >= eval + size)) {
			best = lo;
			best_size = hi - lo;
		}
	}
	if (!best)
		return -ENOENT;
	*start = best;
	*cold_size = best_size;
	return 0;
}
