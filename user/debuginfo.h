/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* debuginfo.h: symbols of stripped files from where gdb and perf find them. */
#ifndef GS_DEBUGINFO_H
#define GS_DEBUGINFO_H

struct gs_elf;

/*
 * Adds to elf, the symbols of the file open at fd (its path: path, NULL if unknown), the
 * .symtab of its separate debug information when elf has none of its own, from the first
 * of: /usr/lib/debug/.build-id/NN/REST.debug (the GNU build id); the .gnu_debuglink name
 * next to the file, in its .debug/ directory and under /usr/lib/debug/ + its directory (CRC
 * checked); its MiniDebugInfo (.gnu_debugdata, xz). Every file is parsed as untrusted, as
 * gs_elf__open_fd() does. Returns 1 if symbols were added, 0 if none were found, -errno.
 */
int gs_debuginfo__load(struct gs_elf *elf, int fd, const char *path);

/* The GNU build id of the ELF file at fd, in lowercase hex into hex[2 * 64 + 1]; 0 or -errno. */
int gs_debuginfo__build_id(int fd, char *hex);

/*
 * Adds to elf the .symtab of the debug file at fd (fetched from elsewhere: untrusted, parsed
 * as gs_elf__open_fd() does) if its build id is want. 1 if symbols were added, 0, -errno.
 */
int gs_debuginfo__merge(struct gs_elf *elf, int fd, const char *want);

/* Where debug files are looked for ("/usr/lib/debug"); tests point it elsewhere. */
void gs_debuginfo__set_root(const char *dir);

#endif /* GS_DEBUGINFO_H */
