// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* tracker.c: load the BPF objects, follow targets, find CUDA libraries and attach. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cuda.skel.h"
#include "mem.skel.h"
#include "proc.skel.h"
#include "torch.skel.h"
#include "profilers/cuda/api.h"
#include "profilers/probe_quota.h"
#include "profilers/torch/attach.h"
#include "profilers/tracker.h"
#include "user/elf_file.h"
#include "user/event_decode.h"
#include "user/links.h"
#include "user/proc_info.h"
#include "user/clock.h"
#include "user/log.h"
#include "user/proc_maps.h"
#include "user/spawn.h"
#include "user/symcache.h"
#include "user/unwind.h"

#define LIVENESS_CHECK_NS    500000000ULL
#define WAKEUP_PART	     8
#define DL_DEBUG_STATE	     "_dl_debug_state"
#define STATIC_CUDART_MARKER "cudaMalloc"
/*
 * Stack slices waiting for the record they precede. That record was reserved right after
 * the slice by the same program, so only records of other CPUs come between the two; a
 * slot per thread of a few CPUs' worth is plenty, and an orphan (the record's reserve
 * failed) is simply overwritten.
 */
#define USTACK_SLOTS 64

enum lib_role { ROLE_LD_SO, ROLE_RUNTIME, ROLE_DRIVER };

/* a file already probed, for one pid or for every process (pid -1) */
struct attached_file {
	pid_t scope;
	uint64_t dev, inode;
};

struct target {
	pid_t pid;
	char comm[16];
};

struct ustack_slot {
	__u32 tid;
	__u64 ts_ns;
	struct gs_ustack_event *e; /* owned copy; NULL until first used */
};

struct gs_tracker {
	struct gs_tracker_opts opts;
	struct gs_tracker_ops ops;
	struct proc_bpf *proc;
	struct mem_bpf *mem;
	struct cuda_bpf *cuda;
	struct torch_bpf *torch; /* NULL unless opts.torch */
	struct gs_torch_attach *torch_attach;
	struct ring_buffer *rb;
	struct gs_links *links;
	struct gs_probe_quota *quota; /* users' own files probed per process (-a) */
	struct gs_symcache *symcache;
	struct gs_unwinder *unwinder; /* --stacks dwarf only */
	struct ustack_slot ustacks[USTACK_SLOTS];
	size_t next_ustack;
	struct attached_file *files;
	size_t nr_files, cap_files;
	struct target *targets;
	size_t nr_targets, cap_targets;
	struct gs_child child;
	int child_status;
	bool child_reaped;
	bool saw_cuda;
	uint64_t last_liveness_ns;
};

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (!gs_log_enabled(GS_LOG_LIBBPF) && level != LIBBPF_WARN)
		return 0;
	if (level == LIBBPF_WARN && !gs_log_enabled(GS_LOG_DEBUG))
		return 0; /* failures are reported once, by us, with context */
	return vfprintf(stderr, fmt, ap);
}

static struct target *find_target(struct gs_tracker *t, pid_t pid)
{
	for (size_t i = 0; i < t->nr_targets; i++)
		if (t->targets[i].pid == pid)
			return &t->targets[i];
	return NULL;
}

static struct target *add_target(struct gs_tracker *t, pid_t pid, __u32 flags)
{
	struct target *tg = find_target(t, pid);
	__u32 key = (__u32)pid;

