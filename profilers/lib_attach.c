// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* lib_attach.c: library discovery per process and the uprobes each library gets. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/types.h>
#include <bpf/libbpf.h>
#include "cuda.skel.h"
#include "mem.skel.h"
#include "proc.skel.h"
#include "bpf/gs_event.h"
#include "profilers/bpf_objects.h"
#include "profilers/cuda/api.h"
#include "profilers/lib_attach.h"
#include "profilers/probe_quota.h"
#include "profilers/torch/attach.h"
#include "profilers/torch/syms.h"
#include "user/array.h"
#include "user/elf_file.h"
#include "user/links.h"
#include "user/log.h"
#include "user/proc_info.h"
#include "user/proc_maps.h"
#include "user/symcache.h"

#define DL_DEBUG_STATE	     "_dl_debug_state"
#define STATIC_CUDART_MARKER "cudaMalloc"
#define PLAIN_EXES	     64 /* executables last found without a static cudart */

enum lib_role { ROLE_LD_SO, ROLE_RUNTIME, ROLE_DRIVER };

/* a file already probed, for one pid or for every process (pid -1) */
struct attached_file {
	pid_t scope;
	uint64_t dev, inode;
};

/* a file as it was when checked: an inode number is reused once its file is deleted */
struct exe_id {
	uint64_t dev, inode, size;
	struct timespec mtime;
};

struct gs_lib_attach {
	struct gs_bpf_objects *objs;
	struct gs_links *links;
	struct gs_symcache *symcache;
	struct gs_probe_quota *quota;	      /* users' own files probed per process (-a) */
	struct gs_torch_attach *torch_attach; /* once torch.bpf.o is loaded */
	struct attached_file *files;
	size_t nr_files, cap_files;
	bool all;
	bool by_file; /* a followed tree: every file probed for all processes, BPF filters */
	uint32_t families;
	uint32_t counted; /* families whose calls carry no stack */
	bool saw_cuda;
	struct exe_id plain_exes[PLAIN_EXES]; /* a ring: bounded however many programs run */
	size_t next_plain;
};

struct gs_lib_attach *gs_lib_attach__new(struct gs_bpf_objects *objs, struct gs_links *links,
					 struct gs_symcache *symcache, bool all, uint32_t families)
{
	struct gs_lib_attach *la = calloc(1, sizeof(*la));

	if (!la)
		return NULL;
	la->objs = objs;
	la->links = links;
	la->symcache = symcache;
	la->all = all;
	la->families = families;
	la->quota = gs_probe_quota__new(GS_PROBE_QUOTA_PER_USER);
	if (!la->quota) {
		free(la);
		return NULL;
	}
	return la;
}

void gs_lib_attach__probe_by_file(struct gs_lib_attach *la)
{
	la->by_file = true;
}

void gs_lib_attach__count_only(struct gs_lib_attach *la, uint32_t families)
{
	la->counted = families;
}

void gs_lib_attach__free(struct gs_lib_attach *la)
{
	if (!la)
		return;
	gs_torch_attach__free(la->torch_attach);
	gs_probe_quota__free(la->quota);
	free(la->files);
	free(la);
}

bool gs_lib_attach__saw_cuda(const struct gs_lib_attach *la)
{
	return la->saw_cuda;
}

static bool is_attached(struct gs_lib_attach *la, pid_t scope, const struct gs_mapping *m)
{
	for (size_t i = 0; i < la->nr_files; i++) {
		const struct attached_file *f = &la->files[i];

		if (f->scope == scope && f->dev == m->dev && f->inode == m->inode)
			return true;
	}
	return false;
}

static int remember_attached(struct gs_lib_attach *la, pid_t scope, const struct gs_mapping *m)
{
	if (GS_ARRAY_RESERVE(la->files, la->nr_files, la->cap_files, 16))
		return -ENOMEM;
	la->files[la->nr_files++] =
		(struct attached_file){ .scope = scope, .dev = m->dev, .inode = m->inode };
	return 0;
}

