// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* floor.c: attach empty BPF programs where gpusnoop would, to measure the empty-probe floor. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "floor.skel.h"
#include "profilers/cuda/api.h"
#include "user/elf_file.h"
#include "user/links.h"
#include "user/proc_maps.h"

/*
 * usage: gs_bench_floor PID FAMILIES
 * FAMILIES is "mem" (what `gpusnoop leaks` probes) or "all" (what `gpusnoop record` probes).
 * Every API of those families found in the CUDA runtime and driver PID maps gets the same
 * pair of probes gpusnoop puts there (entry and return, same bpf_cookie, same pid scope,
 * return probe first), running programs that do nothing. Prints "attached N" on stderr,
 * then waits for SIGINT or SIGTERM.
 */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static int attach_lib(struct floor_bpf *skel, struct gs_links *links, pid_t pid, const char *path,
		      enum gs_cuda_lib lib, uint32_t families, size_t *nr)
{
	struct gs_elf *elf = gs_elf__open(path);
	size_t nr_apis;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr_apis);

	if (!elf) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -errno;
	}
	for (size_t i = 1; i < nr_apis; i++) {
		const struct gs_cuda_api *api = &apis[i];
		uint64_t vaddr, off, cookie;
		int err;

		if (api->lib != lib || !(families & GS_FAM_BIT(api->family)))
			continue;
		vaddr = gs_elf__find_function(elf, api->name);
		if (!vaddr || gs_elf__vaddr_to_offset(elf, vaddr, &off))
			continue;
		cookie = api->id | (uint64_t)gs_cuda_api_call_flags(api) << 16;
		err = gs_links__attach_uprobe(links, skel->progs.floor_exit, pid, path, off, true,
					      cookie);
		err = err
			      ?: gs_links__attach_uprobe(links, skel->progs.floor_enter, pid, path,
							 off, false, cookie);
		if (err) {
			fprintf(stderr, "attach %s:%s: %s\n", path, api->name, strerror(-err));
			gs_elf__free(elf);
			return err;
		}
		(*nr)++;
	}
	gs_elf__free(elf);
	return 0;
}

int main(int argc, char **argv)
{
	uint32_t families = GS_FAM_BIT(GS_FAM_MEM);
	struct floor_bpf *skel = NULL;
	struct gs_links *links = NULL;
	struct gs_maps *maps = NULL;
	size_t nr = 0;
	int status = 1;
	pid_t pid;

	if (argc != 3 || (strcmp(argv[2], "mem") && strcmp(argv[2], "all"))) {
		fprintf(stderr, "usage: %s PID mem|all\n", argv[0]);
		return 1;
	}
	pid = (pid_t)atoi(argv[1]);
	if (!strcmp(argv[2], "all"))
		families |= GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_NAMES) |
			    GS_FAM_BIT(GS_FAM_SYNC) | GS_FAM_BIT(GS_FAM_COPY);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	skel = floor_bpf__open_and_load();
	links = gs_links__new();
	maps = gs_maps__read(pid);
	if (!skel || !links || !maps) {
		fprintf(stderr, "set-up: %s\n", strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];
		char path[PATH_MAX];
		enum gs_cuda_lib lib;
		int fd, err;

		if (!m->exec || !m->path)
			continue;
		if (gs_is_cudart_name(m->path))
			lib = GS_LIB_RUNTIME;
		else if (gs_is_libcuda_name(m->path))
			lib = GS_LIB_DRIVER;
		else
			continue;
		fd = gs_mapping__open(maps, m, NULL);
		if (fd < 0)
			goto out;
		/* the file checked against the snapshot, probed through its descriptor */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		err = attach_lib(skel, links, pid, path, lib, families, &nr);
		close(fd);
		if (err)
			goto out;
	}
	if (!nr) {
		fprintf(stderr, "pid %d maps no CUDA library\n", (int)pid);
		goto out;
	}
	fprintf(stderr, "attached %zu\n", nr);
	while (!stop)
		pause();
	status = 0;
out:
	gs_links__free(links);
	gs_maps__free(maps);
	floor_bpf__destroy(skel);
	return status;
}