	if (tg)
		return tg;
	if (t->nr_targets == t->cap_targets) {
		size_t cap = t->cap_targets ? t->cap_targets * 2 : 16;
		struct target *grown = realloc(t->targets, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		t->targets = grown;
		t->cap_targets = cap;
	}
	tg = &t->targets[t->nr_targets++];
	*tg = (struct target){ .pid = pid };
	gs_read_comm(pid, pid, tg->comm, sizeof(tg->comm));
	if (bpf_map_update_elem(bpf_map__fd(t->proc->maps.targets), &key, &flags, BPF_ANY))
		gs_warn("pid %d: cannot follow exits: %s", (int)pid, strerror(errno));
	return tg;
}

static bool is_attached(struct gs_tracker *t, pid_t scope, const struct gs_mapping *m)
{
	for (size_t i = 0; i < t->nr_files; i++) {
		const struct attached_file *f = &t->files[i];

		if (f->scope == scope && f->dev == m->dev && f->inode == m->inode)
			return true;
	}
	return false;
}

static int remember_attached(struct gs_tracker *t, pid_t scope, const struct gs_mapping *m)
{
	if (t->nr_files == t->cap_files) {
		size_t cap = t->cap_files ? t->cap_files * 2 : 16;
		struct attached_file *grown = realloc(t->files, cap * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		t->files = grown;
		t->cap_files = cap;
	}
	t->files[t->nr_files++] =
		(struct attached_file){ .scope = scope, .dev = m->dev, .inode = m->inode };
	return 0;
}

static int attach_symbol(struct gs_tracker *t, struct gs_elf *elf, const char *path, pid_t scope,
			 const char *name, struct bpf_program *entry, struct bpf_program *ret,
			 uint64_t cookie)
{
	uint64_t vaddr = gs_elf__find_function(elf, name), off;
	int err;

	if (!vaddr)
		return -ENOENT;
	if (gs_elf__vaddr_to_offset(elf, vaddr, &off))
		return -ENOEXEC;
	/* the return probe first: an entry seen without its return would look like nesting */
	if (ret) {
		err = gs_links__attach_uprobe(t->links, ret, scope, path, off, true, cookie);
		if (err)
			return err;
	}
	return gs_links__attach_uprobe(t->links, entry, scope, path, off, false, cookie);
}

static void programs_for(struct gs_tracker *t, const struct gs_cuda_api *api,
			 struct bpf_program **entry, struct bpf_program **ret)
{
	switch (api->shape) {
	case GS_SHAPE_ALLOC:
		*entry = t->mem->progs.mem_alloc_enter;
		*ret = t->mem->progs.mem_alloc_exit;
		break;
	case GS_SHAPE_ALLOC_PITCH:
		*entry = t->mem->progs.mem_alloc_pitch_enter;
		*ret = t->mem->progs.mem_alloc_exit;
		break;
	case GS_SHAPE_FREE:
		*entry = t->mem->progs.mem_free_enter;
		*ret = t->mem->progs.mem_free_exit;
		break;
	default:
		*entry = t->cuda->progs.cuda_call_enter;
		*ret = t->cuda->progs.cuda_call_exit;
	}
}

static int attach_cuda_lib(struct gs_tracker *t, struct gs_elf *elf, const char *path,
			   const char *shown, pid_t scope, enum gs_cuda_lib lib)
{
	char missing[2048] = "";
	size_t nr_apis, attached = 0, wanted = 0, len = 0;
	const struct gs_cuda_api *apis = gs_cuda_apis(&nr_apis);
	int first_err = 0;

	for (size_t i = 1; i < nr_apis; i++) {
		const struct gs_cuda_api *api = &apis[i];
		struct bpf_program *entry, *ret;
		uint64_t cookie;
		int err;

		if (api->lib != lib || !(t->opts.families & GS_FAM_BIT(api->family)))
			continue;
		wanted++;
		programs_for(t, api, &entry, &ret);
		cookie = api->id | (uint64_t)gs_cuda_api_call_flags(api) << 16;
		err = attach_symbol(t, elf, path, scope, api->name, entry, ret, cookie);
		if (!err) {
			attached++;
			continue;
		}
		if (err != -ENOENT) {
			gs_warn("attach %s:%s: %s", shown, api->name, strerror(-err));
			if (!first_err)
				first_err = err;
		}
		if (len < sizeof(missing))
			len += (size_t)snprintf(missing + len, sizeof(missing) - len, "%s%s",
						len ? " " : "", api->name);
	}
	if (!wanted)
		return -ENOENT;
	if (!attached) {
		gs_warn("%s: none of the %zu %s functions asked for could be probed", shown, wanted,
			lib == GS_LIB_RUNTIME ? "runtime" : "driver");
		return first_err ? first_err : -ENOENT;
	}
	if (scope > 0)
		gs_info("pid %d: probing %zu/%zu CUDA functions in %s", (int)scope, attached,
			wanted, shown);
	else
		gs_info("probing %zu/%zu CUDA functions in %s (all processes)", attached, wanted,
			shown);
	if (*missing)
		gs_dbg("  not in this version: %s", missing);
	t->saw_cuda = true;
	return 0;
}

/*
 * Opens the file m maps, checked to be the one the snapshot names, and parses it from that
 * descriptor; its probes go in through the same descriptor (/proc/self/fd/N), so they land
 * in exactly the file that was checked and parsed, whatever is mapped there by then.
 */
static int attach_mapping(struct gs_tracker *t, const struct gs_maps *maps,
			  const struct gs_mapping *m, enum lib_role role, pid_t scope)
{
	char path[32];
	struct gs_elf *elf;
	struct stat st;
	int fd, err;

	if (is_attached(t, scope, m))
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
	/* its owner chooses what code it holds: never probe it in every process */
	if (scope < 0 && !gs_is_trusted_file(&st)) {
		gs_info("pid %d: %s is not root's or is writable by others: probed in this "
			"process only",
			(int)maps->pid, m->path);
		scope = maps->pid;
		if (is_attached(t, scope, m)) {
			close(fd);
			return 0;
		}
		if (!gs_probe_quota__take(t->quota, st.st_uid, scope, m->dev, m->inode)) {
			gs_warn("pid %d: %s: skipped: uid %u has %d files of its own probed "
				"already",
				(int)scope, m->path, (unsigned int)st.st_uid,
				GS_PROBE_QUOTA_PER_USER);
			err = -EDQUOT;
			goto out_remember;
		}
	}
	elf = gs_symcache__elf_fd(t->symcache, m->path, fd, &st);
	if (!elf) {
		err = -errno;
		gs_warn("%s: cannot read: %s", m->path, strerror(-err));
		goto out_remember;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	switch (role) {
	case ROLE_LD_SO:
		err = attach_symbol(t, elf, path, scope, DL_DEBUG_STATE,
				    t->proc->progs.dl_debug_state_enter, NULL, 0);
		if (err)
			gs_warn("%s: cannot probe %s (%s): libraries loaded later are found late",
				m->path, DL_DEBUG_STATE, strerror(-err));
		break;
	case ROLE_RUNTIME:
		err = attach_cuda_lib(t, elf, path, m->path, scope, GS_LIB_RUNTIME);
		break;
	case ROLE_DRIVER:
		err = attach_cuda_lib(t, elf, path, m->path, scope, GS_LIB_DRIVER);
		break;
	default:
		err = -EINVAL;
	}
out_remember:
	/* remembered even on failure: retrying on every loader event would only repeat it */
	remember_attached(t, scope, m);
	close(fd);
	return err;
}

/* Attaches to every loader and CUDA library pid maps now. Returns true if it maps CUDA. */
static bool scan_process(struct gs_tracker *t, pid_t pid)
{
	pid_t scope = t->opts.all ? -1 : pid;
	char exe[PATH_MAX] = "";
	const struct gs_maps *maps;
	bool cuda = false;

	if (gs_symcache__refresh(t->symcache, pid))
		return false;
	maps = gs_symcache__maps(t->symcache, pid);
	gs_read_exe_path(pid, exe, sizeof(exe));
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];
		struct gs_elf *elf;

		if (!m->exec || !m->path)
			continue;
		if (gs_is_ld_so_name(m->path)) {
			attach_mapping(t, maps, m, ROLE_LD_SO, scope);
		} else if (gs_is_cudart_name(m->path)) {
			cuda |= attach_mapping(t, maps, m, ROLE_RUNTIME, scope) == 0;
		} else if (gs_is_libcuda_name(m->path)) {
			cuda |= attach_mapping(t, maps, m, ROLE_DRIVER, scope) == 0;
		} else if (*exe && !strcmp(m->path, exe)) {
			/* a statically linked cudart lives in the executable itself */
			elf = gs_symcache__elf(t->symcache, maps, m);
			if (elf && gs_elf__find_function(elf, STATIC_CUDART_MARKER))
				cuda |= attach_mapping(t, maps, m, ROLE_RUNTIME, scope) == 0;
		}
	}
	if (t->torch_attach && gs_torch_attach__scan(t->torch_attach, maps, scope))
		cuda = t->saw_cuda = true;
	/* probes of its own (a user's files under -a) go when it exits: follow that */
	if (t->opts.all && !find_target(t, pid) && gs_links__count_pid(t->links, pid))
		add_target(t, pid, GS_TARGET_TRACED);
	return cuda;
}

/*
 * The probes that watch pid alone (every probe of a -p target; those of a user's own files
 * under -a) went useless with it: detached in the background, and its files forgotten, so
 * that a long-running -a session or daemon does not pile them up.
 */
static void forget_process_probes(struct gs_tracker *t, pid_t pid)
{
	for (size_t i = 0; i < t->nr_files;) {
		if (t->files[i].scope == pid)
			t->files[i] = t->files[--t->nr_files];
		else
			i++;
	}
	if (t->torch_attach)
		gs_torch_attach__forget(t->torch_attach, pid);
	gs_probe_quota__release_pid(t->quota, pid);
	gs_links__release_pid(t->links, pid);
}

/* Forgets a target; in -a mode thousands come and go, so none is kept once gone. */
static void drop_target(struct gs_tracker *t, struct target *tg)
{
	*tg = t->targets[--t->nr_targets];
}

static void target_gone(struct gs_tracker *t, pid_t pid, bool exec)
{
	struct target *tg = find_target(t, pid);
	__u32 key = (__u32)pid;

	if (!tg)
		return;
	if (t->ops.proc_gone)
		t->ops.proc_gone(t->ops.ctx, pid, exec);
	if (exec) {
		gs_read_comm(pid, pid, tg->comm, sizeof(tg->comm));
		scan_process(t, pid);
		return;
	}
	bpf_map_delete_elem(bpf_map__fd(t->proc->maps.targets), &key);
	forget_process_probes(t, pid);
	gs_symcache__forget(t->symcache, pid);
	if (t->unwinder)
		gs_unwinder__forget(t->unwinder, pid);
	drop_target(t, tg);
}

/* Known to -a mode from its first CUDA event on; follows its exit from then on. */
static void note_process(struct gs_tracker *t, pid_t pid)
{
	if (!t->opts.all || find_target(t, pid))
		return;
	add_target(t, pid, GS_TARGET_TRACED);
	gs_symcache__refresh(t->symcache, pid);
}

static void stash_ustack(struct gs_tracker *t, const struct gs_ustack_event *e)
{
	struct ustack_slot *slot = NULL;

	for (size_t i = 0; i < USTACK_SLOTS && !slot; i++)
		if (t->ustacks[i].e && t->ustacks[i].tid == e->hdr.tid)
			slot = &t->ustacks[i];
	if (!slot) {
		slot = &t->ustacks[t->next_ustack];
		t->next_ustack = (t->next_ustack + 1) % USTACK_SLOTS;
	}
	if (!slot->e)
		slot->e = malloc(sizeof(*slot->e));
	if (!slot->e)
		return; /* the record keeps its frame-pointer stack */
	/* only the captured bytes: the rest of the 16 KiB is never read */
	memcpy(slot->e, e, offsetof(struct gs_ustack_event, st.data) + e->st.size);
	slot->tid = e->hdr.tid;
	slot->ts_ns = e->hdr.ts_ns;
}

size_t gs_tracker__unwind(struct gs_tracker *t, const struct gs_event_hdr *hdr, __u64 *frames,
			  size_t max_frames)
{
	pid_t pid = (pid_t)hdr->pid;
	const struct gs_maps *maps;
	uint64_t ips[GS_MAX_STACK];
	int n;

	if (!t->unwinder || !(hdr->flags & GS_EV_F_USTACK))
		return 0;
	for (size_t i = 0; i < USTACK_SLOTS; i++) {
		struct ustack_slot *slot = &t->ustacks[i];

		if (!slot->e || slot->tid != hdr->tid || slot->ts_ns != hdr->ts_ns)
			continue;
		slot->ts_ns = 0; /* used once */
		if (max_frames > GS_MAX_STACK)
			max_frames = GS_MAX_STACK;
		/* the symbolizer's snapshot: it outlives the process, which may be gone by now */
		maps = gs_symcache__maps(t->symcache, pid);
		if (maps && !gs_maps__find(maps, slot->e->st.regs[GS_USTACK_REG_IP]) &&
		    gs_symcache__refresh(t->symcache, pid) == 0)
			maps = gs_symcache__maps(t->symcache, pid);
		if (!maps)
			return 0;
		n = gs_unwinder__unwind_maps(t->unwinder, maps, &slot->e->st, ips, max_frames);
		for (int i = 0; i < n; i++)
			frames[i] = ips[i];
		return n > 0 ? (size_t)n : 0;
	}
	return 0;
}

/* The alloc record with its frames unwound from its stack slice, in out; false if none. */
static bool unwind_alloc(struct gs_tracker *t, const struct gs_mem_alloc *e,
			 struct gs_mem_alloc *out)
{
	size_t n = gs_tracker__unwind(t, &e->hdr, out->frames, GS_MAX_STACK);

