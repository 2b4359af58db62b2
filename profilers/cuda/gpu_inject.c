// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gpu_inject.c: --inject: load the CUPTI injection library into a running process by ptrace. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <dlfcn.h>
#include "profilers/cuda/gpu_inject.h"
#include "user/elf_file.h"
#include "user/log.h"
#include "user/proc_maps.h"

#ifdef __x86_64__
/*
 * The thread is stopped (PTRACE_SEIZE + PTRACE_INTERRUPT), made to call a function on its
 * own stack below the red zone, with return address 0: the return faults, the fault stops
 * the thread for us, and its registers are put back as they were. Only that thread stops;
 * the others run on. Nothing is unloaded afterwards.
 */
#define RED_ZONE  128
#define SCRATCH	  512 /* bytes of stack below the red zone for the path */
#define CALL_WAIT 10  /* seconds a remote call may take */

/* Where function name of the library whose file name starts with lib is mapped in pid. */
static int remote_symbol(pid_t pid, const char *lib, const char *name, uint64_t *addr)
{
	struct gs_maps *maps = gs_maps__read(pid);
	int err = -ENOENT;

	for (size_t i = 0; maps && i < maps->nr && err == -ENOENT; i++) {
		const struct gs_mapping *m = &maps->mappings[i];
		const char *base = m->path ? strrchr(m->path, '/') : NULL;
		uint64_t vaddr, off;
		struct gs_elf *elf;
		struct stat st;
		int fd;

		if (!m->exec || !base || strncmp(base + 1, lib, strlen(lib)))
			continue;
		fd = gs_mapping__open(maps, m, &st);
		elf = fd >= 0 ? gs_elf__open_fd(fd) : NULL;
		vaddr = elf ? gs_elf__find_function(elf, name) : 0;
		if (vaddr && !gs_elf__vaddr_to_offset(elf, vaddr, &off) && off >= m->pgoff &&
		    off - m->pgoff < m->end - m->start) {
			*addr = m->start + (off - m->pgoff);
			err = 0;
		}
		gs_elf__free(elf);
		if (fd >= 0)
			close(fd);
	}
	gs_maps__free(maps);
	return err;
}

static int wait_stop(pid_t pid, int *sig)
{
	int status;

	for (int waited = 0; waited < CALL_WAIT * 100; waited++) {
		pid_t r = waitpid(pid, &status, __WALL | WNOHANG);

		if (r < 0)
			return -errno;
		if (r == pid && WIFSTOPPED(status)) {
			*sig = WSTOPSIG(status);
			return 0;
		}
		if (r == pid)
			return -ESRCH; /* it exited */
		usleep(10000);
	}
	return -ETIMEDOUT;
}

/* Calls fn(a0, a1) in the stopped thread; *ret gets its return value. */
static int remote_call(pid_t pid, const struct user_regs_struct *saved, uint64_t fn, uint64_t a0,
		       uint64_t a1, uint64_t *ret)
{
	struct user_regs_struct regs = *saved;
	int sig, err;

	/* below the path in scratch, 16-byte aligned, then the return address 0 pushed */
	regs.rsp = ((saved->rsp - RED_ZONE - SCRATCH) & ~0xfULL) - 8;
	if (ptrace(PTRACE_POKEDATA, pid, regs.rsp, 0))
		return -errno;
	regs.rip = fn;
	regs.rdi = a0;
	regs.rsi = a1;
	regs.rax = 0;
	regs.orig_rax = -1; /* no system call restart on the way out of the stop */
	if (ptrace(PTRACE_SETREGS, pid, NULL, &regs) || ptrace(PTRACE_CONT, pid, NULL, 0))
		return -errno;
	err = wait_stop(pid, &sig);
	if (err)
		return err;
	if (ptrace(PTRACE_GETREGS, pid, NULL, &regs))
		return -errno;
	if (sig != SIGSEGV || regs.rip != 0)
		return -EINTR; /* stopped elsewhere (another signal): give up */
	*ret = regs.rax;
	return 0;
}

