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
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include "profilers/cuda/gpu_inject.h"
#include "user/clock.h"
#include "user/elf_file.h"
#include "user/inject_file.h"
#include "user/log.h"
#include "user/proc_maps.h"
#include "user/remote_stub.h"

#ifdef __x86_64__
/*
 * One thread is stopped (PTRACE_SEIZE + PTRACE_INTERRUPT). Two system calls made by
 * single-stepping a syscall instruction of its libc map a stub (user/remote_stub.h); each
 * function is then called with the stub as its return address, on the thread's own stack
 * below the red zone. The stub stores the result and puts the thread back where it was,
 * extended state included, whether or not gpusnoop still waits: a dlopen that outlasts
 * CALL_WAIT (the loader lock held by another thread) finishes later and the thread goes on.
 * Only that thread stops; the others run on. Nothing is unloaded afterwards.
 */
#define RED_ZONE  128
#define CALL_WAIT 10 /* seconds a remote call may take */
#define EFLAGS_TF 0x100
#define EFLAGS_DF 0x400

struct inject {
	pid_t pid;
	uint64_t stub; /* the stub's mapping in the target; 0 before it is made */
	struct gs_remote_stub code;
};

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

/* The next stop of pid within CALL_WAIT seconds: its wait status in *status. */
static int wait_stop(pid_t pid, int *status)
{
	for (int waited = 0; waited < CALL_WAIT * 100; waited++) {
		pid_t r = waitpid(pid, status, __WALL | WNOHANG);

		if (r < 0)
			return -errno;
		if (r == pid && WIFSTOPPED(*status))
			return 0;
		if (r == pid)
			return -ESRCH; /* it exited */
		usleep(10000);
	}
	return -ETIMEDOUT;
}

static bool is_interrupt_stop(int status)
{
	return (status >> 16) == PTRACE_EVENT_STOP;
}

static int remote_rw(pid_t pid, uint64_t addr, void *buf, size_t len, bool write)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EIO;
}

/* A syscall instruction in the target's libc (its syscall() function has one). */
static int find_syscall_insn(pid_t pid, uint64_t *insn)
{
	uint8_t code[64];
	uint64_t fn;
	int err = remote_symbol(pid, "libc.so", "syscall", &fn);

	err = err ?: remote_rw(pid, fn, code, sizeof(code), false);
	for (size_t i = 0; !err && i + 1 < sizeof(code); i++) {
		if (code[i] == 0x0f && code[i + 1] == 0x05) {
			*insn = fn + i;
			return 0;
		}
	}
	return err ?: -ENOENT;
}

/* System call nr(a0..a3) in the stopped thread by one single step; regs put back after. */
static int remote_syscall(pid_t pid, const struct user_regs_struct *saved, uint64_t insn, long nr,
			  const uint64_t a[4], uint64_t *ret)
{
	struct user_regs_struct regs = *saved;
	int status, err;

	regs.rip = insn;
	regs.rax = (uint64_t)nr;
	regs.rdi = a[0];
	regs.rsi = a[1];
	regs.rdx = a[2];
	regs.r10 = a[3];
	regs.r8 = (uint64_t)-1;
	regs.r9 = 0;
	regs.orig_rax = -1; /* no restart of the call the stop interrupted */
	if (ptrace(PTRACE_SETREGS, pid, NULL, &regs) || ptrace(PTRACE_SINGLESTEP, pid, NULL, 0))
		return -errno;
	err = wait_stop(pid, &status);
	if (!err && ptrace(PTRACE_GETREGS, pid, NULL, &regs))
		err = -errno;
	if (!err && (WSTOPSIG(status) != SIGTRAP || regs.rip != insn + 2))
		err = -EINTR; /* stopped elsewhere: give up */
	if (!err && regs.rax > -4096UL)
		err = (int)regs.rax;
	*ret = regs.rax;
	if (ptrace(PTRACE_SETREGS, pid, NULL, saved) && !err)
		err = -errno;
	return err;
}