	if (!n)
		return false;
	memcpy(out, e, offsetof(struct gs_mem_alloc, frames));
	out->nr_frames = (__u16)n;
	out->hdr.size = (__u32)(offsetof(struct gs_mem_alloc, frames) + n * sizeof(__u64));
	return true;
}

static bool unwind_free_ret(struct gs_tracker *t, const struct gs_mem_free_ret *e,
			    struct gs_mem_free_ret *out)
{
	size_t n = gs_tracker__unwind(t, &e->hdr, out->frames, GS_MAX_STACK);

	if (!n)
		return false;
	memcpy(out, e, offsetof(struct gs_mem_free_ret, frames));
	out->nr_frames = (__u16)n;
	out->hdr.size = (__u32)(offsetof(struct gs_mem_free_ret, frames) + n * sizeof(__u64));
	return true;
}

/*
 * A torch record with its frames unwound from its stack slice, in out; false if none. At a
 * function's entry (the profiler hooks, __cxa_throw) the first address is the hooked
 * function itself, dropped so that the stack starts in its caller, as with frame pointers.
 */
static bool unwind_torch(struct gs_tracker *t, const void *e, size_t frames_off, bool at_entry,
			 void *out)
{
	__u64 frames[GS_MAX_STACK];
	size_t n = gs_tracker__unwind(t, e, frames, GS_MAX_STACK), skip = at_entry && n > 1;
	__u16 nr = (__u16)(n - skip);

	if (!n)
		return false;
	memcpy(out, e, frames_off);
	memcpy((char *)out + frames_off, frames + skip, nr * sizeof(__u64));
	/* the caller sets nr_frames from the size */
	((struct gs_event_hdr *)out)->size = (__u32)(frames_off + nr * sizeof(__u64));
	return true;
}

static int handle_event(void *ctx, void *data, size_t size)
{
	struct gs_tracker *t = ctx;
	const struct gs_event_hdr *hdr = data;
	pid_t pid = (pid_t)hdr->pid;
	int type = gs_event_decode(data, size);
	union {
		struct gs_mem_alloc alloc;
		struct gs_mem_free_ret free_ret;
		struct gs_torch_mem torch_mem;
		struct gs_torch_oom torch_oom;
	} unwound;

	if (type == -EINVAL) {
		gs_warn("malformed ring buffer record (%zu bytes): skipped", size);
		return 0;
	}
	switch (type) {
	case GS_EV_LIBS_CHANGED:
		/* in -a mode every process reports here: keep snapshots only of CUDA users */
		if (!scan_process(t, pid) && !find_target(t, pid))
			gs_symcache__forget(t->symcache, pid);
		if (hdr->flags & GS_LIBS_F_STOPPED)
			kill(pid, SIGCONT);
		break;
	case GS_EV_PROC_EXEC:
		if (find_target(t, pid))
			target_gone(t, pid, true);
		else if (t->opts.all)
			scan_process(t, pid);
		break;
	case GS_EV_PROC_EXIT:
		target_gone(t, pid, false);
		break;
	case GS_EV_PROC_OOM_KILL:
		if (t->ops.oom_kill && (t->opts.all || find_target(t, pid)))
			t->ops.oom_kill(t->ops.ctx, pid);
		break;
	case GS_EV_USTACK:
		if (t->unwinder)
			stash_ustack(t, data);
		break;
	case GS_EV_MEM_ALLOC:
		note_process(t, pid);
		if (unwind_alloc(t, data, &unwound.alloc))
			data = &unwound.alloc;
		if (t->ops.mem_alloc)
			t->ops.mem_alloc(t->ops.ctx, data);
		break;
	case GS_EV_MEM_FREE:
		note_process(t, pid);
		if (t->ops.mem_free)
			t->ops.mem_free(t->ops.ctx, data);
		break;
	case GS_EV_MEM_FREE_RET:
		if (unwind_free_ret(t, data, &unwound.free_ret))
			data = &unwound.free_ret;
		if (t->ops.mem_free_ret)
			t->ops.mem_free_ret(t->ops.ctx, data);
		break;
	case GS_EV_CUDA_CALL:
		note_process(t, pid);
		if (t->ops.cuda_call)
			t->ops.cuda_call(t->ops.ctx, data);
		break;
	case GS_EV_CPU_SAMPLE:
		note_process(t, pid);
		if (t->ops.cpu_sample)
			t->ops.cpu_sample(t->ops.ctx, data);
		break;
	case GS_EV_TORCH_MEM:
		note_process(t, pid);
		if (unwind_torch(t, data, offsetof(struct gs_torch_mem, frames),
				 ((struct gs_torch_mem *)data)->source == GS_TORCH_SRC_REPORT,
				 &unwound.torch_mem)) {
			unwound.torch_mem.nr_frames =
				(__u16)((unwound.torch_mem.hdr.size -
					 offsetof(struct gs_torch_mem, frames)) /
					sizeof(__u64));
			data = &unwound.torch_mem;
		}
		if (t->ops.torch_mem)
			t->ops.torch_mem(t->ops.ctx, data);
		break;
	case GS_EV_TORCH_OOM:
		note_process(t, pid);
		if (unwind_torch(t, data, offsetof(struct gs_torch_oom, frames), true,
				 &unwound.torch_oom)) {
			unwound.torch_oom.nr_frames =
				(__u16)((unwound.torch_oom.hdr.size -
					 offsetof(struct gs_torch_oom, frames)) /
					sizeof(__u64));
			data = &unwound.torch_oom;
		}
		if (t->ops.torch_oom)
			t->ops.torch_oom(t->ops.ctx, data);
		break;
	default:
		gs_dbg("unknown record type %u", hdr->type);
	}
	return 0;
}

/*
 * Every uprobe link holds a descriptor, and probes per process (-p targets; users' own files
 * under -a) add up past the usual soft limit of 1024: take what the hard limit allows, as
 * perf does.
 */
static void raise_fd_limit(void)
{
	struct rlimit lim;

	if (getrlimit(RLIMIT_NOFILE, &lim) || lim.rlim_cur >= lim.rlim_max)
		return;
	lim.rlim_cur = lim.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &lim))
		gs_dbg("raising the descriptor limit: %s", strerror(errno));
}