/* The path into the scratch space below the red zone. */
static int write_path(pid_t pid, uint64_t sp, const char *path, uint64_t *where)
{
	size_t len = strlen(path) + 1;
	struct iovec local = { (void *)path, len }, remote;

	if (len > SCRATCH - 16)
		return -ENAMETOOLONG;
	*where = (sp - RED_ZONE - len) & ~0xfULL;
	remote = (struct iovec){ (void *)(uintptr_t)*where, len };
	return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EIO;
}

/*
 * The library's own words for why it set up no GPU activity, into why (its first line,
 * bounded; the log makes it safe for a terminal), asked of gpusnoop_cupti_status() in the
 * stopped thread; "" when it has none.
 */
static void remote_status(pid_t pid, const struct user_regs_struct *saved, const char *lib,
			  char *why, size_t len)
{
	uint64_t fn, str = 0;
	struct iovec local = { why, len - 1 }, remote;
	ssize_t n = 0;

	if (!remote_symbol(pid, lib, "gpusnoop_cupti_status", &fn) &&
	    !remote_call(pid, saved, fn, 0, 0, &str) && str) {
		remote = (struct iovec){ (void *)(uintptr_t)str, len - 1 };
		n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	}
	why[n > 0 ? n : 0] = '\0';
	why[strcspn(why, "\n")] = '\0';
}

/* dlopen(path), then its InitializeInjection(), in the stopped thread; why it refused. */
static int load_and_init(pid_t pid, const struct user_regs_struct *saved, const char *path,
			 uint64_t *initialized, char *why, size_t len)
{
	uint64_t dlopen_addr, init_addr, str, handle = 0;
	const char *base = strrchr(path, '/');
	int err = remote_symbol(pid, "libc.so", "dlopen", &dlopen_addr);

	if (err) {
		gs_err("--inject: pid %d: no dlopen in its libc", (int)pid);
		return err;
	}
	err = write_path(pid, saved->rsp, path, &str);
	err = err ?: remote_call(pid, saved, dlopen_addr, str, RTLD_NOW, &handle);
	if (!err && !handle)
		err = -ENOEXEC;
	if (err) {
		gs_err("--inject: pid %d: dlopen(%s): %s", (int)pid, path, strerror(-err));
		return err;
	}
	err = remote_symbol(pid, base ? base + 1 : path, "InitializeInjection", &init_addr);
	err = err ?: remote_call(pid, saved, init_addr, 0, 0, initialized);
	if (err)
		gs_err("--inject: pid %d: InitializeInjection: %s", (int)pid, strerror(-err));
	else if ((int)*initialized != 1)
		remote_status(pid, saved, base ? base + 1 : path, why, len);
	return err;
}

int gs_gpu_inject(pid_t pid, const char *path)
{
	struct user_regs_struct saved;
	uint64_t initialized = 0;
	char why[192] = "";
	int sig, err;

	if (ptrace(PTRACE_SEIZE, pid, NULL, 0) || ptrace(PTRACE_INTERRUPT, pid, NULL, 0)) {
		err = -errno;
		gs_err("--inject: pid %d: ptrace: %s", (int)pid, strerror(-err));
		return err;
	}
	err = wait_stop(pid, &sig);
	if (!err && ptrace(PTRACE_GETREGS, pid, NULL, &saved))
		err = -errno;
	if (!err) {
		err = load_and_init(pid, &saved, path, &initialized, why, sizeof(why));
		/* whatever happened, the thread goes on where it was stopped */
		if (ptrace(PTRACE_SETREGS, pid, NULL, &saved) && !err)
			err = -errno;
	}
	ptrace(PTRACE_DETACH, pid, NULL, 0);
	if (!err && (int)initialized != 1) {
		gs_warn("--inject: pid %d: the library set up no GPU activity: %s", (int)pid,
			*why ? why : "it did not say why");
		return -EBUSY;
	}
	if (!err)
		gs_info("--inject: pid %d: %s loaded and initialised", (int)pid, path);
	return err;
}
#else
int gs_gpu_inject(pid_t pid, const char *path)
{
	gs_err("--inject: pid %d: %s: only on x86-64 for now", (int)pid, path);
	return -ENOTSUP;
}
#endif
