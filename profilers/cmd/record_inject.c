// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record_inject.c: where the injection library is, and how a target gets it (env, --inject). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/cmd/record_inject.h"
#include "profilers/cuda/gpu_inject.h"
#include "profilers/cupti/cupti_abi.h"
#include "profilers/proc_tree.h"
#include "user/log.h"

int gs_record_gpu_library(char *lib, size_t len)
{
	static const char *const dirs[] = { "", "/../lib/gpusnoop" };
	char exe[PATH_MAX], found[PATH_MAX + 64], resolved[PATH_MAX], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return -errno;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(found, sizeof(found), "%s%s/%s", slash ? exe : ".", dirs[i],
			 GS_CUPTI_LIB_NAME);
		/* canonical: the one name the variable, the maps and the refusal compare */
		if (!access(found, R_OK) && realpath(found, resolved) &&
		    (size_t)snprintf(lib, len, "%s", resolved) < len)
			return 0;
	}
	gs_err("-e gpu: no %s beside %s or in %s/../lib/gpusnoop (built by make where CUPTI's "
	       "headers are)",
	       GS_CUPTI_LIB_NAME, exe, exe);
	return -ENOENT;
}

int gs_record_gpu_setenv(void)
{
	const char *set = getenv("CUDA_INJECTION64_PATH");
	char lib[PATH_MAX], same[PATH_MAX];
	int err = gs_record_gpu_library(lib, sizeof(lib));

	if (err)
		return err;
	if (set && *set && strcmp(set, "none") && !(realpath(set, same) && !strcmp(same, lib))) {
		gs_err("-e gpu: CUDA_INJECTION64_PATH already names %s; unset it to use %s", set,
		       lib);
		return -EEXIST;
	}
	return setenv("CUDA_INJECTION64_PATH", lib, 1) ? -errno : 0;
}

/* Whether env (an environ block of len bytes) sets name to a non-empty value other than none. */
static bool env_sets(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name);

	for (size_t i = 0; i < len;) {
		const char *s = env + i;
		size_t n = strnlen(s, len - i);

		if (n > nl + 1 && !strncmp(s, name, nl) && s[nl] == '=' &&
		    !(n == nl + 5 && !strncmp(s + nl + 1, "none", 4)))
			return true;
		i += n + 1;
	}
	return false;
}

void gs_record_gpu_check_env(const pid_t *pids, size_t nr_pids)
{
	char path[64];
	char *buf = malloc(GS_ENVIRON_MAX);

	for (size_t i = 0; buf && i < nr_pids; i++) {
		size_t len = 0;
		ssize_t n;
		int fd;

		snprintf(path, sizeof(path), "/proc/%d/environ", (int)pids[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* gone, or not ours to read: the recording says the rest */
		while (len < GS_ENVIRON_MAX && (n = read(fd, buf + len, GS_ENVIRON_MAX - len)) > 0)
			len += (size_t)n;
		close(fd);
		if (!env_sets(buf, len, "CUDA_INJECTION64_PATH"))
			gs_warn("-e gpu: pid %d was started without CUDA_INJECTION64_PATH: no GPU "
				"activity will come from it; add --inject to load the injection "
				"library into it",
				(int)pids[i]);
	}
	free(buf);
}

int gs_record_gpu_inject(const pid_t *pids, size_t nr_pids)
{
	char lib[PATH_MAX];
	int err = gs_record_gpu_library(lib, sizeof(lib));

	for (size_t i = 0; i < nr_pids && !err; i++) {
		err = gs_gpu_inject(pids[i], lib);
		if (err == -EBUSY)
			err = 0; /* said; the recording goes on without its GPU activity */
	}
	return err;
}

int gs_record_nvtx_setenv(bool required)
{
	const char *set = getenv("NVTX_INJECTION64_PATH");
	char lib[PATH_MAX], same[PATH_MAX];
	int err = gs_record_gpu_library(lib, sizeof(lib));

	if (err)
		return err;
	if (set && *set && !(realpath(set, same) && !strcmp(same, lib))) {
		if (!required) { /* -e gpu: its GPU rows still come */
			gs_warn("NVTX_INJECTION64_PATH names %s: no NVTX ranges (unset it to "
				"record them)",
				set);
			return 0;
		}
		gs_err("-e nvtx: NVTX_INJECTION64_PATH already names %s; unset it to use %s", set,
		       lib);
		return -EEXIST;
	}
	return setenv("NVTX_INJECTION64_PATH", lib, 1) ? -errno : 0;
}
