/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* dynsym.h: a few exported functions of a large library, found in its .dynsym alone. */
#ifndef GS_TORCH_DYNSYM_H
#define GS_TORCH_DYNSYM_H

#include <stddef.h>
#include <stdint.h>

/*
 * The file offsets of the functions named names[0..n) among the exports (.dynsym) of the
 * ELF file fd, 0 where absent; the .symtab is never read. libtorch_cpu.so holds half a
 * million symbols: parsing them all to probe two functions took 400 MB and seconds. Returns
 * 0, or -errno (not an ELF file, unreadable).
 */
int gs_dynsym_offsets(int fd, const char *const *names, size_t n, uint64_t *offsets);

#endif /* GS_TORCH_DYNSYM_H */