/* the kernel's dev_t of a userspace one (st_dev, makedev()): what BPF reads in s_dev */
static uint64_t kernel_dev(uint64_t dev)
{
	return (uint64_t)major(dev) << 20 | minor(dev);
}

/* the 5.10 builds find an entry's cookie by the probed file and offset (bpf_objects.h) */
static int old_cookie(struct gs_lib_attach *la, const char *path, uint64_t off, uint64_t cookie)
{
	struct stat st;

	if (!la->objs->old)
		return 0;
	if (stat(path, &st))
		return -errno;
	return gs_bpf_objects__old_cookie(la->objs, kernel_dev(st.st_dev), st.st_ino, off, cookie);
}

static int attach_symbol(struct gs_lib_attach *la, struct gs_elf *elf, const char *path,
			 pid_t scope, const char *name, struct bpf_program *entry,
			 struct bpf_program *ret, uint64_t cookie)
{
	uint64_t vaddr = gs_elf__find_function(elf, name), off;
	int err;

	if (!vaddr)
		return -ENOENT;
	if (gs_elf__vaddr_to_offset(elf, vaddr, &off))
		return -ENOEXEC;
	err = old_cookie(la, path, off, cookie);
	if (err)
		return err;
	if (la->objs->old && !la->objs->old_cookies)
		cookie = 0; /* the kernel takes none: libbpf would refuse the link */
	/* the return probe first: an entry seen without its return would look like nesting */
	if (ret) {
		err = gs_links__attach_uprobe(la->links, ret, scope, path, off, true, cookie);
		if (err)
			return err;
	}
	return gs_links__attach_uprobe(la->links, entry, scope, path, off, false, cookie);
}

static void programs_for(struct gs_lib_attach *la, const struct gs_cuda_api *api,
			 struct bpf_program **entry, struct bpf_program **ret)
{
	struct mem_bpf *mem = la->objs->mem;
	struct cuda_bpf *cuda = la->objs->cuda;

	switch (api->shape) {
	case GS_SHAPE_ALLOC:
		*entry = mem->progs.mem_alloc_enter;
		*ret = mem->progs.mem_alloc_exit;
		break;
	case GS_SHAPE_ALLOC_PITCH:
		*entry = mem->progs.mem_alloc_pitch_enter;
		*ret = mem->progs.mem_alloc_exit;
		break;
	case GS_SHAPE_REGISTER:
		*entry = mem->progs.mem_register_enter;
		*ret = mem->progs.mem_alloc_exit;
		break;
	case GS_SHAPE_FREE:
		*entry = mem->progs.mem_free_enter;
		*ret = mem->progs.mem_free_exit;
		break;
	default:
		*entry = cuda->progs.cuda_call_enter;
		*ret = cuda->progs.cuda_call_exit;
	}
	if (!gs_cuda_api_wants_return(api, la->families)) {
		*entry = cuda->progs.cuda_launch_enter; /* all a launch shows is known at entry */
		*ret = NULL;
	}
}

/*
 * What attach_cuda_lib() probed in one library. It is logged only once the probes are in
 * (a batch's links are made at its end): a tester or a user who acts on the line must not
 * race the probes.
 */
struct cuda_lib_probes {
	size_t attached, wanted;
	char missing[2048];
};

static void log_cuda_lib(const struct gs_lib_attach *la, pid_t scope, const char *shown,
			 const struct cuda_lib_probes *p)
{
	if (!p->attached)
		return;
	if (scope > 0)
		gs_info("pid %d: probing %zu/%zu CUDA functions in %s", (int)scope, p->attached,
			p->wanted, shown);
	else /* probes by file: under a followed tree, BPF keeps only the tree's events */
		gs_info("probing %zu/%zu CUDA functions in %s (%s)", p->attached, p->wanted, shown,
			la->by_file ? "the followed processes" : "all processes");
	if (*p->missing)
		gs_dbg("  not in this version: %s", p->missing);
}

/* A call of a family only counted: no stack, and launches and syncs counted in the kernel. */
static uint32_t counted_flags(const struct gs_cuda_api *api, uint32_t flags)
{
	flags &= ~(uint32_t)GS_CALL_F_USER_STACK;
	if (api->family == GS_FAM_LAUNCH)
		flags |= GS_CALL_F_COUNT_LAUNCH;
	else if (api->family == GS_FAM_SYNC)
		flags |= GS_CALL_F_COUNT_SYNC;
	return flags;
}