static int check_environment(void)
{
	raise_fd_limit();
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		gs_err("this kernel has no BTF (/sys/kernel/btf/vmlinux): gpusnoop needs a kernel "
		       "built with CONFIG_DEBUG_INFO_BTF=y");
		return -ENOTSUP;
	}
	return 0;
}

static int load_error(const char *what, int err)
{
	if (err == -EPERM || err == -EACCES)
		gs_err("loading BPF programs (%s): permission denied: run as root, or grant "
		       "CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE (CAP_SYS_ADMIN on kernels "
		       "before 5.8)",
		       what);
	else
		gs_err("loading BPF programs (%s): %s", what, strerror(-err));
	return err;
}

/* One ring buffer, one target set, one set of loss counters for every object. */
static int share_maps(struct gs_tracker *t, struct bpf_map *events, struct bpf_map *targets,
		      struct bpf_map *stats)
{
	int err = bpf_map__reuse_fd(events, bpf_map__fd(t->proc->maps.events));

	err = err ?: bpf_map__reuse_fd(targets, bpf_map__fd(t->proc->maps.targets));
	return err ?: bpf_map__reuse_fd(stats, bpf_map__fd(t->proc->maps.stats));
}

int gs_tracker__share_maps(struct gs_tracker *t, struct bpf_map *events, struct bpf_map *targets,
			   struct bpf_map *stats)
{
	return share_maps(t, events, targets, stats);
}

