// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* attach.c: PyTorch library discovery per process and the choice of tensor source. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <bpf/libbpf.h>
#include "torch.skel.h"
#include "profilers/probe_quota.h"
#include "profilers/torch/attach.h"
#include "profilers/torch/dynsym.h"
#include "profilers/torch/syms.h"
#include "user/array.h"
#include "user/elf_file.h"
#include "user/links.h"
#include "user/log.h"
#include "user/proc_maps.h"
#include "user/symcache.h"

#define CXA_THROW "__cxa_throw"

struct probed_file {
	pid_t scope;
	uint64_t dev, inode;
};

struct gs_torch_attach {
	struct torch_bpf *skel;
	struct gs_links *links;
	struct gs_symcache *symcache;
	struct gs_probe_quota *quota;
	struct probed_file *files;
	size_t nr_files, cap_files;
};

/* where each hook is in one file (link-time addresses; 0 when absent) */
struct hooks {
	uint64_t vaddr[GS_TORCH_HOOK__MAX];
};

struct gs_torch_attach *gs_torch_attach__new(struct torch_bpf *skel, struct gs_links *links,
					     struct gs_symcache *symcache,
					     struct gs_probe_quota *quota)
{
	struct gs_torch_attach *ta = calloc(1, sizeof(*ta));

	if (!ta)
		return NULL;
	ta->skel = skel;
	ta->links = links;
	ta->symcache = symcache;
	ta->quota = quota;
	return ta;
}

void gs_torch_attach__free(struct gs_torch_attach *ta)
{
	if (!ta)
		return;
	free(ta->files);
	free(ta);
}

void gs_torch_attach__forget(struct gs_torch_attach *ta, pid_t scope)
{
	for (size_t i = 0; i < ta->nr_files;) {
		if (ta->files[i].scope == scope)
			ta->files[i] = ta->files[--ta->nr_files];
		else
			i++;
	}
}

static bool known(const struct gs_torch_attach *ta, pid_t scope, const struct gs_mapping *m)
{
	for (size_t i = 0; i < ta->nr_files; i++)
		if (ta->files[i].scope == scope && ta->files[i].dev == m->dev &&
		    ta->files[i].inode == m->inode)
			return true;
	return false;
}

/* true the first time (scope, file) is seen; remembered even if attaching then fails */
static bool first_time(struct gs_torch_attach *ta, pid_t scope, const struct gs_mapping *m)
{
	if (known(ta, scope, m) || GS_ARRAY_RESERVE(ta->files, ta->nr_files, ta->cap_files, 16))
		return false;
	ta->files[ta->nr_files++] =
		(struct probed_file){ .scope = scope, .dev = m->dev, .inode = m->inode };
	return true;
}

static int note_hook(const char *name, uint64_t vaddr, void *ctx)
{
	struct hooks *h = ctx;
	enum gs_torch_hook hook = gs_torch_classify_symbol(name);

	if (hook != GS_TORCH_HOOK_NONE && !h->vaddr[hook])
		h->vaddr[hook] = vaddr;
	return 0;
}

static int attach_at(struct gs_torch_attach *ta, struct gs_elf *elf, const char *path, pid_t scope,
		     uint64_t vaddr, struct bpf_program *prog, bool ret)
{
	uint64_t off;

	if (!vaddr)
		return -ENOENT;
	if (gs_elf__vaddr_to_offset(elf, vaddr, &off))
		return -ENOEXEC;
	return gs_links__attach_uprobe(ta->links, prog, scope, path, off, ret, 0);
}

static const char *who(pid_t scope, char *buf, size_t len)
{
	if (scope > 0)
		snprintf(buf, len, "pid %d", (int)scope);
	else
		snprintf(buf, len, "all processes");
	return buf;
}

/*
 * The file a mapping names, opened and checked against the snapshot (gs_mapping__open()),
 * and its symbols parsed from that descriptor; the probes go in through the same descriptor
 * (path: "/proc/self/fd/N"). A file that is not root's is probed in its process only: *scope
 * narrows to it. Returns the descriptor, which the caller closes, or -errno (logged).
 */
static int open_checked(struct gs_torch_attach *ta, const struct gs_maps *maps,
			const struct gs_mapping *m, pid_t *scope, struct stat *stp)
{
	struct stat st;
	int fd = gs_mapping__open(maps, m, &st);

	if (fd < 0) {
		if (fd == -ESTALE)
			gs_warn("pid %d: %s: skipped: another file is mapped there now",
				(int)maps->pid, m->path);
		else
			gs_warn("%s: cannot read: %s", m->path, strerror(-fd));
		return fd;
	}
	if (*scope < 0 && !gs_is_trusted_file(&st)) {
		gs_info("pid %d: %s is not root's or is writable by others: probed in this "
			"process only",
			(int)maps->pid, m->path);
		*scope = maps->pid;
		if (!gs_probe_quota__take(ta->quota, st.st_uid, maps->pid, m->dev, m->inode)) {
			gs_warn("pid %d: %s: skipped: uid %u has %d files of its own probed "
				"already",
				(int)maps->pid, m->path, (unsigned int)st.st_uid,
				GS_PROBE_QUOTA_PER_USER);
			close(fd);
			return -EDQUOT;
		}
	}
	*stp = st;
	return fd;
}

