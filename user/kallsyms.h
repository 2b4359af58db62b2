/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* kallsyms.h: kernel addresses to function names, from /proc/kallsyms. */
#ifndef GS_KALLSYMS_H
#define GS_KALLSYMS_H

#include <stdint.h>

struct gs_kallsyms;

/* Reads path (normally /proc/kallsyms). Returns NULL with errno set; free with __free(). */
struct gs_kallsyms *gs_kallsyms__read(const char *path);
/*
 * Parses text in the format of /proc/kallsyms ("ADDR TYPE NAME[\t[MODULE]]" per line),
 * keeping the text symbols (t, T, w, W). Addresses shown as 0 (kptr_restrict) are dropped.
 * Returns NULL with errno set (EINVAL: no usable symbol).
 */
struct gs_kallsyms *gs_kallsyms__parse(const char *text);
void gs_kallsyms__free(struct gs_kallsyms *ks);

/*
 * The symbol covering addr: the one with the highest address <= addr. Its name (borrowed,
 * valid until __free()), addr's offset from it and its module (NULL: the kernel image).
 * NULL below the first symbol.
 */
const char *gs_kallsyms__lookup(const struct gs_kallsyms *ks, uint64_t addr, uint64_t *offset,
				const char **module);
uint64_t gs_kallsyms__count(const struct gs_kallsyms *ks);

#endif /* GS_KALLSYMS_H */