/*
 * PyTorch's probes are optional: CUDA tracing goes on without them (one warning) when their
 * object does not load, e.g. on a kernel without USDT semaphore support (before 4.20).
 */
static void open_torch(struct gs_tracker *t)
{
	int err;

	t->torch = torch_bpf__open();
	err = t->torch ? 0 : -errno;
	if (!err) {
		t->torch->rodata->cfg_all_pids = t->opts.all;
		t->torch->rodata->cfg_ustack = t->opts.stacks == GS_STACKS_DWARF;
		err = share_maps(t, t->torch->maps.events, t->torch->maps.targets,
				 t->torch->maps.stats);
	}
	if (!err)
		err = torch_bpf__load(t->torch);
	if (!err) {
		t->torch_attach = gs_torch_attach__new(t->torch, t->links, t->symcache, t->quota);
		err = t->torch_attach ? 0 : -ENOMEM;
	}
	if (err) {
		gs_warn("loading the PyTorch probes: %s; PyTorch memory is not followed",
			strerror(-err));
		torch_bpf__destroy(t->torch);
		t->torch = NULL;
	}
}

int gs_tracker__open(struct gs_tracker **out, const struct gs_tracker_opts *opts,
		     const struct gs_tracker_ops *ops)
{
	struct gs_tracker *t;
	int err;

	err = check_environment();
	if (err)
		return err;
	libbpf_set_print(libbpf_print);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->opts = *opts;
	t->ops = *ops;
	t->child.release_fd = t->child.error_fd = -1;
	t->links = gs_links__new();
	t->quota = gs_probe_quota__new(GS_PROBE_QUOTA_PER_USER);
	t->symcache = gs_symcache__new();
	t->proc = proc_bpf__open();
	t->mem = mem_bpf__open();
	t->cuda = cuda_bpf__open();
	if (!t->links || !t->quota || !t->symcache || !t->proc || !t->mem || !t->cuda) {
		err = -errno ? -errno : -ENOMEM;
		gs_err("opening BPF objects: %s", strerror(-err));
		goto out_free;
	}
	t->proc->rodata->cfg_all_pids = opts->all;
	t->proc->rodata->cfg_report_all_execs = opts->all;
	bpf_program__set_autoload(t->proc->progs.handle_oom_victim, opts->oom_kills);
	t->mem->rodata->cfg_all_pids = opts->all;
	t->mem->rodata->cfg_free_returns = opts->free_returns;
	t->mem->rodata->cfg_ustack = opts->stacks == GS_STACKS_DWARF;
	if (opts->stacks == GS_STACKS_DWARF) {
		t->unwinder = gs_unwinder__new();
		if (!t->unwinder) {
			err = -errno;
			gs_err("DWARF unwinder: %s", strerror(-err));
			goto out_free;
		}
		gs_unwinder__set_symcache(t->unwinder, t->symcache);
	}
	t->cuda->rodata->cfg_all_pids = opts->all;
	if (opts->ringbuf_bytes)
		bpf_map__set_max_entries(t->proc->maps.events, (__u32)opts->ringbuf_bytes);
	/* the reader wakes when an eighth is full, or on its poll timeout; never per record */
	t->mem->rodata->cfg_wakeup_bytes = bpf_map__max_entries(t->proc->maps.events) / WAKEUP_PART;
	t->cuda->rodata->cfg_wakeup_bytes = t->mem->rodata->cfg_wakeup_bytes;

	err = proc_bpf__load(t->proc);
	if (err) {
		load_error("proc", err);
		goto out_free;
	}
	err = share_maps(t, t->mem->maps.events, t->mem->maps.targets, t->mem->maps.stats);
	err = err ?: mem_bpf__load(t->mem);
	if (err) {
		load_error("mem", err);
		goto out_free;
	}
	err = share_maps(t, t->cuda->maps.events, t->cuda->maps.targets, t->cuda->maps.stats);
	err = err ?: cuda_bpf__load(t->cuda);
	if (err) {
		load_error("cuda", err);
		goto out_free;
	}
	if (opts->torch)
		open_torch(t);
	err = proc_bpf__attach(t->proc); /* the tracepoints; uprobes are attached per file */
	if (err) {
		load_error("proc attach", err);
		goto out_free;
	}
	t->rb = ring_buffer__new(bpf_map__fd(t->proc->maps.events), handle_event, t, NULL);
	if (!t->rb) {
		err = -errno;
		gs_err("ring buffer: %s", strerror(-err));
		goto out_free;
	}
	*out = t;
	return 0;

out_free:
	gs_tracker__free(t);
	return err;
}

