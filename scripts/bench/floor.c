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
#include "profilers/cupti/cupti_abi.h"
#include "user/elf_file.h"
#include "user/links.h"
#include "user/proc_maps.h"

/*
 * usage: gs_bench_floor PID SET [--list]
 * SET is what gets probed, with programs that do nothing:
 *   all      what `gpusnoop record` probed before launches went entry-only: every API of its
 *            families in the CUDA runtime and driver PID maps, entry and return
 *   mem      what `gpusnoop leaks` probes: the allocation APIs, entry and return
 *   min      the least `gpusnoop record` needs (issue #12): launches at entry only (all they
 *            show is known there), everything else entry and return (a pointer, how long a
 *            synchronization, copy or free blocked, a kernel name read back)
 *   min-mem  the least `gpusnoop leaks` needs: allocations entry and return, frees entry
 *   min-daemon  the least `gpusnoop daemon` with cuda-call-metrics needs: mem (its reports and
 *            `ctl leaks` count a failed free and keep the allocation it did not free: a free's
 *            return stays), launches at entry only, synchronizations entry and return (how
 *            long they blocked); the default daemon's floor is mem
 *   gpu      what `gpusnoop record -e gpu` probes: launches, copies and kernel-name calls
 *            entry and return, and the CUPTI injection library's four USDT probes (which
 *            raise its semaphores: the library works as it does when traced)
 * Probes go in as gpusnoop puts them (same bpf_cookie, same pid scope, return probe first,
 * one multi-uprobe link per program and file). Prints "attached N" on stderr, then probes
 * the CUDA libraries PID maps later (every 10 ms) until SIGINT, SIGTERM or PID's exit.
 * --list prints the functions probed now as PATH:SYMBOL lines (the map's path) and exits.
 */

enum floor_set { SET_ALL, SET_MEM, SET_MIN, SET_MIN_MEM, SET_GPU, SET_MIN_DAEMON };

/* scan()'s done[] index of the injection library, after GS_LIB_RUNTIME and GS_LIB_DRIVER */
#define INJECTION 2

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

/* Whether the set wants api's return probe too. */
static bool wants_return(enum floor_set set, const struct gs_cuda_api *api)
{
	if ((set == SET_MIN || set == SET_MIN_DAEMON) && api->family == GS_FAM_LAUNCH)
		return false;
	if (set == SET_MIN_MEM && api->shape == GS_SHAPE_FREE)
		return false;
	return true;
}

static int attach_lib(struct floor_bpf *skel, struct gs_links *links, pid_t pid, const char *path,
		      const char *shown, enum gs_cuda_lib lib, enum floor_set set, bool list,
		      size_t *nr)
{
	uint32_t families = set == SET_GPU ? 0 : GS_FAM_BIT(GS_FAM_MEM);
	struct gs_elf *elf = gs_elf__open(path);
	size_t nr_apis;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr_apis);

	if (!elf) {
		fprintf(stderr, "%s: %s\n", shown, strerror(errno));
		return -errno;
	}
	if (set == SET_GPU)
		families |= GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_NAMES) |
			    GS_FAM_BIT(GS_FAM_COPY);
	if (set == SET_MIN_DAEMON)
		families |= GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_SYNC);
	if (set == SET_ALL || set == SET_MIN)
		families |= GS_FAM_BIT(GS_FAM_LAUNCH) | GS_FAM_BIT(GS_FAM_NAMES) |
			    GS_FAM_BIT(GS_FAM_SYNC) | GS_FAM_BIT(GS_FAM_COPY);
	for (size_t i = 1; i < nr_apis; i++) {
		const struct gs_cuda_api *api = &apis[i];
		uint64_t vaddr, off, cookie;
		int err;

		if (api->lib != lib || !(families & GS_FAM_BIT(api->family)))
			continue;
		vaddr = gs_elf__find_function(elf, api->name);
		if (!vaddr || gs_elf__vaddr_to_offset(elf, vaddr, &off))
			continue;
		if (list) {
			printf("%s:%s\n", shown, api->name);
			continue;
		}
		cookie = api->id | (uint64_t)gs_cuda_api_call_flags(api) << 16;
		err = 0;
		if (wants_return(set, api))
			err = gs_links__attach_uprobe(links, skel->progs.floor_exit, pid, path, off,
						      true, cookie);
		err = err
			      ?: gs_links__attach_uprobe(links, skel->progs.floor_enter, pid, path,
							 off, false, cookie);
		if (err) {
			fprintf(stderr, "attach %s:%s: %s\n", shown, api->name, strerror(-err));
			gs_elf__free(elf);
			return err;
		}
		(*nr)++;
	}
	gs_elf__free(elf);
	return 0;
}

