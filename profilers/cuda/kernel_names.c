// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* kernel_names.c: registrations, CUDA 13 handles, driver handles, then exact symbols. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/types.h>
#include "bpf/gs_event.h"
#include "profilers/cuda/api.h"
#include "profilers/cuda/kernel_names.h"
#include "user/addr_map.h"
#include "user/demangle.h"
#include "user/elf_file.h"
#include "user/log.h"
#include "user/proc_maps.h"
#include "user/proc_mem.h"
#include "user/symcache.h"

#define MAX_KERNEL_NAME 4096
/*
 * Entries one process may make, over every map below: a process chooses how many kernels it
 * registers and which pointers it launches (PyTorch registers about 19,000 kernels).
 */
#define MAX_ENTRIES_PER_PROC 65536

struct gs_kernel_names {
	struct gs_symcache *symcache; /* borrowed */
	/*
	 * Names are kept mangled and demangled at their first launch: a library registers all its
	 * kernels at load (about 19,000 for PyTorch's), and demangling each there would fall
	 * behind the burst and overflow the ring buffer.
	 */
	struct gs_addr_map *registered; /* host function -> owned mangled name */
	struct gs_addr_map *handles;	/* cudaKernel_t -> host function */
	struct gs_addr_map *functions;	/* CUfunction/CUkernel -> owned mangled name */
	struct gs_addr_map *resolved;	/* launched pointer -> owned name (cache) */
	struct gs_addr_map *misses;	/* launched pointers no source named, after a scan */
	struct gs_addr_map *entries;	/* (pid, 0) -> entries pid holds in the maps above */
	uint64_t refused;		/* entries not made: their process was at its cap */
	char *uncached;			/* the last name resolved but not cached (at the cap) */
	char unknown[64];
};

static void free_name(uint64_t value)
{
	free((char *)(uintptr_t)value);
}

struct gs_kernel_names *gs_kernel_names__new(struct gs_symcache *symcache)
{
	struct gs_kernel_names *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->symcache = symcache;
	k->registered = gs_addr_map__new();
	k->handles = gs_addr_map__new();
	k->functions = gs_addr_map__new();
	k->resolved = gs_addr_map__new();
	k->misses = gs_addr_map__new();
	k->entries = gs_addr_map__new();
	if (!k->registered || !k->handles || !k->functions || !k->resolved || !k->misses ||
	    !k->entries) {
		gs_kernel_names__free(k);
		return NULL;
	}
	return k;
}

void gs_kernel_names__free(struct gs_kernel_names *k)
{
	if (!k)
		return;
	if (k->registered)
		gs_addr_map__for_each_value(k->registered, free_name);
	if (k->functions)
		gs_addr_map__for_each_value(k->functions, free_name);
	if (k->resolved)
		gs_addr_map__for_each_value(k->resolved, free_name);
	gs_addr_map__free(k->registered);
	gs_addr_map__free(k->handles);
	gs_addr_map__free(k->functions);
	gs_addr_map__free(k->resolved);
	gs_addr_map__free(k->misses);
	gs_addr_map__free(k->entries);
	free(k->uncached);
	free(k);
}

/* Demangles when it can; takes ownership of nothing, returns an owned string. */
static char *readable(const char *mangled)
{
	char *d = gs_demangle(mangled);

	return d ? d : strdup(mangled);
}

/* Whether pid may make one more entry (counted as made); past its cap, counted as refused. */
static bool take_entry(struct gs_kernel_names *k, pid_t pid)
{
	uint64_t n = 0;

	gs_addr_map__get(k->entries, pid, 0, &n);
	if (n >= MAX_ENTRIES_PER_PROC) {
		if (!k->refused++)
			gs_warn("pid %d: more than %d kernel names and handles: later ones are not "
				"kept (their launches read \"unknown\")",
				(int)pid, MAX_ENTRIES_PER_PROC);
		return false;
	}
	return !gs_addr_map__set(k->entries, pid, 0, n + 1);
}

/* A new key takes one of pid's entries; an existing one is replaced. */
static void put_owned(struct gs_kernel_names *k, struct gs_addr_map *m, pid_t pid, uint64_t key,
		      char *name)
{
	uint64_t old;

	if (!name)
		return;
	if (gs_addr_map__get(m, pid, key, &old))
		free_name(old);
	else if (!take_entry(k, pid)) {
		free(name);
		return;
	}
	if (gs_addr_map__set(m, pid, key, (uint64_t)(uintptr_t)name))
		free(name);
}

uint64_t gs_kernel_names__refused(const struct gs_kernel_names *k)
{
	return k->refused;
}

void gs_kernel_names__add_registration(struct gs_kernel_names *k, pid_t pid, uint64_t host_fun,
				       uint64_t name_addr)
{
	const struct gs_maps *maps = gs_symcache__maps(k->symcache, pid);
	char mangled[MAX_KERNEL_NAME];

	/* a library registering its kernels was just mapped: the snapshot may predate it */
	if (maps && gs_read_process_string(maps, name_addr, mangled, sizeof(mangled)) &&
	    gs_symcache__refresh(k->symcache, pid) == 0)
		maps = gs_symcache__maps(k->symcache, pid);
	if (!maps || gs_read_process_string(maps, name_addr, mangled, sizeof(mangled)) ||
	    !*mangled) {
		gs_dbg("pid %d: unreadable kernel name at 0x%" PRIx64, (int)pid, name_addr);
		return;
	}
	put_owned(k, k->registered, pid, host_fun, strdup(mangled));
}