static int start_pids(struct gs_tracker *t)
{
	for (size_t i = 0; i < t->opts.nr_pids; i++) {
		pid_t pid = t->opts.pids[i];

		if (kill(pid, 0) && errno == ESRCH) {
			gs_err("pid %d: no such process", (int)pid);
			return -ESRCH;
		}
		if (gs_is_kernel_thread(pid)) {
			char comm[16];

			gs_read_comm(pid, pid, comm, sizeof(comm));
			gs_err("pid %d (%s): a kernel thread, it runs no user code to probe",
			       (int)pid, comm);
			return -EINVAL;
		}
		if (!add_target(t, pid, GS_TARGET_TRACED))
			return -ENOMEM;
		if (!scan_process(t, pid) && t->opts.families)
			gs_warn("pid %d (%s): no CUDA library loaded yet; waiting for one",
				(int)pid, find_target(t, pid)->comm);
	}
	return 0;
}

static int start_all(struct gs_tracker *t)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;
	pid_t self = getpid();

	if (!dir) {
		gs_err("/proc: %s", strerror(errno));
		return -errno;
	}
	while ((de = readdir(dir))) {
		pid_t pid = (pid_t)strtol(de->d_name, NULL, 10);

		if (pid <= 0 || pid == self)
			continue;
		if (scan_process(t, pid))
			note_process(t, pid);
		else
			gs_symcache__forget(t->symcache, pid);
	}
	closedir(dir);
	return 0;
}

