// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_remote_stub.c: the return stub run in this process: it calls, stores, and puts everything back. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include "tests/unit/harness.h"
#include "user/remote_stub.h"

/* what the landing saw: rbx, r12, r15, rdi, rax, rflags, xmm7, rsi */
uint64_t seen[8];

uint64_t stub_fn(uint64_t a, uint64_t b);
uint64_t stub_fn(uint64_t a, uint64_t b)
{
	/* the extended state the stub must put back */
	__asm__ volatile("pxor %%xmm7, %%xmm7" ::: "xmm7");
	return a * 1000 + b;
}

/*
 * run_stub(entry, &ctrl->regs.rsp, a0, a1): saves the callee-saved registers, stores the %rsp
 * the stub must come back with, puts a1 in %xmm7 and enters the stub as gpu_inject.c sets a
 * thread up; stub_landing records what the stub restored and returns to run_stub's caller.
 */
void run_stub(uint64_t entry, uint64_t *rsp_slot, uint64_t a0, uint64_t a1);
extern char stub_landing[];
__asm__(".text\n"
	".globl run_stub\n"
	".type run_stub, @function\n"
	"run_stub:\n"
	"	push %rbx\n	push %rbp\n	push %r12\n	push %r13\n	push %r14\n	"
	"push %r15\n"
	"	mov %rsp, (%rsi)\n"
	"	movq %rcx, %xmm7\n"
	"	mov %rdi, %r11\n"
	"	mov %rdx, %rdi\n"
	"	mov %rcx, %rsi\n"
	"	sub $512, %rsp\n"
	"	and $-16, %rsp\n"
	"	mov $-1, %eax\n"
	"	mov $-1, %edx\n"
	"	jmp *%r11\n"
	".globl stub_landing\n"
	"stub_landing:\n"
	"	mov %rbx, seen(%rip)\n"
	"	mov %r12, seen+8(%rip)\n"
	"	mov %r15, seen+16(%rip)\n"
	"	mov %rdi, seen+24(%rip)\n"
	"	mov %rax, seen+32(%rip)\n"
	"	pushfq\n"
	"	popq seen+40(%rip)\n"
	"	movq %xmm7, seen+48(%rip)\n"
	"	mov %rsi, seen+56(%rip)\n"
	"	pop %r15\n	pop %r14\n	pop %r13\n	pop %r12\n	pop %rbp\n	"
	"pop %rbx\n"
	"	ret\n"
	".size run_stub, . - run_stub\n");

static uint64_t flags_slot[2] __attribute__((aligned(16)));

