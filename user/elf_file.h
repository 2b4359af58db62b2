/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* elf_file.h: the function symbols and load segments of one ELF file (libelf). */
#ifndef GS_ELF_FILE_H
#define GS_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gs_elf;
struct Elf;

/*
 * Reads .symtab and .dynsym of the file open at fd (left open, position unchanged; a
 * descriptor from gs_mapping__open() for another process's files). Returns NULL with errno
 * set; free with gs_elf__free().
 */
struct gs_elf *gs_elf__open_fd(int fd);
/* gs_elf__open_fd() of path: only for files gpusnoop chose itself (the command it runs). */
struct gs_elf *gs_elf__open(const char *path);
/*
 * elf_begin() for reading fd: mapped when only root can change the file, else read
 * through fd (a truncation under a mapping would raise SIGBUS). fd must outlive the Elf.
 */
struct Elf *gs_elf_begin(int fd);
void gs_elf__free(struct gs_elf *elf);

/* Whether the file had a .symtab of functions (or one was merged in). */
bool gs_elf__has_symtab(const struct gs_elf *elf);
/*
 * Adds the functions of e's .symtab (a separate debug file of the same link: the same
 * addresses). Returns 1 if any were added, 0 if none, -ENOMEM (then some may be added).
 */
int gs_elf__merge_symtab(struct gs_elf *elf, struct Elf *e);

/* Virtual address of the function named name (exact, unversioned), or 0. */
uint64_t gs_elf__find_function(const struct gs_elf *elf, const char *name);
/* Conversions between file offsets and link-time virtual addresses; 0 on success. */
int gs_elf__vaddr_to_offset(const struct gs_elf *elf, uint64_t vaddr, uint64_t *offset);
int gs_elf__offset_to_vaddr(const struct gs_elf *elf, uint64_t offset, uint64_t *vaddr);

/*
 * The function symbol covering vaddr: its demangled name (borrowed, valid until
 * gs_elf__free()) and vaddr's distance from its start. NULL when no symbol covers it.
 */
const char *gs_elf__symbolize(struct gs_elf *elf, uint64_t vaddr, uint64_t *sym_offset);

/*
 * nvcc caches each kernel's CUDA 13 handle in a local static of its device stub,
 * `__device_stub__<kernel>::__handle` (mangled _ZZ<n>__device_stub__...E8__handle): where
 * that static is and which kernel (mangled) it belongs to. Only in files with a .symtab.
 */
struct gs_elf_kernel_handle {
	uint64_t vaddr;
	char *kernel;
};
size_t gs_elf__kernel_handles(const struct gs_elf *elf, const struct gs_elf_kernel_handle **out);

/*
 * Calls fn for every function symbol (mangled name, link-time address), in address order,
 * until it returns non-zero; returns that value, or 0.
 */
int gs_elf__for_each_function(const struct gs_elf *elf,
			      int (*fn)(const char *name, uint64_t vaddr, void *ctx), void *ctx);

/* PT_INTERP of an executable (borrowed), or NULL. */
const char *gs_elf__interp(const struct gs_elf *elf);
size_t gs_elf__nr_symbols(const struct gs_elf *elf);

#endif /* GS_ELF_FILE_H */