/* Maps the stub in the stopped thread's process: code read+execute, the rest read+write. */
static int map_stub(struct inject *in, const struct user_regs_struct *saved)
{
	uint64_t insn, base = 0, ret;
	int err = gs_remote_stub__build(&in->code, gs_remote_stub__xsave_size());

	err = err ?: find_syscall_insn(in->pid, &insn);
	err = err
		      ?: remote_syscall(in->pid, saved, insn, SYS_mmap,
					(const uint64_t[4]){ 0, in->code.map_size,
							     PROT_READ | PROT_WRITE,
							     MAP_PRIVATE | MAP_ANONYMOUS },
					&base);
	err = err ?: remote_rw(in->pid, base, in->code.code, in->code.code_len, true);
	err = err
		      ?: remote_syscall(in->pid, saved, insn, SYS_mprotect,
					(const uint64_t[4]){ base, GS_STUB_CODE_SIZE,
							     PROT_READ | PROT_EXEC, 0 },
					&ret);
	if (!err)
		in->stub = base;
	return err;
}

#define CTRL(in, field) ((in)->stub + GS_STUB_CODE_SIZE + offsetof(struct gs_stub_control, field))
/* Waits for the stop an interrupt asked for, delivering the signals met on the way. */
static int wait_interrupted(pid_t pid)
{
	int status, err = 0;

	for (int i = 0; i < 64 && !err; i++) {
		err = wait_stop(pid, &status);
		if (!err && is_interrupt_stop(status))
			return 0;
		if (!err && ptrace(PTRACE_CONT, pid, NULL, WSTOPSIG(status)))
			err = -errno;
	}
	return err ?: -EINTR;
}

/*
 * Stops the thread again after a call came back (or to detach from one given up on), then
 * single steps it until it has left the stub's restore sequence, so the next call may
 * rewrite the control block. A signal met while stepping is delivered with the next step.
 */
static int stop_again(struct inject *in)
{
	struct user_regs_struct regs;
	int status, sig = 0, err;

	if (ptrace(PTRACE_INTERRUPT, in->pid, NULL, 0))
		return -errno;
	err = wait_interrupted(in->pid);
	for (int i = 0; i < 64 && !err; i++) {
		if (ptrace(PTRACE_GETREGS, in->pid, NULL, &regs))
			return -errno;
		if (regs.rip < in->stub || regs.rip >= in->stub + in->code.code_len)
			break;
		if (ptrace(PTRACE_SINGLESTEP, in->pid, NULL, sig))
			return -errno;
		err = wait_stop(in->pid, &status);
		sig = !err && WSTOPSIG(status) != SIGTRAP && !is_interrupt_stop(status)
			      ? WSTOPSIG(status)
			      : 0;
	}
	return err;
}

static bool is_fault(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
}

/*
 * Waits for the running call to store its result, passing on the signals the thread gets.
 * -ETIMEDOUT after CALL_WAIT seconds, the thread still in the call; -EFAULT when the call
 * faulted, the thread stopped with the fault undelivered.
 */
static int wait_done(struct inject *in, uint64_t *ret)
{
	uint64_t deadline = gs_clock_ns(CLOCK_MONOTONIC) + CALL_WAIT * 1000000000ULL;

	while (gs_clock_ns(CLOCK_MONOTONIC) < deadline) {
		uint64_t rd[2]; /* result, done */
		int status;
		pid_t r;
		int err = remote_rw(in->pid, CTRL(in, result), rd, sizeof(rd), false);

		if (err)
			return err;
		if (rd[1]) {
			*ret = rd[0];
			return 0;
		}
		r = waitpid(in->pid, &status, __WALL | WNOHANG);
		if (r < 0)
			return -errno;
		if (r == in->pid && !WIFSTOPPED(status))
			return -ESRCH;
		if (r == in->pid && !is_interrupt_stop(status) && is_fault(WSTOPSIG(status)))
			return -EFAULT;
		if (r == in->pid && ptrace(PTRACE_CONT, in->pid, NULL,
					   is_interrupt_stop(status) ? 0 : WSTOPSIG(status)))
			return -errno;
		usleep(2000);
	}
	return -ETIMEDOUT;
}

