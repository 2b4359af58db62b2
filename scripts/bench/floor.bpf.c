// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floor.bpf.c: empty uprobe/uretprobe programs, the kernel's own cost of a probe hit. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/usdt.bpf.h> /* libbpf attaches USDT probes only to objects with its maps */

SEC("uprobe")
int floor_enter(void *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_exit(void *ctx)
{
	return 0;
}

SEC("usdt")
int floor_usdt(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
