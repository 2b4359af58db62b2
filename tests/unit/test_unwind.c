// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_unwind.c: DWARF unwinding of stacks captured from a real process without frame pointers. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/symcache.h"
#include "user/unwind.h"

#define GS_NOFP GS_FIXTURES "/bin/gs_nofp"
#define MAX_IPS 64
#define PAGE	4096

/* The chain gs_nofp's allocation is made through, innermost first (all without FPs). */
static const char *const nofp_chain[] = { "gs_nofp_inner", "gs_nofp_middle", "gs_nofp_outer",
					  "main" };
#define NOFP_CHAIN (sizeof(nofp_chain) / sizeof(nofp_chain[0]))

/*
 * Runs gs_nofp under ptrace until it stops itself (SIGSTOP, three calls deep in
 * libgs_nofp.so), and captures what the BPF side would: ip, sp, bp and the stack above sp,
 * shortened to a page boundary where the stack ends. Returns the stopped child, or -1.
 */
static pid_t capture_nofp_with(struct gs_ustack *st, const char *lib_dir)
{
	struct user_regs_struct regs;
	int status, fd;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		fd = open("/dev/null", O_WRONLY);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		setenv("GS_NOFP_STOP", "1", 1);
		if (lib_dir)
			setenv("LD_LIBRARY_PATH", lib_dir, 1);
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(GS_NOFP, GS_NOFP, (char *)NULL);
		_exit(127);
	}
	/* the exec stop, then the fixture's own SIGSTOP */
	if (waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status) ||
	    ptrace(PTRACE_CONT, pid, NULL, NULL) || waitpid(pid, &status, 0) != pid ||
	    !WIFSTOPPED(status) || WSTOPSIG(status) != SIGSTOP ||
	    ptrace(PTRACE_GETREGS, pid, NULL, &regs))
		goto out_kill;
	memset(st, 0, sizeof(*st));
	st->regs[GS_USTACK_REG_IP] = regs.rip;
	st->regs[GS_USTACK_REG_SP] = regs.rsp;
	st->regs[GS_USTACK_REG_BP] = regs.rbp;
	for (uint64_t size = GS_USTACK_BYTES; size > 0;) {
		struct iovec local = { st->data, size }, remote = { (void *)regs.rsp, size };

		if (process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)size) {
			st->size = (uint32_t)size;
			return pid;
		}
		/* the highest page boundary below sp + size */
		size = ((regs.rsp + size - 1) & ~(uint64_t)(PAGE - 1)) - regs.rsp;
	}
out_kill:
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

static pid_t capture_nofp(struct gs_ustack *st)
{
	return capture_nofp_with(st, NULL);
}

