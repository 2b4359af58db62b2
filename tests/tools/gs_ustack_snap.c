// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* gs_ustack_snap: break at a function of a real process (ptrace), unwind its stack, print it. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "user/elf_file.h"
#include "user/proc_maps.h"
#include "user/symcache.h"
#include "user/unwind.h"

/*
 * Usage: gs_ustack_snap LIB SYMBOL MIN_ARG1 -- CMD ARGS
 *
 * Runs CMD, which must stop itself (SIGSTOP) once LIB is loaded; puts a breakpoint on
 * SYMBOL in the mapped LIB, and at the first hit whose first argument is >= MIN_ARG1 takes
 * what gs_capture_ustack() takes at a uprobe there (ip, sp, bp and the stack above sp).
 * Prints one JSON line per slice size (4 KiB steps up to GS_USTACK_BYTES): the frames the
 * unwinder finds in that much stack, symbolized, and on stderr what unwinding the whole
 * slice took: the first time (loading the files' CFI) and on average over 1000 more. Kills
 * CMD. For tests that unwind through libraries a fixture cannot stand in for (Debian's
 * libtorch); exits 1 on any failure.
 */

#define MAX_IPS 64
#define PAGE	4096
#define REPEAT	1000

static pid_t child = -1;

static void die(const char *what)
{
	fprintf(stderr, "gs_ustack_snap: %s: %s\n", what, strerror(errno));
	if (child > 0)
		kill(child, SIGKILL);
	exit(1);
}

static uint64_t find_breakpoint(pid_t pid, const char *lib, const char *symbol)
{
	struct gs_maps *maps = gs_maps__read(pid);

	if (!maps)
		die("maps");
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];
		struct gs_elf *elf;
		uint64_t vaddr, off = 0;
		const char *base;
		int fd;

		if (!m->exec || !m->path)
			continue;
		base = strrchr(m->path, '/');
		if (!base || strncmp(base + 1, lib, strlen(lib)))
			continue;
		fd = gs_mapping__open(maps, m, NULL);
		if (fd < 0)
			continue;
		elf = gs_elf__open_fd(fd);
		close(fd);
		vaddr = elf ? gs_elf__find_function(elf, symbol) : 0;
		if (vaddr && !gs_elf__vaddr_to_offset(elf, vaddr, &off) && off >= m->pgoff &&
		    off < m->pgoff + (m->end - m->start)) {
			gs_elf__free(elf);
			gs_maps__free(maps);
			return m->start + off - m->pgoff;
		}
		gs_elf__free(elf);
	}
	gs_maps__free(maps);
	errno = ENOENT;
	die(symbol);
	return 0;
}

static int wait_stop(void)
{
	int status;

	if (waitpid(child, &status, 0) != child)
		die("waitpid");
	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		fprintf(stderr, "gs_ustack_snap: %s ended before the breakpoint: %s %d\n",
			"the command", WIFEXITED(status) ? "exit status" : "signal",
			WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
		exit(1);
	}
	return WSTOPSIG(status);
}