/* What the stub restores for a thread stopped with cur, its flags below the red zone. */
static void stub_regs(const struct user_regs_struct *cur, struct gs_stub_regs *r)
{
	*r = (struct gs_stub_regs){ .rbx = cur->rbx,
				    .rcx = cur->rcx,
				    .rdx = cur->rdx,
				    .rsi = cur->rsi,
				    .rdi = cur->rdi,
				    .rbp = cur->rbp,
				    .r8 = cur->r8,
				    .r9 = cur->r9,
				    .r10 = cur->r10,
				    .r11 = cur->r11,
				    .r12 = cur->r12,
				    .r13 = cur->r13,
				    .r14 = cur->r14,
				    .r15 = cur->r15,
				    .rsp = cur->rsp };
	gs_remote_stub__resume(cur->rip, cur->rax, (int64_t)cur->orig_rax, &r->rip, &r->rax);
	r->flags_sp = (cur->rsp - RED_ZONE - 16) & ~0xfULL;
}

/*
 * Calls fn(a0, a1) in the stopped thread, returning into the stub; *ret gets its result and
 * the thread is stopped again where it was. On -ETIMEDOUT the thread is stopped inside the
 * call, which it finishes on its own once let go.
 */
static int stub_call(struct inject *in, uint64_t fn, uint64_t a0, uint64_t a1, uint64_t *ret)
{
	struct gs_stub_control c = { .fn = fn };
	struct user_regs_struct cur, regs;
	int err;

	if (ptrace(PTRACE_GETREGS, in->pid, NULL, &cur))
		return -errno;
	stub_regs(&cur, &c.regs);
	regs = cur;
	regs.rip = in->stub;
	regs.rsp = (c.regs.flags_sp - 16) & ~0xfULL;
	regs.rax = regs.rdx = 0xffffffffULL; /* every state component saved */
	regs.rdi = a0;
	regs.rsi = a1;
	regs.orig_rax = -1;
	regs.eflags &= ~(uint64_t)(EFLAGS_DF | EFLAGS_TF);
	err = remote_rw(in->pid, c.regs.flags_sp, &cur.eflags, sizeof(cur.eflags), true);
	err = err
		      ?: remote_rw(in->pid, CTRL(in, fn), &c,
				   offsetof(struct gs_stub_control, path), true);
	if (err)
		return err;
	if (ptrace(PTRACE_SETREGS, in->pid, NULL, &regs) || ptrace(PTRACE_CONT, in->pid, NULL, 0))
		return -errno;
	err = wait_done(in, ret);
	if (err == -EFAULT) {
		/* the call faulted: the thread puts itself back, the fault undelivered */
		regs.rip = in->stub + in->code.restore_off;
		if (ptrace(PTRACE_SETREGS, in->pid, NULL, &regs) ||
		    ptrace(PTRACE_CONT, in->pid, NULL, 0))
			return -errno;
	}
	if (err == -ESRCH)
		return err;
	return stop_again(in) ?: err;
}

/*
 * The library's own words for why it set up no GPU activity, into why (its first line,
 * bounded; the log makes it safe for a terminal), asked of gpusnoop_cupti_status() in the
 * stopped thread; "" when it has none.
 */
static void remote_status(struct inject *in, const char *lib, char *why, size_t len)
{
	uint64_t fn, str = 0;
	ssize_t n = 0;

	why[0] = '\0';
	if (!remote_symbol(in->pid, lib, "gpusnoop_cupti_status", &fn) &&
	    !stub_call(in, fn, 0, 0, &str) && str) {
		struct iovec local = { why, len - 1 }, remote = { (void *)(uintptr_t)str, len - 1 };

		n = process_vm_readv(in->pid, &local, 1, &remote, 1, 0);
	}
	why[n > 0 ? n : 0] = '\0';
	why[strcspn(why, "\n")] = '\0';
}