/*
 * Probes go in before the command runs: its loader and, for a static cudart, the
 * executable now; the libraries when the loader reports them (the child is held there).
 */
static int start_command(struct gs_tracker *t)
{
	char exe[PATH_MAX];
	struct gs_elf *elf;
	pid_t pid;
	int err;

	err = gs_find_executable(t->opts.argv[0], exe, sizeof(exe));
	if (err) {
		gs_err("cannot run '%s': %s", t->opts.argv[0], strerror(-err));
		return err;
	}
	elf = gs_elf__open(exe);
	if (!elf) {
		gs_err("cannot run '%s': %s is not an ELF executable", t->opts.argv[0], exe);
		return -ENOEXEC;
	}
	err = gs_spawn(t->opts.argv, &t->child);
	if (err) {
		gs_err("cannot start '%s': %s", t->opts.argv[0], strerror(-err));
		gs_elf__free(elf);
		return err;
	}
	pid = t->child.pid;
	if (!add_target(t, pid, GS_TARGET_TRACED | GS_TARGET_STOP_ON_LOAD)) {
		gs_err("out of memory");
		gs_elf__free(elf);
		return -ENOMEM;
	}
	if (gs_elf__interp(elf)) {
		const char *interp = gs_elf__interp(elf);
		struct gs_elf *ld = gs_elf__open(interp);
		uint64_t vaddr = ld ? gs_elf__find_function(ld, DL_DEBUG_STATE) : 0, off;

		if (!vaddr || gs_elf__vaddr_to_offset(ld, vaddr, &off) ||
		    gs_links__attach_uprobe(t->links, t->proc->progs.dl_debug_state_enter, pid,
					    interp, off, false, 0))
			gs_warn("%s: cannot probe %s: CUDA libraries may be found late", interp,
				DL_DEBUG_STATE);
		gs_elf__free(ld);
	}
	if (gs_elf__find_function(elf, STATIC_CUDART_MARKER))
		attach_cuda_lib(t, elf, exe, exe, pid, GS_LIB_RUNTIME);
	gs_elf__free(elf);
	err = gs_spawn__release(&t->child);
	if (err) {
		gs_err("cannot run '%s': %s", t->opts.argv[0], strerror(-err));
		t->child_reaped = true;
		drop_target(t, find_target(t, pid));
		return err;
	}
	return 0;
}

