// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* uprobe_multi.c: BPF_LINK_CREATE of BPF_TRACE_UPROBE_MULTI links, and the probe for them. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include "user/uprobe_multi.h"

#define UPROBE_MULTI_RETURN 1u /* BPF_F_UPROBE_MULTI_RETURN */

/* union bpf_attr's link_create with the uprobe_multi member of Linux 6.6's uapi */
struct link_create_uprobe_multi {
	uint32_t prog_fd;
	uint32_t target_fd;
	uint32_t attach_type;
	uint32_t flags;
	uint64_t path;
	uint64_t offsets;
	uint64_t ref_ctr_offsets;
	uint64_t cookies;
	uint32_t cnt;
	uint32_t multi_flags;
	uint32_t pid;
	uint32_t pad; /* zero: the kernel refuses unknown non-zero bytes */
};

static int link_create(int prog_fd, const char *path, const uint64_t *offsets,
		       const uint64_t *cookies, size_t nr, int pid, uint32_t flags)
{
	struct link_create_uprobe_multi attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_fd = (uint32_t)prog_fd;
	attr.attach_type = GS_BPF_TRACE_UPROBE_MULTI;
	attr.path = (uint64_t)(uintptr_t)path;
	attr.offsets = (uint64_t)(uintptr_t)offsets;
	attr.cookies = (uint64_t)(uintptr_t)cookies;
	attr.cnt = (uint32_t)nr;
	attr.multi_flags = flags;
	attr.pid = (uint32_t)pid;
	fd = syscall(__NR_bpf, BPF_LINK_CREATE, &attr, sizeof(attr));
	return fd < 0 ? -errno : (int)fd;
}

int gs_uprobe_multi__attach(int prog_fd, const char *path, const uint64_t *offsets,
			    const uint64_t *cookies, size_t nr, pid_t pid, bool retprobe)
{
	if (!nr || nr > UINT32_MAX)
		return -EINVAL;
	return link_create(prog_fd, path, offsets, cookies, nr, pid < 0 ? 0 : pid,
			   retprobe ? UPROBE_MULTI_RETURN : 0);
}

/* libbpf's probe_uprobe_multi_link (1.4+): what the kernel answers for an invalid path "/" */
bool gs_has_uprobe_multi(void)
{
	static const struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = (enum bpf_attach_type)GS_BPF_TRACE_UPROBE_MULTI);
	uint64_t offset = 0;
	int prog_fd, fd;
	bool has = false;

	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", ret0, 2, &opts);
	if (prog_fd < 0)
		return false;
	/* a kernel with these links resolves the path: "/" is not a regular file */
	fd = link_create(prog_fd, "/", &offset, NULL, 1, 0, 0);
	if (fd == -EBADF) {
		/* pid -1 fails early (-EINVAL) only where pids filter processes, not threads */
		fd = link_create(prog_fd, "/", &offset, NULL, 1, -1, 0);
		has = fd == -EINVAL;
	}
	if (fd >= 0)
		close(fd);
	close(prog_fd);
	return has;
}
