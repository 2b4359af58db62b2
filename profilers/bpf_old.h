/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* bpf_old.h: the ELF bytes of proc, mem, cuda and cpu built for Linux 5.10 (-DGS_OLD_KERNEL). */
#ifndef GS_BPF_OLD_H
#define GS_BPF_OLD_H

#include <stddef.h>

/*
 * Same maps, programs and globals as the usual builds (a few more maps): the usual skeletons
 * open them (profilers/bpf_objects.c).
 */
const void *gs_bpf_old_proc(size_t *sz);
const void *gs_bpf_old_mem(size_t *sz);
const void *gs_bpf_old_cuda(size_t *sz);
const void *gs_bpf_old_cpu(size_t *sz);

#endif /* GS_BPF_OLD_H */