int gs_tracker__start(struct gs_tracker *t)
{
	if (t->opts.argv)
		return start_command(t);
	if (t->opts.all)
		return start_all(t);
	return start_pids(t);
}

static void reap_child(struct gs_tracker *t)
{
	int status;

	if (!t->child.pid || t->child_reaped)
		return;
	if (waitpid(t->child.pid, &status, WNOHANG) == t->child.pid) {
		t->child_reaped = true;
		t->child_status = status;
	}
}

/* The exit tracepoint is the usual path; this catches a dropped exit record. */
static void check_liveness(struct gs_tracker *t)
{
	uint64_t now = gs_clock_ns(CLOCK_MONOTONIC);

	if (now - t->last_liveness_ns < LIVENESS_CHECK_NS)
		return;
	t->last_liveness_ns = now;
	for (size_t i = 0; i < t->nr_targets;) {
		pid_t pid = t->targets[i].pid;

		if (kill(pid, 0) && errno == ESRCH)
			target_gone(t, pid, false); /* moves the last target into slot i */
		else
			i++;
	}
}

int gs_tracker__poll(struct gs_tracker *t, int timeout_ms)
{
	int n = ring_buffer__poll(t->rb, timeout_ms);

	if (n == -EINTR)
		n = 0;
	/* records below the wake-up threshold (bpf/gs_common.bpf.h) come with the timeout */
	if (n == 0)
		n = ring_buffer__consume(t->rb);
	reap_child(t);
	if (t->child_reaped && t->child.pid) {
		/* drain what the child wrote before it died, then report it gone */
		ring_buffer__consume(t->rb);
		target_gone(t, t->child.pid, false);
	}
	check_liveness(t);
	return n;
}

int gs_tracker__fd(const struct gs_tracker *t)
{
	return ring_buffer__epoll_fd(t->rb);
}

bool gs_tracker__done(const struct gs_tracker *t)
{
	/* only live targets are kept */
	return !t->opts.all && t->nr_targets == 0;
}

bool gs_tracker__saw_cuda(const struct gs_tracker *t)
{
	return t->saw_cuda;
}

void gs_tracker__stats(const struct gs_tracker *t, uint64_t out[GS_STAT__MAX])
{
	int ncpus = libbpf_num_possible_cpus();
	__u64 *values;

	memset(out, 0, GS_STAT__MAX * sizeof(*out));
	if (ncpus <= 0)
		return;
	values = calloc((size_t)ncpus, sizeof(*values));
	if (!values)
		return;
	for (__u32 key = 0; key < GS_STAT__MAX; key++) {
		if (bpf_map_lookup_elem(bpf_map__fd(t->proc->maps.stats), &key, values))
			continue;
		for (int cpu = 0; cpu < ncpus; cpu++)
			out[key] += values[cpu];
	}
	free(values);
}

uint64_t gs_tracker__dropped(const struct gs_tracker *t)
{
	uint64_t stats[GS_STAT__MAX];

	gs_tracker__stats(t, stats);
	return stats[GS_STAT_RINGBUF_FULL] + stats[GS_STAT_INFLIGHT_FULL];
}

struct gs_symcache *gs_tracker__symcache(struct gs_tracker *t)
{
	return t->symcache;
}

pid_t gs_tracker__child(const struct gs_tracker *t)
{
	return t->child.pid;
}

int gs_tracker__child_status(const struct gs_tracker *t)
{
	return t->child_status;
}

const char *gs_tracker__comm(struct gs_tracker *t, pid_t pid)
{
	struct target *tg = find_target(t, pid);

	return tg ? tg->comm : "?";
}

void gs_tracker__free(struct gs_tracker *t)
{
	if (!t)
		return;
	if (t->child.release_fd >= 0) {
		/* set-up failed before the command ran: it must not run untraced */
		kill(t->child.pid, SIGKILL);
		waitpid(t->child.pid, NULL, 0);
		close(t->child.release_fd);
	} else if (t->child.pid && !t->child_reaped) {
		/* never leave the command stopped at a loader event we will not answer */
		kill(t->child.pid, SIGCONT);
	}
	if (t->child.error_fd >= 0)
		close(t->child.error_fd);
	ring_buffer__free(t->rb);
	gs_links__free(t->links);
	gs_torch_attach__free(t->torch_attach);
	gs_probe_quota__free(t->quota);
	torch_bpf__destroy(t->torch);
	mem_bpf__destroy(t->mem);
	cuda_bpf__destroy(t->cuda);
	proc_bpf__destroy(t->proc);
	gs_symcache__free(t->symcache);
	gs_unwinder__free(t->unwinder);
	for (size_t i = 0; i < USTACK_SLOTS; i++)
		free(t->ustacks[i].e);
	free(t->files);
	free(t->targets);
	free(t);
}