/* maps the stub as gpu_inject.c does in the target: code read+execute, the rest writable */
static uint8_t *map_stub(const struct gs_remote_stub *s)
{
	uint8_t *base =
		mmap(NULL, s->map_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
		return NULL;
	memcpy(base, s->code, s->code_len);
	if (mprotect(base, GS_STUB_CODE_SIZE, PROT_READ | PROT_EXEC)) {
		munmap(base, s->map_size);
		return NULL;
	}
	return base;
}

static void check_call(size_t xsave_size, bool restore_only)
{
	struct gs_remote_stub s;
	struct gs_stub_control *c;
	uint8_t *base;

	if (!GS_EXPECT_EQ(gs_remote_stub__build(&s, xsave_size), 0))
		return;
	GS_EXPECT_EQ(s.xsave_off % 64, 0);
	GS_EXPECT(s.xsave_off >= GS_STUB_CODE_SIZE + sizeof(struct gs_stub_control));
	base = map_stub(&s);
	if (!GS_EXPECT(base))
		return;
	c = (struct gs_stub_control *)(base + GS_STUB_CODE_SIZE);
	c->fn = (uint64_t)(uintptr_t)&stub_fn;
	c->regs = (struct gs_stub_regs){ .rax = 0xaaaa,
					 .rbx = 0x1111,
					 .rsi = 0x5555,
					 .rdi = 0x7777,
					 .r12 = 0x1212,
					 .r15 = 0x1515,
					 .rip = (uint64_t)(uintptr_t)stub_landing,
					 .flags_sp = (uint64_t)(uintptr_t)flags_slot };
	flags_slot[0] = 0x203; /* CF and the reserved bit 1 (IF: user mode cannot change it) */
	if (restore_only) {
		/* the area holds what the call saved at its entry: %xmm7 = 42 */
		run_stub((uint64_t)(uintptr_t)base, &c->regs.rsp, 7, 42);
		c->done = c->result = 0;
	}
	memset(seen, 0, sizeof(seen));
	run_stub((uint64_t)(uintptr_t)base + (restore_only ? s.restore_off : 0), &c->regs.rsp, 7,
		 restore_only ? 99 : 42);
	GS_EXPECT_EQ(c->done, restore_only ? 0 : 1);
	GS_EXPECT_EQ(c->result, restore_only ? 0 : 7042);
	GS_EXPECT_EQ(seen[0], 0x1111);
	GS_EXPECT_EQ(seen[1], 0x1212);
	GS_EXPECT_EQ(seen[2], 0x1515);
	GS_EXPECT_EQ(seen[3], 0x7777);
	GS_EXPECT_EQ(seen[4], 0xaaaa);
	GS_EXPECT_EQ(seen[5] & 0x401, 0x1); /* CF restored, DF clear */
	GS_EXPECT_EQ(seen[6], 42);	    /* %xmm7 as it was before the call */
	GS_EXPECT_EQ(seen[7], 0x5555);
	munmap(base, s.map_size);
}

GS_TEST(xsave_stub_calls_and_restores)
{
	size_t size = gs_remote_stub__xsave_size();

	if (size)
		check_call(size, false);
}

GS_TEST(fxsave_stub_calls_and_restores)
{
	check_call(0, false);
}

/* a call given up on (its function faulted) enters the restore sequence alone */
GS_TEST(restore_alone_puts_the_thread_back)
{
	check_call(gs_remote_stub__xsave_size(), true);
}

/* a stop inside a system call restarts it as the kernel would have; other stops keep rax */
GS_TEST(interrupted_system_calls_restart)
{
	uint64_t rip, rax;

	gs_remote_stub__resume(0x1002, (uint64_t)-512, 202, &rip, &rax); /* futex, ERESTARTSYS */
	GS_EXPECT_EQ(rip, 0x1000);
	GS_EXPECT_EQ(rax, 202);
	gs_remote_stub__resume(0x1002, (uint64_t)-516, 230, &rip, &rax); /* clock_nanosleep */
	GS_EXPECT_EQ(rip, 0x1000);
	GS_EXPECT_EQ(rax, 219); /* restart_syscall */
	gs_remote_stub__resume(0x1002, (uint64_t)-514, 7, &rip, &rax);
	GS_EXPECT_EQ(rip, 0x1000);
	GS_EXPECT_EQ(rax, 7);
	gs_remote_stub__resume(0x1002, (uint64_t)-4, 202, &rip, &rax); /* EINTR: returned */
	GS_EXPECT_EQ(rip, 0x1002);
	GS_EXPECT_EQ(rax, (uint64_t)-4);
	gs_remote_stub__resume(0x5000, (uint64_t)-512, -1, &rip, &rax); /* not in a call */
	GS_EXPECT_EQ(rip, 0x5000);
	GS_EXPECT_EQ(rax, (uint64_t)-512);
}

GS_TEST(oversized_save_areas_are_refused)
{
	struct gs_remote_stub s;

	GS_EXPECT(gs_remote_stub__build(&s, 1u << 21) < 0);
}

GS_TEST_MAIN(xsave_stub_calls_and_restores, fxsave_stub_calls_and_restores,
	     restore_alone_puts_the_thread_back, interrupted_system_calls_restart,
	     oversized_save_areas_are_refused)