static int attach_cuda_lib(struct gs_lib_attach *la, struct gs_elf *elf, const char *path,
			   const char *shown, pid_t scope, enum gs_cuda_lib lib,
			   struct cuda_lib_probes *p)
{
	size_t nr_apis, len = 0;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr_apis);
	int first_err = 0;

	*p = (struct cuda_lib_probes){ .attached = 0 };

	for (size_t i = 1; i < nr_apis; i++) {
		const struct gs_cuda_api *api = &apis[i];
		struct bpf_program *entry, *ret;
		uint64_t cookie;
		uint32_t flags;
		int err;

		if (api->lib != lib || !(la->families & GS_FAM_BIT(api->family)))
			continue;
		p->wanted++;
		programs_for(la, api, &entry, &ret);
		flags = gs_cuda_api_call_flags(api);
		if (la->counted & GS_FAM_BIT(api->family))
			flags = counted_flags(api, flags);
		cookie = api->id | (uint64_t)flags << 16;
		err = attach_symbol(la, elf, path, scope, api->name, entry, ret, cookie);
		if (!err) {
			p->attached++;
			continue;
		}
		if (err != -ENOENT) {
			gs_warn("attach %s:%s: %s", shown, api->name, strerror(-err));
			if (!first_err)
				first_err = err;
		}
		if (len < sizeof(p->missing))
			len += (size_t)snprintf(p->missing + len, sizeof(p->missing) - len, "%s%s",
						len ? " " : "", api->name);
	}
	if (!p->wanted)
		return -ENOENT;
	if (!p->attached) {
		gs_warn("%s: none of the %zu %s functions asked for could be probed", shown,
			p->wanted, lib == GS_LIB_RUNTIME ? "runtime" : "driver");
		return first_err ? first_err : -ENOENT;
	}
	la->saw_cuda = true;
	return 0;
}

/*
 * Under -a, a file its owner can change is probed in the process that maps it only
 * (*scope becomes that pid), within the owner's quota. Returns 0, 1 when it is probed
 * there already, or -EDQUOT (logged).
 */
static int scope_for_file(struct gs_lib_attach *la, const struct gs_maps *maps,
			  const struct gs_mapping *m, const struct stat *st, pid_t *scope)
{
	/* its owner chooses what code it holds: never probe it in every process */
	if (*scope >= 0 || !la->all || gs_is_trusted_file(st))
		return 0;
	gs_info("pid %d: %s is not root's or is writable by others: probed in this process only",
		(int)maps->pid, m->path);
	*scope = maps->pid;
	if (is_attached(la, *scope, m))
		return 1;
	if (!gs_probe_quota__take(la->quota, st->st_uid, *scope, m->dev, m->inode)) {
		gs_warn("pid %d: %s: skipped: uid %u has %d files of its own probed already",
			(int)*scope, m->path, (unsigned int)st->st_uid, GS_PROBE_QUOTA_PER_USER);
		return -EDQUOT;
	}
	return 0;
}

static int attach_role(struct gs_lib_attach *la, struct gs_elf *elf, const char *path,
		       const char *shown, pid_t scope, enum lib_role role,
		       struct cuda_lib_probes *probes)
{
	int err;

	switch (role) {
	case ROLE_LD_SO:
		err = attach_symbol(la, elf, path, scope, DL_DEBUG_STATE,
				    la->objs->proc->progs.dl_debug_state_enter, NULL, 0);
		if (err)
			gs_warn("%s: cannot probe %s (%s): libraries loaded later are found late",
				shown, DL_DEBUG_STATE, strerror(-err));
		return err;
	case ROLE_RUNTIME:
		return attach_cuda_lib(la, elf, path, shown, scope, GS_LIB_RUNTIME, probes);
	case ROLE_DRIVER:
		return attach_cuda_lib(la, elf, path, shown, scope, GS_LIB_DRIVER, probes);
	}
	return -EINVAL;
}