/* dlopen(path) in the stopped thread; the file it loaded must be the one checked (id). */
static int remote_dlopen(struct inject *in, const char *path, const struct gs_file_id *id)
{
	uint64_t dlopen_addr, handle = 0;
	size_t len = strlen(path) + 1;
	struct gs_maps *maps;
	bool same;
	int err = remote_symbol(in->pid, "libc.so", "dlopen", &dlopen_addr);

	if (err) {
		gs_err("--inject: pid %d: no dlopen in its libc", (int)in->pid);
		return err;
	}
	err = len > GS_STUB_MAX_PATH ? -ENAMETOOLONG : 0;
	err = err ?: remote_rw(in->pid, CTRL(in, path), (void *)path, len, true);
	err = err ?: stub_call(in, dlopen_addr, CTRL(in, path), RTLD_NOW, &handle);
	if (!err && !handle)
		err = -ENOEXEC;
	if (err == -ETIMEDOUT)
		gs_err("--inject: pid %d: dlopen(%s) still running after %d s (another thread "
		       "holds the loader lock?): not initialised; the thread finishes it and goes "
		       "on",
		       (int)in->pid, path, CALL_WAIT);
	else if (err)
		gs_err("--inject: pid %d: dlopen(%s): %s", (int)in->pid, path, strerror(-err));
	if (err)
		return err;
	maps = gs_maps__read(in->pid);
	same = gs_inject_file__mapped(maps, id);
	gs_maps__free(maps);
	if (!same) {
		gs_err("--inject: pid %d: %s: the file loaded is not the one checked; not "
		       "initialised",
		       (int)in->pid, path);
		return -EPERM;
	}
	return 0;
}

/* dlopen(path), then its InitializeInjection(), in the stopped thread; why it refused. */
static int load_and_init(struct inject *in, const char *path, const struct gs_file_id *id,
			 uint64_t *initialized, char *why, size_t len)
{
	const char *base = strrchr(path, '/');
	uint64_t init_addr;
	int err = remote_dlopen(in, path, id);

	if (err)
		return err;
	err = remote_symbol(in->pid, base ? base + 1 : path, "InitializeInjection", &init_addr);
	err = err ?: stub_call(in, init_addr, 0, 0, initialized);
	if (err == -ETIMEDOUT)
		gs_err("--inject: pid %d: InitializeInjection still running after %d s; the "
		       "thread finishes it and goes on",
		       (int)in->pid, CALL_WAIT);
	else if (err)
		gs_err("--inject: pid %d: InitializeInjection: %s", (int)in->pid, strerror(-err));
	else if ((int)*initialized != 1)
		remote_status(in, base ? base + 1 : path, why, len);
	return err;
}

/* The library at path as pid sees it: a file root owns that only root may write. */
static int check_file(pid_t pid, const char *path, struct gs_file_id *id)
{
	const char *why;
	int err = gs_inject_file__check(pid, path, id, &why);

	if (err == -EPERM && why)
		gs_err("--inject: pid %d: %s as the process sees it is %s: not loaded", (int)pid,
		       path, why);
	else if (err)
		gs_err("--inject: pid %d: %s as the process sees it: %s: not loaded", (int)pid,
		       path, strerror(-err));
	return err;
}

static int attach_and_load(struct inject *in, const char *path, const struct gs_file_id *id,
			   uint64_t *initialized, char *why, size_t len)
{
	struct user_regs_struct saved;
	int err;

	if (ptrace(PTRACE_SEIZE, in->pid, NULL, 0) || ptrace(PTRACE_INTERRUPT, in->pid, NULL, 0)) {
		err = -errno;
		gs_err("--inject: pid %d: ptrace: %s", (int)in->pid, strerror(-err));
		return err;
	}
	err = wait_interrupted(in->pid);
	if (!err && ptrace(PTRACE_GETREGS, in->pid, NULL, &saved))
		err = -errno;
	if (!err) {
		err = map_stub(in, &saved);
		if (err)
			gs_err("--inject: pid %d: mapping the return stub: %s", (int)in->pid,
			       strerror(-err));
	}
	err = err ?: load_and_init(in, path, id, initialized, why, len);
	/* stopped wherever it is: inside a call given up on it goes on with it, else as it was */
	ptrace(PTRACE_DETACH, in->pid, NULL, 0);
	return err;
}

int gs_gpu_inject(pid_t pid, const char *path)
{
	struct inject in = { .pid = pid };
	struct gs_file_id id;
	uint64_t initialized = 0;
	char why[192] = "";
	int err = check_file(pid, path, &id);

	err = err ?: attach_and_load(&in, path, &id, &initialized, why, sizeof(why));
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
