// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* record_gpu_setup.c: where the injection library is, and how a target gets it (env, --inject). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "profilers/cmd/record_gpu.h"
#include "profilers/cuda/gpu_inject.h"
#include "profilers/cupti/cupti_abi.h"
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
