/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* record_inject.h: the CUPTI/NVTX injection library, and how `record`'s targets get it. */
#ifndef GS_RECORD_INJECT_H
#define GS_RECORD_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * For `record -e gpu -- CMD`: names the CUPTI injection library installed beside the gpusnoop
 * executable or in ../lib/gpusnoop/ in CUDA_INJECTION64_PATH, which the command inherits. 0, or
 * -EEXIST when the variable names another library already, -ENOENT when the library is not
 * installed (logged, one line each).
 */
int gs_record_gpu_setenv(void);
/*
 * The CUPTI injection library's path: beside the gpusnoop executable (the build tree) or in
 * ../lib/gpusnoop/. Returns 0, or -ENOENT (logged).
 */
int gs_record_gpu_library(char *lib, size_t len);
/*
 * --inject: loads the library into each of pids (started without the variable) by ptrace.
 * A process whose CUPTI refuses is said and skipped. Returns 0 or -errno (logged).
 */
int gs_record_gpu_inject(const pid_t *pids, size_t nr_pids);
/*
 * -e gpu -p without --inject: warns, suggesting --inject, for each of pids whose environment
 * (at most GS_ENVIRON_MAX bytes of it) does not set CUDA_INJECTION64_PATH.
 */
void gs_record_gpu_check_env(const pid_t *pids, size_t nr_pids);

/*
 * For `record -e nvtx -- CMD`: NVTX_INJECTION64_PATH names the injection library, which the
 * command inherits (NVTX reads it at its first call, so only a command started so gets it).
 * 0, or -EEXIST when it names another library and required (else a warning and 0), -ENOENT
 * when none is installed (logged).
 */
int gs_record_nvtx_setenv(bool required);

#endif /* GS_RECORD_INJECT_H */