static void capture(struct gs_ustack *st, const struct user_regs_struct *regs)
{
	memset(st, 0, sizeof(*st));
	st->regs[GS_USTACK_REG_IP] = regs->rip;
	st->regs[GS_USTACK_REG_SP] = regs->rsp;
	st->regs[GS_USTACK_REG_BP] = regs->rbp;
	for (uint64_t size = GS_USTACK_BYTES; size > 0;) {
		struct iovec local = { st->data, size }, remote = { (void *)regs->rsp, size };

		if (process_vm_readv(child, &local, 1, &remote, 1, 0) == (ssize_t)size) {
			st->size = (uint32_t)size;
			return;
		}
		size = ((regs->rsp + size - 1) & ~(uint64_t)(PAGE - 1)) - regs->rsp;
	}
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static void time_unwinding(struct gs_unwinder *u, const struct gs_ustack *st)
{
	uint64_t ips[MAX_IPS];
	double t0 = now_us(), cold, warm;
	int n = gs_unwinder__unwind(u, child, st, ips, MAX_IPS);

	cold = now_us() - t0;
	t0 = now_us();
	for (int i = 0; i < REPEAT; i++)
		gs_unwinder__unwind(u, child, st, ips, MAX_IPS);
	warm = (now_us() - t0) / REPEAT;
	fprintf(stderr,
		"gs_ustack_snap: %d frames from %u bytes: first unwind %.0f us, then %.1f us\n", n,
		st->size, cold, warm);
}

static void print_json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_stack(struct gs_unwinder *u, struct gs_symcache *cache, struct gs_ustack *st,
			uint32_t size)
{
	uint32_t full = st->size;
	uint64_t ips[MAX_IPS];
	int n;

	st->size = size < full ? size : full;
	n = gs_unwinder__unwind(u, child, st, ips, MAX_IPS);
	printf("{\"slice\": %u, \"frames\": [", st->size);
	for (int i = 0; i < n; i++) {
		struct gs_frame f;

		/* frame 0 is the function's first instruction; the rest are return addresses */
		gs_symcache__resolve(cache, child, ips[i] - (i ? 1 : 0), &f);
		printf("%s{\"symbol\": ", i ? ", " : "");
		if (f.symbol)
			print_json_string(f.symbol);
		else
			fputs("null", stdout);
		fputs(", \"module\": ", stdout);
		if (f.module)
			print_json_string(f.module);
		else
			fputs("null", stdout);
		printf(", \"address\": %" PRIu64 "}", ips[i]);
	}
	printf("]}\n");
	st->size = full;
}

int main(int argc, char **argv)
{
	struct gs_ustack *st = malloc(sizeof(*st));
	struct user_regs_struct regs;
	struct gs_unwinder *u;
	struct gs_symcache *cache;
	uint64_t bp, min_arg, word;
	long orig;

	if (argc < 6 || strcmp(argv[4], "--")) {
		fprintf(stderr, "usage: %s LIB SYMBOL MIN_ARG1 -- CMD ARGS\n", argv[0]);
		return 1;
	}
	min_arg = strtoull(argv[3], NULL, 0);
	u = gs_unwinder__new();
	cache = gs_symcache__new();
	if (!st || !u || !cache)
		die("out of memory");
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(argv[5], argv + 5);
		_exit(127);
	}
	if (wait_stop() != SIGTRAP || ptrace(PTRACE_CONT, child, NULL, NULL))
		die("exec stop");
	/* CMD stops itself once the library is loaded; other signals are its own */
	for (int sig; (sig = wait_stop()) != SIGSTOP;)
		if (ptrace(PTRACE_CONT, child, NULL, (void *)(long)sig))
			die("continue");
	bp = find_breakpoint(child, argv[1], argv[2]);
	errno = 0;
	orig = ptrace(PTRACE_PEEKTEXT, child, (void *)bp, NULL);
	if (errno)
		die("peek");
	word = ((uint64_t)orig & ~0xffULL) | 0xcc;
	if (ptrace(PTRACE_POKETEXT, child, (void *)bp, (void *)word) ||
	    ptrace(PTRACE_CONT, child, NULL, NULL))
		die("breakpoint");
	for (;;) {
		int sig = wait_stop();

		if (sig != SIGTRAP) {
			if (ptrace(PTRACE_CONT, child, NULL, (void *)(long)sig))
				die("continue");
			continue;
		}
		if (ptrace(PTRACE_GETREGS, child, NULL, &regs) || regs.rip != bp + 1)
			die("unexpected trap");
		regs.rip = bp; /* as at a uprobe: on the first instruction, not yet run */
		if (regs.rdi >= min_arg)
			break;
		/* too small: run the real first instruction, then put the breakpoint back */
		if (ptrace(PTRACE_POKETEXT, child, (void *)bp, (void *)orig) ||
		    ptrace(PTRACE_SETREGS, child, NULL, &regs) ||
		    ptrace(PTRACE_SINGLESTEP, child, NULL, NULL) || wait_stop() != SIGTRAP ||
		    ptrace(PTRACE_POKETEXT, child, (void *)bp, (void *)word) ||
		    ptrace(PTRACE_CONT, child, NULL, NULL))
			die("step over the breakpoint");
	}
	if (ptrace(PTRACE_POKETEXT, child, (void *)bp, (void *)orig))
		die("remove the breakpoint");
	capture(st, &regs);
	time_unwinding(u, st);
	for (uint32_t size = PAGE; size <= GS_USTACK_BYTES; size += PAGE)
		print_stack(u, cache, st, size);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	gs_symcache__free(cache);
	gs_unwinder__free(u);
	free(st);
	return fflush(stdout) ? 1 : 0;
}