static int open_mapping(struct gs_torch_attach *ta, const struct gs_maps *maps,
			const struct gs_mapping *m, pid_t *scope, char *path, size_t len,
			struct gs_elf **elf)
{
	struct stat st;
	int fd = open_checked(ta, maps, m, scope, &st);

	if (fd < 0)
		return fd;
	*elf = gs_symcache__elf_fd(ta->symcache, m->path, fd, &st);
	if (!*elf) {
		gs_warn("%s: cannot read: %s", m->path, strerror(errno));
		close(fd);
		return -ENOEXEC;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

static void attach_c10(struct gs_torch_attach *ta, const struct gs_mapping *m, int fd,
		       struct gs_elf *elf, pid_t scope, const char *version)
{
	struct torch_bpf *s = ta->skel;
	struct hooks h = {};
	char path[32], w[32];
	int err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	gs_elf__for_each_function(elf, note_hook, &h);
	/* return probe first: an entry seen without its return would leave a stale pending */
	err = attach_at(ta, elf, path, scope, h.vaddr[GS_TORCH_HOOK_ALLOC_CPU],
			s->progs.alloc_cpu_exit, true);
	if (!err)
		err = attach_at(ta, elf, path, scope, h.vaddr[GS_TORCH_HOOK_ALLOC_CPU],
				s->progs.alloc_cpu_enter, false);
	if (!err)
		err = attach_at(ta, elf, path, scope, h.vaddr[GS_TORCH_HOOK_FREE_CPU],
				s->progs.free_cpu_enter, false);
	if (err)
		gs_warn("%s: %s: CPU tensors not followed (c10::alloc_cpu/free_cpu: %s)",
			who(scope, w, sizeof(w)), m->path, strerror(-err));
	else
		gs_info("%s: PyTorch %s (%s): CPU tensors from c10::alloc_cpu/free_cpu",
			who(scope, w, sizeof(w)), *version ? version : "(version unknown)",
			m->path);
	err = attach_at(ta, elf, path, scope, h.vaddr[GS_TORCH_HOOK_REPORT_OOM],
			s->progs.torch_report_oom, false);
	if (err)
		gs_info("%s: %s: no c10::reportOutOfMemoryToProfiler (%s); OOMs are seen as "
			"c10::OutOfMemoryError throws",
			who(scope, w, sizeof(w)), m->path, strerror(-err));
}

#define MAX_CALL_SITES 16

/*
 * Link-time addresses just after each `call rel32` to target in the executable sections
 * of path: where a plain probe sees the call return. Returns how many (at most max).
 * The bytes are not disassembled: an 0xe8 whose displacement lands exactly on target is
 * taken for a call. A coincidental match inside another instruction (odds about 2^-32 per
 * 0xe8 byte) would put a probe mid-instruction; MAX_CALL_SITES bounds the damage of a
 * function called from everywhere (then it is not the allocator's malloc anyway).
 */
static size_t find_return_sites(int fd, uint64_t target, uint64_t *out, size_t max)
{
	Elf_Scn *scn = NULL;
	size_t n = 0;
	Elf *e = gs_elf_begin(fd);

	while (e && n < max && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		const unsigned char *b;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !(data = elf_getdata(scn, NULL)) ||
		    !data->d_buf)
			continue;
		b = data->d_buf;
		for (size_t i = 0; i + 5 <= data->d_size && n < max; i++) {
			int32_t rel;

			if (b[i] != 0xe8)
				continue;
			memcpy(&rel, b + i + 1, sizeof(rel));
			if (sh.sh_addr + i + 5 + (int64_t)rel == target)
				out[n++] = sh.sh_addr + i + 5;
		}
	}
	elf_end(e);
	return n;
}

static int attach_return_sites(struct gs_torch_attach *ta, struct gs_elf *elf, int fd,
			       const char *path, pid_t scope, uint64_t target,
			       struct bpf_program *prog)
{
	uint64_t sites[MAX_CALL_SITES];
	size_t n = target ? find_return_sites(fd, target, sites, MAX_CALL_SITES) : 0;
	int err = 0;

