/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* uprobe_multi.h: multi-uprobe links (Linux 6.6+) through the raw bpf() syscall. */
#ifndef GS_UPROBE_MULTI_H
#define GS_UPROBE_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* enum bpf_attach_type's value; Debian's libbpf 1.1 and uapi headers predate it */
#define GS_BPF_TRACE_UPROBE_MULTI 48

/*
 * Whether this kernel has multi-uprobe links that filter by process (not only by thread, as
 * the first version did, fixed in 2024). Asks the kernel each call (two syscalls that fail
 * early); callers ask once per BPF object.
 */
bool gs_has_uprobe_multi(void);

/*
 * Attaches prog_fd (loaded with expected_attach_type GS_BPF_TRACE_UPROBE_MULTI) at nr file
 * offsets of path, each with its bpf_cookie, for pid (0: every process mapping the file).
 * Detaching the returned link (close it) waits for one grace period for all nr probes.
 * Returns the link's descriptor or -errno.
 */
int gs_uprobe_multi__attach(int prog_fd, const char *path, const uint64_t *offsets,
			    const uint64_t *cookies, size_t nr, pid_t pid, bool retprobe);

#endif /* GS_UPROBE_MULTI_H */
