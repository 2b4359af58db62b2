/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* kernel_names.h: the name of the kernel a launch starts, from every source gpusnoop sees. */
#ifndef GS_KERNEL_NAMES_H
#define GS_KERNEL_NAMES_H

#include <stdint.h>
#include <sys/types.h>

struct gs_kernel_names;
struct gs_symcache;

struct gs_kernel_names *gs_kernel_names__new(struct gs_symcache *symcache);
void gs_kernel_names__free(struct gs_kernel_names *k);

/* __cudaRegisterFunction(.., hostFun, .., deviceName): the name is read from the process. */
void gs_kernel_names__add_registration(struct gs_kernel_names *k, pid_t pid, uint64_t host_fun,
				       uint64_t name_addr);
/* __cudaGetKernel/cudaGetKernel: a CUDA 13 cudaKernel_t standing for a host function. */
void gs_kernel_names__add_handle(struct gs_kernel_names *k, pid_t pid, uint64_t handle,
				 uint64_t host_fun);
/* cuModuleGetFunction/cuLibraryGetKernel: a driver handle and the name it was looked up by. */
void gs_kernel_names__add_function(struct gs_kernel_names *k, pid_t pid, uint64_t handle,
				   const char *mangled);

struct gs_cuda_api;
struct gs_cuda_call;
/*
 * What a GS_FAM_NAMES call record teaches (a registration, a handle, a driver lookup), given
 * to the three functions above; any other record teaches nothing.
 */
void gs_kernel_names__learn_call(struct gs_kernel_names *k, const struct gs_cuda_api *api,
				 const struct gs_cuda_call *e);

/*
 * The demangled name of what func launches in pid, or "unknown 0x..." when no source
 * names it: never a guess. Borrowed until the next call or gs_kernel_names__forget(pid).
 */
const char *gs_kernel_names__resolve(struct gs_kernel_names *k, pid_t pid, uint64_t func);
/* Names and handles not kept because their process had made its cap of them. */
uint64_t gs_kernel_names__refused(const struct gs_kernel_names *k);
/* Drops everything known about pid (it exited or exec'd). */
void gs_kernel_names__forget(struct gs_kernel_names *k, pid_t pid);

#endif /* GS_KERNEL_NAMES_H */