static void end_child(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

/* Names of ips[0..n) in pid; return addresses (all but the first) are looked up at ip - 1. */
static void symbolize(struct gs_symcache *cache, pid_t pid, const uint64_t *ips, int n,
		      const char **names, const char **modules)
{
	for (int i = 0; i < n; i++) {
		struct gs_frame f;

		gs_symcache__resolve(cache, pid, ips[i] - (i ? 1 : 0), &f);
		names[i] = f.symbol;
		modules[i] = f.module;
	}
}

/* Where the chain starts in names[0..n), or -1 when it is not there whole and in order. */
static int find_chain(const char **names, int n)
{
	for (int i = 0; i + (int)NOFP_CHAIN <= n; i++) {
		size_t j = 0;

		while (j < NOFP_CHAIN && names[i + j] && !strcmp(names[i + j], nofp_chain[j]))
			j++;
		if (j == NOFP_CHAIN)
			return i;
	}
	return -1;
}

static void print_stack(const char **names, const char **modules, int n)
{
	for (int i = 0; i < n; i++)
		printf("  #%d %s (%s)\n", i, names[i] ? names[i] : "?",
		       modules[i] ? modules[i] : "?");
}

GS_TEST(unwinds_real_process_without_frame_pointers)
{
	struct gs_ustack *st = malloc(sizeof(*st));
	struct gs_unwinder *u = gs_unwinder__new();
	struct gs_symcache *cache = gs_symcache__new();
	const char *names[MAX_IPS], *modules[MAX_IPS];
	struct gs_unwind_stats stats;
	uint64_t ips[MAX_IPS];
	int n, at;
	pid_t pid;

	if (!GS_EXPECT(st && u && cache))
		goto out;
	pid = capture_nofp(st);
	if (!GS_EXPECT(pid > 0))
		goto out;
	n = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	GS_EXPECT(n > (int)NOFP_CHAIN);
	if (n > 0) {
		symbolize(cache, pid, ips, n, names, modules);
		GS_EXPECT_EQ(ips[0], st->regs[GS_USTACK_REG_IP]);
		at = find_chain(names, n);
		if (!GS_EXPECT(at > 0) || getenv("GS_TEST_VERBOSE"))
			print_stack(names, modules, n);
		/* above the chain: only libc's raise(), where the child stopped */
		for (int i = 0; i < at; i++)
			GS_EXPECT(modules[i] && strstr(modules[i], "/libc.so"));
		/* below main: libc's start code, then the executable's _start */
		GS_EXPECT(at + (int)NOFP_CHAIN < n);
		GS_EXPECT_STR_EQ(names[n - 1], "_start");
	}
	gs_unwinder__stats(u, &stats);
	GS_EXPECT_EQ(stats.stacks, 1);
	GS_EXPECT(stats.cfi_steps >= NOFP_CHAIN);
	GS_EXPECT_EQ(stats.fp_steps, 0);
	end_child(pid);
out:
	gs_symcache__free(cache);
	gs_unwinder__free(u);
	free(st);
}

/* Code built with -g but without unwind tables has its CFI in .debug_frame only. */
GS_TEST(unwinds_with_debug_frame)
{
	struct gs_ustack *st = malloc(sizeof(*st));
	struct gs_unwinder *u = gs_unwinder__new();
	struct gs_symcache *cache = gs_symcache__new();
	const char *names[MAX_IPS], *modules[MAX_IPS];
	struct gs_unwind_stats stats;
	uint64_t ips[MAX_IPS];
	int n, at;
	pid_t pid;

	if (!GS_EXPECT(st && u && cache))
		goto out;
	pid = capture_nofp_with(st, GS_FIXTURES "/lib/debug_frame");
	if (!GS_EXPECT(pid > 0))
		goto out;
	n = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	gs_unwinder__stats(u, &stats);
	GS_EXPECT_EQ(stats.fp_steps, 0);
	symbolize(cache, pid, ips, n > 0 ? n : 0, names, modules);
	at = find_chain(names, n);
	if (!GS_EXPECT(at > 0) || getenv("GS_TEST_VERBOSE"))
		print_stack(names, modules, n);
	else
		GS_EXPECT(strstr(modules[at], "/lib/debug_frame/libgs_nofp.so") != NULL);
	end_child(pid);
out:
	gs_symcache__free(cache);
	gs_unwinder__free(u);
	free(st);
}

/* The same capture walked with frame pointers loses the chain: what --stacks fp sees. */
GS_TEST(frame_pointers_lose_the_chain)
{
	struct gs_ustack *st = malloc(sizeof(*st));
	struct gs_symcache *cache = gs_symcache__new();
	const char *names[MAX_IPS], *modules[MAX_IPS];
	uint64_t ips[MAX_IPS], bp, sp;
	int n = 0;
	pid_t pid;

	if (!GS_EXPECT(st && cache))
		goto out;
	pid = capture_nofp(st);
	if (!GS_EXPECT(pid > 0))
		goto out;
	ips[n++] = st->regs[GS_USTACK_REG_IP];
	bp = st->regs[GS_USTACK_REG_BP];
	sp = st->regs[GS_USTACK_REG_SP];
	while (n < MAX_IPS && bp >= sp && bp + 16 <= sp + st->size) {
		memcpy(&ips[n++], st->data + (bp + 8 - sp), 8);
		memcpy(&bp, st->data + (bp - sp), 8);
	}
	symbolize(cache, pid, ips, n, names, modules);
	GS_EXPECT_EQ(find_chain(names, n), -1);
	end_child(pid);
out:
	gs_symcache__free(cache);
	free(st);
}

/* A second process mapping the same files reuses their CFI; each process has its maps. */
GS_TEST(cfi_is_cached_per_file_across_processes)
{
	struct gs_ustack *st = malloc(sizeof(*st));
	struct gs_unwinder *u = gs_unwinder__new();
	struct gs_unwind_stats first, second;
	uint64_t ips[MAX_IPS];
	int n1, n2;
	pid_t pid;

	if (!GS_EXPECT(st && u))
		goto out;
	pid = capture_nofp(st);
	if (!GS_EXPECT(pid > 0))
		goto out;
	n1 = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	end_child(pid);
	gs_unwinder__stats(u, &first);
	GS_EXPECT(first.files >= 3); /* libc, libgs_nofp.so, gs_nofp */
	GS_EXPECT_EQ(first.maps_reads, 1);

	pid = capture_nofp(st);
	if (!GS_EXPECT(pid > 0))
		goto out;
	n2 = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	GS_EXPECT_EQ(n2, n1);
	gs_unwinder__stats(u, &second);
	GS_EXPECT_EQ(second.files, first.files);
	GS_EXPECT_EQ(second.maps_reads, 2);
	end_child(pid);
out:
	gs_unwinder__free(u);
	free(st);
}

/* No snapshot outlives a call: a pid unwound twice has its maps read twice (no stale cache). */
GS_TEST(maps_are_read_for_each_unwind)
{
	struct gs_ustack *st = malloc(sizeof(*st));
	struct gs_unwinder *u = gs_unwinder__new();
	struct gs_unwind_stats stats;
	uint64_t ips[MAX_IPS];
	int n1, n2;
	pid_t pid;

	if (!GS_EXPECT(st && u))
		goto out;
	pid = capture_nofp(st);
	if (!GS_EXPECT(pid > 0))
		goto out;
	n1 = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	n2 = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	end_child(pid);
	GS_EXPECT(n1 > 1);
	GS_EXPECT_EQ(n2, n1);
	gs_unwinder__stats(u, &stats);
	GS_EXPECT_EQ(stats.maps_reads, 2);
out:
	gs_unwinder__free(u);
	free(st);
}

/* Memory beyond the captured slice is never read: a short slice gives a short stack. */
GS_TEST(reads_only_the_captured_slice)
{
	struct gs_ustack *st = malloc(sizeof(*st));
	struct gs_unwinder *u = gs_unwinder__new();
	uint64_t ips[MAX_IPS];
	int full, cut;
	pid_t pid;

	if (!GS_EXPECT(st && u))
		goto out;
	pid = capture_nofp(st);
	if (!GS_EXPECT(pid > 0))
		goto out;
	full = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	st->size = 64;
	cut = gs_unwinder__unwind(u, pid, st, ips, MAX_IPS);
	GS_EXPECT(cut >= 1);
	GS_EXPECT(cut < full);
	st->size = 0;
	GS_EXPECT_EQ(gs_unwinder__unwind(u, pid, st, ips, MAX_IPS), 1);
	/* max_ips bounds the walk */
	st->size = GS_USTACK_BYTES;
	GS_EXPECT_EQ(gs_unwinder__unwind(u, pid, st, ips, 2), 2);
	end_child(pid);
out:
	gs_unwinder__free(u);
	free(st);
}

GS_TEST(rejects_bad_input)
{
	struct gs_ustack *st = calloc(1, sizeof(*st));
	struct gs_unwinder *u = gs_unwinder__new();
	uint64_t ips[4];

	if (!GS_EXPECT(st && u))
		goto out;
	st->size = GS_USTACK_BYTES + 1;
	GS_EXPECT_EQ(gs_unwinder__unwind(u, getpid(), st, ips, 4), -EINVAL);
	/* an ip in no mapping and no stack: just the ip */
	st->size = 0;
	st->regs[GS_USTACK_REG_IP] = 0x10;
	GS_EXPECT_EQ(gs_unwinder__unwind(u, getpid(), st, ips, 4), 1);
	GS_EXPECT_EQ(ips[0], 0x10);
	/* a gone process: nothing to read maps from, still the ip */
	GS_EXPECT_EQ(gs_unwinder__unwind(u, 0x7ffffff0, st, ips, 4), 1);
	GS_EXPECT_EQ(gs_unwinder__unwind(u, getpid(), st, ips, 0), 0);
out:
	gs_unwinder__free(u);
	free(st);
}

GS_TEST_MAIN(unwinds_real_process_without_frame_pointers, unwinds_with_debug_frame,
	     frame_pointers_lose_the_chain, cfi_is_cached_per_file_across_processes,
	     maps_are_read_for_each_unwind, reads_only_the_captured_slice, rejects_bad_input)