/*
 * Opens the file m maps, checked to be the one the snapshot names, and parses it from that
 * descriptor; its probes go in through the same descriptor (/proc/self/fd/N), so they land
 * in exactly the file that was checked and parsed, whatever is mapped there by then.
 */
static int attach_mapping(struct gs_lib_attach *la, const struct gs_maps *maps,
			  const struct gs_mapping *m, enum lib_role role, pid_t scope)
{
	struct cuda_lib_probes probes = { .attached = 0 };
	char path[32];
	struct gs_elf *elf;
	struct stat st;
	int fd, err, err2;

	if (is_attached(la, scope, m))
		return 0;
	fd = gs_mapping__open(maps, m, &st);
	if (fd == -ESTALE) {
		gs_warn("pid %d: %s: skipped: another file is mapped there now", (int)maps->pid,
			m->path);
		return fd;
	}
	if (fd < 0) {
		/* not remembered: the process may be gone, the next one gets its own try */
		gs_warn("%s: cannot read: %s", m->path, strerror(-fd));
		return fd;
	}
	err = scope_for_file(la, maps, m, &st, &scope);
	if (err == 1) {
		close(fd);
		return 0;
	}
	if (err)
		goto out_remember;
	elf = gs_symcache__elf_fd(la->symcache, m->path, fd, &st);
	if (!elf) {
		err = -errno;
		gs_warn("%s: cannot read: %s", m->path, strerror(-err));
		goto out_remember;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* one multi-uprobe link per program for the file: one grace period to detach */
	gs_links__batch_begin(la->links);
	err = attach_role(la, elf, path, m->path, scope, role, &probes);
	err2 = gs_links__batch_end(la->links);
	if (err2)
		gs_warn("%s: attaching its probes: %s", m->path, strerror(-err2));
	err = err ?: err2;
	if (!err)
		log_cuda_lib(la, scope, m->path, &probes); /* now that they are in */
out_remember:
	/* remembered even on failure: retrying on every loader event would only repeat it */
	remember_attached(la, scope, m);
	close(fd);
	return err;
}

/* True if maps has an executable mapping of libc10 (PyTorch's core library). */
static bool maps_torch(const struct gs_maps *maps)
{
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];

		if (m->exec && m->path && gs_is_c10_name(m->path))
			return true;
	}
	return false;
}

/* PyTorch's probes for maps: its BPF object is loaded here, the first time one is seen. */
static bool scan_torch(struct gs_lib_attach *la, const struct gs_maps *maps, pid_t scope)
{
	struct torch_bpf *skel;

	if (!maps_torch(maps))
		return false;
	if (!la->torch_attach) {
		skel = gs_bpf_objects__torch(la->objs);
		if (!skel)
			return false;
		la->torch_attach = gs_torch_attach__new(skel, la->links, la->symcache, la->quota);
		if (!la->torch_attach) {
			gs_warn("PyTorch probes: %s", strerror(ENOMEM));
			return false;
		}
	}
	return gs_torch_attach__scan(la->torch_attach, maps, scope);
}

