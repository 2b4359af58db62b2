// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gpu_attach.c: find the CUPTI injection library in a process and attach its USDT probes. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "gpu.skel.h"
#include "profilers/cuda/gpu_attach.h"
#include "profilers/cupti/cupti_abi.h"
#include "user/kernel_probe.h"
#include "user/links.h"
#include "user/log.h"
#include "user/proc_maps.h"

/*
 * libgpusnoop-cupti.so, or a versioned or renamed copy that keeps the prefix: the name only
 * picks the candidates; a file is probed when it is gpusnoop's own or root's (attach_mapping)
 */
#define LIB_PREFIX "libgpusnoop-cupti"

struct probed_file {
	pid_t scope;
	uint64_t dev, inode;
};

struct gs_gpu_attach {
	struct gpu_bpf *skel; /* borrowed: the session's (profilers/bpf_objects.c) */
	struct gs_links *links;
	struct probed_file *files;
	size_t nr_files, cap_files;
	uint64_t own_dev, own_inode; /* gpusnoop's own library, when found beside it */
	bool has_own;
};

/* The library installed with this binary (cmd/record_inject.c's places), if there is one. */
static void find_own_library(struct gs_gpu_attach *ga)
{
	static const char *const dirs[] = { "", "/../lib/gpusnoop" };
	char exe[PATH_MAX], lib[PATH_MAX + 64], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;

	if (n <= 0)
		return;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !ga->has_own; i++) {
		snprintf(lib, sizeof(lib), "%s%s/%s", exe, dirs[i], GS_CUPTI_LIB_NAME);
		if (!stat(lib, &st) && S_ISREG(st.st_mode)) {
			ga->own_dev = st.st_dev;
			ga->own_inode = st.st_ino;
			ga->has_own = true;
		}
	}
}

struct gs_gpu_attach *gs_gpu_attach__new(struct gpu_bpf *skel, struct gs_links *links)
{
	struct gs_gpu_attach *ga = calloc(1, sizeof(*ga));

	if (!ga)
		return NULL;
	ga->skel = skel;
	ga->links = links;
	find_own_library(ga);
	return ga;
}

void gs_gpu_attach__free(struct gs_gpu_attach *ga)
{
	if (!ga)
		return;
	free(ga->files);
	free(ga);
}

void gs_gpu_attach__forget(struct gs_gpu_attach *ga, pid_t scope)
{
	for (size_t i = 0; i < ga->nr_files;) {
		if (ga->files[i].scope == scope)
			ga->files[i] = ga->files[--ga->nr_files];
		else
			i++;
	}
}

/* true the first time (scope, file) is seen; remembered even if attaching then fails */
static bool first_time(struct gs_gpu_attach *ga, pid_t scope, const struct gs_mapping *m)
{
	struct probed_file *grown;

	for (size_t i = 0; i < ga->nr_files; i++)
		if (ga->files[i].scope == scope && ga->files[i].dev == m->dev &&
		    ga->files[i].inode == m->inode)
			return false;
	if (ga->nr_files == ga->cap_files) {
		size_t cap = ga->cap_files ? ga->cap_files * 2 : 8;

		grown = realloc(ga->files, cap * sizeof(*grown));
		if (!grown)
			return false;
		ga->files = grown;
		ga->cap_files = cap;
	}
	ga->files[ga->nr_files++] =
		(struct probed_file){ .scope = scope, .dev = m->dev, .inode = m->inode };
	return true;
}

static bool is_injection_lib(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return !strncmp(base, LIB_PREFIX, strlen(LIB_PREFIX)) && strstr(base, ".so");
}

/* The probes through path (/proc/self/fd/N); the activity probe last, so that a
 * record never arrives before the correlation ids of its launches could. */
static int attach_probes(struct gs_gpu_attach *ga, const char *path, pid_t scope)
{
	struct gpu_bpf *s = ga->skel;
	const char *p = GS_CUPTI_USDT_PROVIDER;
	int err = gs_links__attach_usdt(ga->links, s->progs.gpu_nvtx, scope, path, p, "nvtx", 0);

	/* NVTX's probe: a library from before it has none, and still its GPU activity */
	if (err && err != -ENOENT)
		return err;
	return gs_links__attach_usdt(ga->links, s->progs.gpu_api, scope, path, p, "api", 0)
		       ?: gs_links__attach_usdt(ga->links, s->progs.gpu_dropped, scope, path, p,
						"dropped", 0)
		       ?: gs_links__attach_usdt(ga->links, s->progs.gpu_clock, scope, path, p,
						"clock", 0)
		       ?: gs_links__attach_usdt(ga->links, s->progs.gpu_activity, scope, path, p,
						"activity", 0);
}

static bool is_own(const struct gs_gpu_attach *ga, const struct stat *st)
{
	return ga->has_own && st->st_dev == ga->own_dev && st->st_ino == ga->own_inode;
}

/* Opened and checked against the snapshot; probes go in through that descriptor. */
static void attach_mapping(struct gs_gpu_attach *ga, const struct gs_maps *maps,
			   const struct gs_mapping *m, pid_t scope)
{
	char path[32];
	struct stat st;
	int fd = gs_mapping__open(maps, m, &st), err;

	if (fd < 0) {
		gs_warn("pid %d: %s: cannot read: %s", (int)maps->pid, m->path, strerror(-fd));
		return;
	}
	/*
	 * Its owner chooses what it sends, and the records cost this process memory and disk:
	 * only gpusnoop's own library or a file root owns (and only root may change) is probed,
	 * whatever its name, under -p as under -a.
	 */
	if (!is_own(ga, &st) && !(S_ISREG(st.st_mode) && gs_is_trusted_file(&st))) {
		gs_warn("pid %d: %s is neither gpusnoop's injection library nor a file root owns "
			"and only root may write: no GPU activity from it",
			(int)maps->pid, m->path);
		close(fd);
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = attach_probes(ga, path, scope);
	if (err)
		gs_warn("pid %d: %s: GPU activity probes: %s", (int)maps->pid, m->path,
			strerror(-err));
	else
		gs_info("pid %d: GPU activity from %s", (int)maps->pid, m->path);
	close(fd);
}

bool gs_gpu_attach__scan(struct gs_gpu_attach *ga, const struct gs_maps *maps, pid_t scope)
{
	bool found = false;

	for (size_t i = 0; maps && i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];

		if (!m->exec || !m->path || !is_injection_lib(m->path))
			continue;
		found = true;
		if (first_time(ga, scope, m))
			attach_mapping(ga, maps, m, scope);
	}
	return found;
}