static int parse_set(const char *arg, enum floor_set *set)
{
	static const char *const names[] = { "all", "mem", "min", "min-mem", "gpu", "min-daemon" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(arg, names[i])) {
			*set = (enum floor_set)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* The injection library's probes, as gpu_attach.c puts them, each on the empty program. */
static int attach_injection(struct floor_bpf *skel, struct gs_links *links, pid_t pid,
			    const char *path, const char *shown, bool list, size_t *nr)
{
	static const char *const probes[] = { "api", "dropped", "clock", "activity" };

	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		int err;

		if (list) {
			printf("%s:%s:%s\n", shown, GS_CUPTI_USDT_PROVIDER, probes[i]);
			continue;
		}
		err = gs_links__attach_usdt(links, skel->progs.floor_usdt, pid, path,
					    GS_CUPTI_USDT_PROVIDER, probes[i], 0);
		if (err) {
			fprintf(stderr, "attach %s:%s: %s\n", shown, probes[i], strerror(-err));
			return err;
		}
		(*nr)++;
	}
	return 0;
}

static bool is_injection_lib(const char *path)
{
	const char *base = strrchr(path, '/');

	return !strncmp(base ? base + 1 : path, "libgpusnoop-cupti", 17);
}

/*
 * Probes the CUDA libraries pid maps that are not probed yet (done[lib]): the stand-in runtime
 * loads the driver at its first call, as the real one does, and gpusnoop follows it there.
 */
static int scan(struct floor_bpf *skel, struct gs_links *links, pid_t pid, enum floor_set set,
		bool list, bool done[3], size_t *nr)
{
	struct gs_maps *maps = gs_maps__read(pid);
	int err = 0;

	if (!maps)
		return -errno;
	for (size_t i = 0; i < maps->nr && !err; i++) {
		const struct gs_mapping *m = &maps->mappings[i];
		char path[PATH_MAX];
		int lib, fd;

		if (!m->exec || !m->path)
			continue;
		if (gs_is_cudart_name(m->path))
			lib = GS_LIB_RUNTIME;
		else if (gs_is_libcuda_name(m->path))
			lib = GS_LIB_DRIVER;
		else if (set == SET_GPU && is_injection_lib(m->path))
			lib = INJECTION;
		else
			continue;
		if (done[lib])
			continue;
		fd = gs_mapping__open(maps, m, NULL);
		if (fd < 0) {
			err = fd;
			break;
		}
		/* the file checked against the snapshot, probed through its descriptor */
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if (lib == INJECTION) {
			err = attach_injection(skel, links, pid, path, m->path, list, nr);
		} else {
			gs_links__batch_begin(links); /* gpusnoop's multi-uprobe links */
			err = attach_lib(skel, links, pid, path, m->path, (enum gs_cuda_lib)lib,
					 set, list, nr);
			err = gs_links__batch_end(links) ?: err;
		}
		close(fd);
		done[lib] = true;
	}
	gs_maps__free(maps);
	return err;
}

int main(int argc, char **argv)
{
	struct floor_bpf *skel = NULL;
	struct gs_links *links = NULL;
	enum floor_set set;
	bool list = argc == 4 && !strcmp(argv[3], "--list");
	bool done[3] = { false, false, false };
	size_t nr = 0;
	int status = 1;
	pid_t pid;

	if ((argc != 3 && !list) || parse_set(argv[2], &set)) {
		fprintf(stderr, "usage: %s PID all|mem|min|min-mem|gpu|min-daemon [--list]\n",
			argv[0]);
		return 1;
	}
	pid = (pid_t)atoi(argv[1]);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	skel = floor_bpf__open();
	if (skel && gs_links__prepare(skel->obj))
		goto out;
	if (skel && floor_bpf__load(skel)) {
		floor_bpf__destroy(skel);
		skel = NULL;
	}
	links = gs_links__new();
	if (!skel || !links) {
		fprintf(stderr, "set-up: %s\n", strerror(errno));
		goto out;
	}
	if (scan(skel, links, pid, set, list, done, &nr))
		goto out;
	if (list) {
		status = 0;
		goto out;
	}
	if (!nr) {
		fprintf(stderr, "pid %d maps no CUDA library\n", (int)pid);
		goto out;
	}
	fprintf(stderr, "attached %zu\n", nr);
	while (!stop && !scan(skel, links, pid, set, list, done, &nr))
		usleep(10000);
	status = 0;
out:
	gs_links__free(links);
	floor_bpf__destroy(skel);
	return status;
}
