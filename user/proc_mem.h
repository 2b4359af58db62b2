/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_mem.h: read a target's memory as its mapped files hold it, or through /proc/PID/mem. */
#ifndef GS_PROC_MEM_H
#define GS_PROC_MEM_H

#include <stddef.h>
#include <stdint.h>

struct gs_maps;

/*
 * Reads the NUL-terminated string at addr into buf (truncated to len - 1). An address in a
 * read-only file mapping is read from the file: its page may not be faulted in yet, which
 * defeats bpf_probe_read_user (notes §4); other memory through /proc/PID/mem. Returns 0 or
 * -errno.
 */
int gs_read_process_string(const struct gs_maps *maps, uint64_t addr, char *buf, size_t len);
/* Reads len bytes at addr the same way. Returns 0 or -errno. */
int gs_read_process_memory(const struct gs_maps *maps, uint64_t addr, void *buf, size_t len);

#endif /* GS_PROC_MEM_H */