static bool same_exe(const struct exe_id *id, const struct stat *st)
{
	return id->dev == st->st_dev && id->inode == st->st_ino &&
	       id->size == (uint64_t)st->st_size && id->mtime.tv_sec == st->st_mtim.tv_sec &&
	       id->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/*
 * Whether the executable m holds a static cudart. Under -a every program run on the host
 * comes by: its symbols are parsed for this check alone, not kept in the symcache (which
 * keeps a file's for good), and the last PLAIN_EXES found without one are not parsed again.
 */
static bool static_cudart(struct gs_lib_attach *la, const struct gs_maps *maps,
			  const struct gs_mapping *m)
{
	struct gs_elf *elf;
	struct stat st;
	bool found;
	int fd = gs_mapping__open(maps, m, &st);

	if (fd < 0)
		return false;
	for (size_t i = 0; i < PLAIN_EXES; i++) {
		if (same_exe(&la->plain_exes[i], &st)) {
			close(fd);
			return false;
		}
	}
	elf = gs_elf__open_fd(fd);
	close(fd);
	found = elf && gs_elf__find_function(elf, STATIC_CUDART_MARKER);
	gs_elf__free(elf);
	if (!found) {
		la->plain_exes[la->next_plain] = (struct exe_id){
			.dev = st.st_dev,
			.inode = st.st_ino,
			.size = (uint64_t)st.st_size,
			.mtime = st.st_mtim,
		};
		la->next_plain = (la->next_plain + 1) % PLAIN_EXES;
	}
	return found;
}

bool gs_lib_attach__scan(struct gs_lib_attach *la, pid_t pid)
{
	pid_t scope = la->all || la->by_file ? -1 : pid;
	char exe[PATH_MAX] = "";
	const struct gs_maps *maps;
	bool cuda = false;

	if (gs_symcache__refresh(la->symcache, pid))
		return false;
	maps = gs_symcache__maps(la->symcache, pid);
	gs_read_exe_path(pid, exe, sizeof(exe));
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];

		if (!m->exec || !m->path)
			continue;
		if (gs_is_ld_so_name(m->path)) {
			attach_mapping(la, maps, m, ROLE_LD_SO, scope);
		} else if (gs_is_cudart_name(m->path)) {
			cuda |= attach_mapping(la, maps, m, ROLE_RUNTIME, scope) == 0;
		} else if (gs_is_libcuda_name(m->path)) {
			cuda |= attach_mapping(la, maps, m, ROLE_DRIVER, scope) == 0;
		} else if (*exe && !strcmp(m->path, exe)) {
			/* a statically linked cudart lives in the executable itself */
			if (static_cudart(la, maps, m))
				cuda |= attach_mapping(la, maps, m, ROLE_RUNTIME, scope) == 0;
		}
	}
	if (scan_torch(la, maps, scope))
		cuda = la->saw_cuda = true;
	return cuda;
}

void gs_lib_attach__command(struct gs_lib_attach *la, pid_t pid, const char *exe,
			    struct gs_elf *elf)
{
	const char *interp = gs_elf__interp(elf);
	struct cuda_lib_probes probes;

	if (la->by_file)
		return; /* it stops at exec, and its new image is probed then (bpf/proc.bpf.c) */

	if (interp) {
		struct gs_elf *ld = gs_elf__open(interp);
		uint64_t vaddr = ld ? gs_elf__find_function(ld, DL_DEBUG_STATE) : 0, off;

		if (!vaddr || gs_elf__vaddr_to_offset(ld, vaddr, &off) ||
		    gs_links__attach_uprobe(la->links, la->objs->proc->progs.dl_debug_state_enter,
					    pid, interp, off, false, 0))
			gs_warn("%s: cannot probe %s: CUDA libraries may be found late", interp,
				DL_DEBUG_STATE);
		gs_elf__free(ld);
	}
	if (gs_elf__find_function(elf, STATIC_CUDART_MARKER) &&
	    !attach_cuda_lib(la, elf, exe, exe, pid, GS_LIB_RUNTIME, &probes))
		log_cuda_lib(la, pid, exe, &probes);
}

/* the 5.10 builds' cookies of a file no process is probed in any more go (bounded map) */
static void forget_file(struct gs_lib_attach *la, const struct attached_file *f)
{
	for (size_t i = 0; i < la->nr_files; i++)
		if (la->files[i].dev == f->dev && la->files[i].inode == f->inode)
			return;
	gs_bpf_objects__old_forget_file(la->objs, kernel_dev(f->dev), f->inode);
}

void gs_lib_attach__forget(struct gs_lib_attach *la, pid_t pid)
{
	for (size_t i = 0; i < la->nr_files;) {
		struct attached_file f = la->files[i];

		if (f.scope != pid) {
			i++;
			continue;
		}
		la->files[i] = la->files[--la->nr_files];
		forget_file(la, &f);
	}
	if (la->torch_attach)
		gs_torch_attach__forget(la->torch_attach, pid);
	gs_probe_quota__release_pid(la->quota, pid);
	gs_links__release_pid(la->links, pid);
}
