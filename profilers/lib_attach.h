/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* lib_attach.h: find the loader, CUDA and PyTorch libraries a process maps, and probe them. */
#ifndef GS_LIB_ATTACH_H
#define GS_LIB_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct gs_bpf_objects;
struct gs_elf;
struct gs_links;
struct gs_symcache;
struct gs_lib_attach;

/*
 * Every file is opened once, by descriptor, checked against the maps snapshot (device,
 * inode), parsed from that descriptor and probed through it. Under -a a file root does not
 * own, or others may write, is probed only in the process that maps it, and at most
 * GS_PROBE_QUOTA_PER_USER such (process, file) pairs per owner.
 *
 * Borrows objs, links and symcache; NULL on allocation failure. Free with
 * gs_lib_attach__free().
 */
struct gs_lib_attach *gs_lib_attach__new(struct gs_bpf_objects *objs, struct gs_links *links,
					 struct gs_symcache *symcache, bool all, uint32_t families);
void gs_lib_attach__free(struct gs_lib_attach *la);
/* The calls of these families are probed without user stacks (nor Python frames): counted. */
void gs_lib_attach__count_only(struct gs_lib_attach *la, uint32_t families);
/*
 * Probes every file for all the processes that map it, the targets map filtering in BPF: a
 * followed tree's new processes are traced from their first instruction, with no attach of
 * their own (the cost to other processes mapping the same files: gpusnoop(7), "Process trees").
 */
void gs_lib_attach__probe_by_file(struct gs_lib_attach *la);

/*
 * Probes what pid maps now and is not probed yet: its loader (to hear of later libraries),
 * libcudart (also a static one in the executable), libcuda, and PyTorch's libraries (whose
 * BPF object is loaded then, the first time). Refreshes pid's maps snapshot in the
 * symcache. Returns true if pid maps CUDA or PyTorch.
 */
bool gs_lib_attach__scan(struct gs_lib_attach *la, pid_t pid);
/*
 * Probes a command spawned as pid before it runs: the interpreter (loader) of its
 * executable exe, parsed as elf, and for a static cudart the executable itself; its
 * libraries come through the loader.
 */
void gs_lib_attach__command(struct gs_lib_attach *la, pid_t pid, const char *exe,
			    struct gs_elf *elf);
/*
 * Forgets the files probed for pid alone (it exited: its probes are useless) and detaches
 * those probes in the background; gives back its owner's quota.
 */
void gs_lib_attach__forget(struct gs_lib_attach *la, pid_t pid);
/* True once some process had CUDA (or PyTorch) probes attached. */
bool gs_lib_attach__saw_cuda(const struct gs_lib_attach *la);

#endif /* GS_LIB_ATTACH_H */