	if (!n)
		return -ENOENT;
	for (size_t i = 0; i < n && !err; i++)
		err = attach_at(ta, elf, path, scope, sites[i], prog, false);
	return err;
}

static int attach_usdt(struct gs_torch_attach *ta, const char *path, pid_t scope)
{
	int err = gs_links__attach_usdt(ta->links, ta->skel->progs.torch_usdt_malloc, scope, path,
					"pytorch", "malloc", 0);

	return err
		       ?: gs_links__attach_usdt(ta->links, ta->skel->progs.torch_usdt_free, scope,
						path, "pytorch", "free", 0);
}

/*
 * 2.15's allocateWithAddress reaches DeviceCachingAllocator::mallocWithAddress without
 * NativeCachingAllocator::malloc: its blocks need probes of their own (optional: older
 * versions have no such function).
 */
static void attach_malloc_with_address(struct gs_torch_attach *ta, struct gs_elf *elf, int fd,
				       const char *path, pid_t scope, const struct hooks *h,
				       const char *w)
{
	uint64_t target = h->vaddr[GS_TORCH_HOOK_MALLOC_WITH_ADDRESS];
	int err;

	if (!target)
		return;
	err = attach_return_sites(ta, elf, fd, path, scope, target,
				  ta->skel->progs.caching_malloc_returned);
	if (!err)
		err = attach_at(ta, elf, path, scope, target,
				ta->skel->progs.malloc_with_address_enter, false);
	if (err)
		gs_warn("%s: cannot probe %s (%s): tensors placed at an address are missed", w,
			gs_torch_hook_name(GS_TORCH_HOOK_MALLOC_WITH_ADDRESS), strerror(-err));
}

/* The best tensor source this libc10_cuda offers, given the libc10 beside it. */
static void attach_c10_cuda(struct gs_torch_attach *ta, const struct gs_maps *maps,
			    const struct gs_mapping *m, int fd, struct gs_elf *elf,
			    const struct gs_mapping *c10, pid_t scope, const char *version)
{
	struct torch_bpf *s = ta->skel;
	char path[32], c10_path[32], w[32];
	struct hooks h = {}, hc = {};
	struct gs_elf *c10_elf;
	pid_t c10_scope = scope;
	const char *how;
	int err, c10_fd;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	who(scope, w, sizeof(w));
	err = attach_usdt(ta, path, scope);
	if (!err) {
		how = "USDT pytorch:malloc/pytorch:free";
		goto out_log;
	}
	gs_dbg("%s: %s: no USDT probes pytorch:malloc/free (%s)", w, m->path, strerror(-err));
	c10_fd = c10 ? open_mapping(ta, maps, c10, &c10_scope, c10_path, sizeof(c10_path), &c10_elf)
		     : -ENOENT;
	if (c10_fd >= 0) {
		gs_elf__for_each_function(c10_elf, note_hook, &hc);
		/* the narrower scope of the two files: both are this process's choice then */
		if (c10_scope > 0)
			scope = c10_scope;
		err = attach_at(ta, c10_elf, c10_path, scope, hc.vaddr[GS_TORCH_HOOK_REPORT_USAGE],
				s->progs.torch_report_usage, false);
		close(c10_fd);
		if (!err) {
			how = "c10::reportMemoryUsageToProfiler";
			goto out_log;
		}
	}
	gs_elf__for_each_function(elf, note_hook, &h);
	err = attach_return_sites(ta, elf, fd, path, scope, h.vaddr[GS_TORCH_HOOK_CACHING_MALLOC],
				  s->progs.caching_malloc_returned);
	if (!err)
		err = attach_at(ta, elf, path, scope, h.vaddr[GS_TORCH_HOOK_CACHING_MALLOC],
				s->progs.caching_malloc_enter, false);
	if (!err)
		err = attach_at(ta, elf, path, scope, h.vaddr[GS_TORCH_HOOK_CACHING_FREE],
				s->progs.caching_free_enter, false);
	if (!err) {
		attach_malloc_with_address(ta, elf, fd, path, scope, &h, w);
		how = "the caching allocator's malloc/free (.symtab)";
		goto out_log;
	}
	gs_warn("%s: %s: no tensor-level source (no USDT probes, profiler hook or allocator "
		"symbols); only its segments (cudaMalloc/cudaFree) are seen",
		w, m->path);
	return;
out_log:
	gs_info("%s: PyTorch %s (%s): CUDA tensors from %s", w,
		*version ? version : "(version unknown)", m->path, how);
}

static void attach_cxx(struct gs_torch_attach *ta, const struct gs_mapping *m, int fd,
		       struct gs_elf *elf, pid_t scope)
{
	char path[32], w[32];
	int err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = attach_at(ta, elf, path, scope, gs_elf__find_function(elf, CXA_THROW),
			ta->skel->progs.cxa_throw_enter, false);
	if (err)
		gs_warn("%s: %s: cannot probe %s (%s): OOMs only from the profiler hook",
			who(scope, w, sizeof(w)), m->path, CXA_THROW, strerror(-err));
}

/*
 * CPU tensors in file-backed shared memory (share_memory_(), tensors received from another
 * process) come from at::MapAllocator in libtorch_cpu.so, not from c10::alloc_cpu. Its two
 * functions are found among the file's exports alone (profilers/torch/dynsym.h).
 */
static void attach_torch_cpu(struct gs_torch_attach *ta, const struct gs_maps *maps,
			     const struct gs_mapping *m, pid_t scope)
{
	const char *names[] = { GS_TORCH_MAP_ALLOCATOR_DTOR, gs_torch_map_allocator_ctors[0],
				gs_torch_map_allocator_ctors[1] };
	uint64_t off[3] = { 0 }, ctor;
	char path[32], w[32];
	struct stat st;
	int fd, err;

	if (known(ta, scope, m))
		return;
	fd = open_checked(ta, maps, m, &scope, &st);
	if (fd < 0 || !first_time(ta, scope, m))
		goto out_close;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	who(scope, w, sizeof(w));
	err = gs_dynsym_offsets(fd, names, 3, off);
	ctor = off[1] ?: off[2];
	if (err || !off[0] || !ctor) {
		gs_info("%s: %s: no at::MapAllocator of a known signature: CPU tensors in shared "
			"memory not followed",
			w, m->path);
		goto out_close;
	}
	err = gs_links__attach_uprobe(ta->links, ta->skel->progs.map_allocator_free, scope, path,
				      off[0], false, 0);
	if (!err)
		err = gs_links__attach_uprobe(ta->links, ta->skel->progs.map_allocator_enter, scope,
					      path, ctor, false, 0);
	if (err)
		gs_warn("%s: %s: CPU tensors in shared memory not followed (at::MapAllocator: %s)",
			w, m->path, strerror(-err));
	else
		gs_info("%s: %s: CPU tensors in shared memory from at::MapAllocator", w, m->path);
out_close:
	if (fd >= 0)
		close(fd);
}

enum torch_file { FILE_C10, FILE_CXX, FILE_C10_CUDA };

/*
 * Attaches to one file the first time (scope, file) is seen. A file not root's is probed in
 * the process only, and tried again for every process that maps it.
 */
static void attach_file(struct gs_torch_attach *ta, const struct gs_maps *maps,
			const struct gs_mapping *m, pid_t scope, const struct gs_mapping *c10,
			const char *version, enum torch_file which)
{
	struct gs_elf *elf;
	char path[32];
	int fd;

	if (known(ta, scope, m))
		return;
	fd = open_mapping(ta, maps, m, &scope, path, sizeof(path), &elf);
	if (fd < 0)
		return; /* not remembered: gone or replaced, the next snapshot gets its own try */
	if (first_time(ta, scope, m)) {
		switch (which) {
		case FILE_C10:
			attach_c10(ta, m, fd, elf, scope, version);
			break;
		case FILE_CXX:
			attach_cxx(ta, m, fd, elf, scope);
			break;
		case FILE_C10_CUDA:
			attach_c10_cuda(ta, maps, m, fd, elf, c10, scope, version);
			break;
		}
	}
	close(fd);
}

bool gs_torch_attach__scan(struct gs_torch_attach *ta, const struct gs_maps *maps, pid_t scope)
{
	const struct gs_mapping *c10 = NULL, *cuda = NULL, *cxx = NULL, *cpu = NULL;
	char root[64], version[64] = "";

	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];

		if (!m->exec || !m->path)
			continue;
		if (!c10 && gs_is_c10_name(m->path))
			c10 = m;
		else if (!cuda && gs_is_c10_cuda_name(m->path))
			cuda = m;
		else if (!cxx && gs_is_libstdcxx_name(m->path))
			cxx = m;
		else if (!cpu && gs_is_torch_cpu_name(m->path))
			cpu = m;
	}
	if (!c10)
		return false;
	snprintf(root, sizeof(root), "/proc/%d/root", (int)maps->pid);
	gs_torch_read_version(root, c10->path, version, sizeof(version));
	attach_file(ta, maps, c10, scope, c10, version, FILE_C10);
	if (cxx)
		attach_file(ta, maps, cxx, scope, c10, version, FILE_CXX);
	if (cuda)
		attach_file(ta, maps, cuda, scope, c10, version, FILE_C10_CUDA);
	if (cpu)
		attach_torch_cpu(ta, maps, cpu, scope);
	return true;
}