void gs_kernel_names__add_handle(struct gs_kernel_names *k, pid_t pid, uint64_t handle,
				 uint64_t host_fun)
{
	uint64_t old;

	if (handle && handle != host_fun &&
	    (gs_addr_map__get(k->handles, pid, handle, &old) || take_entry(k, pid)))
		gs_addr_map__set(k->handles, pid, handle, host_fun);
}

void gs_kernel_names__add_function(struct gs_kernel_names *k, pid_t pid, uint64_t handle,
				   const char *mangled)
{
	if (handle && *mangled)
		put_owned(k, k->functions, pid, handle, strdup(mangled));
}

/*
 * A process attached after its kernels were registered and their CUDA 13 handles made:
 * read each `__device_stub__<kernel>::__handle` static of the objects it maps.
 */
static void read_handle_statics(struct gs_kernel_names *k, pid_t pid)
{
	const struct gs_maps *maps = gs_symcache__maps(k->symcache, pid);

	for (size_t i = 0; maps && i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];
		const struct gs_elf_kernel_handle *h;
		struct gs_elf *elf;
		uint64_t vaddr;
		size_t n;

		/* one mapping per file suffices: the one holding its first page gives the bias */
		if (!m->path || m->pgoff != 0 || !(elf = gs_symcache__elf(k->symcache, maps, m)))
			continue;
		n = gs_elf__kernel_handles(elf, &h);
		if (!n || gs_elf__offset_to_vaddr(elf, 0, &vaddr))
			continue;
		for (size_t j = 0; j < n; j++) {
			uint64_t handle = 0, at = h[j].vaddr - vaddr + m->start;

			if (!gs_read_process_memory(maps, at, &handle, sizeof(handle)) && handle)
				put_owned(k, k->functions, pid, handle, strdup(h[j].kernel));
		}
	}
}

/* An owned name for func, or NULL when no source knows it. */
static char *lookup(struct gs_kernel_names *k, pid_t pid, uint64_t func)
{
	uint64_t host = func, name;
	struct gs_frame frame;

	if (gs_addr_map__get(k->functions, pid, func, &name))
		return readable((const char *)(uintptr_t)name);
	gs_addr_map__get(k->handles, pid, func, &host);
	if (gs_addr_map__get(k->registered, pid, host, &name))
		return readable((const char *)(uintptr_t)name);
	/* a kernel's host function is launched by its entry address: anything else is a guess */
	gs_symcache__resolve(k->symcache, pid, host, &frame);
	if (frame.symbol && frame.offset == 0)
		return strdup(frame.symbol);
	/* once per unknown pointer: it may be a handle made before we attached (past the
	 * process's cap, never again: each scan reads every file it maps) */
	if (!gs_addr_map__get(k->misses, pid, func, &name) && take_entry(k, pid)) {
		gs_addr_map__set(k->misses, pid, func, 1);
		read_handle_statics(k, pid);
		if (gs_addr_map__get(k->functions, pid, func, &name))
			return readable((const char *)(uintptr_t)name);
	}
	return NULL;
}

const char *gs_kernel_names__resolve(struct gs_kernel_names *k, pid_t pid, uint64_t func)
{
	uint64_t cached;
	char *name;

	if (gs_addr_map__get(k->resolved, pid, func, &cached))
		return (const char *)(uintptr_t)cached;
	name = lookup(k, pid, func);
	/* unknowns are not cached: a registration or handle may still name them later */
	if (name && take_entry(k, pid) &&
	    gs_addr_map__set(k->resolved, pid, func, (uint64_t)(uintptr_t)name) == 0)
		return name;
	free(k->uncached); /* borrowed until the next call, as documented */
	k->uncached = name;
	if (name)
		return name;
	snprintf(k->unknown, sizeof(k->unknown), "unknown 0x%" PRIx64, func);
	return k->unknown;
}

void gs_kernel_names__forget(struct gs_kernel_names *k, pid_t pid)
{
	gs_addr_map__forget_pid(k->registered, pid, free_name);
	gs_addr_map__forget_pid(k->handles, pid, NULL);
	gs_addr_map__forget_pid(k->functions, pid, free_name);
	gs_addr_map__forget_pid(k->resolved, pid, free_name);
	gs_addr_map__forget_pid(k->misses, pid, NULL);
	gs_addr_map__forget_pid(k->entries, pid, NULL);
}

void gs_kernel_names__learn_call(struct gs_kernel_names *k, const struct gs_cuda_api *api,
				 const struct gs_cuda_call *e)
{
	pid_t pid = (pid_t)e->hdr.pid;

	switch (api->shape) {
	case GS_SHAPE_REGISTER_FUNCTION: /* (handle, hostFun, deviceFun, deviceName, ...) */
		gs_kernel_names__add_registration(k, pid, e->args[1], e->args[3]);
		break;
	case GS_SHAPE_GET_KERNEL: /* (cudaKernel_t *out, hostFun) */
		if (!e->ret)
			gs_kernel_names__add_handle(k, pid, e->out, e->args[1]);
		break;
	case GS_SHAPE_GET_FUNCTION: /* (CUfunction *out, module, name) */
		if (!e->ret)
			gs_kernel_names__add_function(k, pid, e->out, e->str);
		break;
	default:
		break;
	}
}
