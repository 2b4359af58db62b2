// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* bpf_old.c: the ELF bytes of proc, mem, cuda and cpu built for Linux 5.10 (-DGS_OLD_KERNEL). */
#include <bpf/libbpf.h>
#include "cpu.old.skel.h"
#include "cuda.old.skel.h"
#include "mem.old.skel.h"
#include "proc.old.skel.h"
#include "profilers/bpf_old.h"

const void *gs_bpf_old_proc(size_t *sz)
{
	return proc_old_bpf__elf_bytes(sz);
}

const void *gs_bpf_old_mem(size_t *sz)
{
	return mem_old_bpf__elf_bytes(sz);
}

const void *gs_bpf_old_cuda(size_t *sz)
{
	return cuda_old_bpf__elf_bytes(sz);
}

const void *gs_bpf_old_cpu(size_t *sz)
{
	return cpu_old_bpf__elf_bytes(sz);
}
