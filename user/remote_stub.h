/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* remote_stub.h: code a ptraced thread returns into, that puts it back where it was (x86-64). */
#ifndef GS_REMOTE_STUB_H
#define GS_REMOTE_STUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A function called in another process's thread by ptrace (profilers/cuda/gpu_inject.c)
 * returns into this stub, not to an address that faults: the stub stores the result, sets
 * done, restores the thread's extended state (XRSTOR; FXRSTOR without XSAVE), flags and
 * registers, and jumps to where the thread was stopped. So a call gpusnoop stops waiting
 * for (a dlopen that waits on the loader lock) still ends with the thread going on as if
 * never called, gpusnoop attached or not.
 *
 * The mapping: page 0 the code (read and execute), then the control block and the save
 * area (read and write). The thread enters at the code's start with %rsp 16-byte aligned
 * on its own stack, %rdi/%rsi the arguments and %eax = %edx = ~0 (the state components to
 * save). Every stack it uses is its own, below its red zone, so a signal arriving at any
 * instruction of the stub finds a stack to run on.
 */
#define GS_STUB_CODE_SIZE 0x1000
#define GS_STUB_MAX_PATH  1024

/* The registers the stub restores, as the thread continues (the restart of an interrupted
 * system call already applied: see gs_remote_stub__resume()). */
struct gs_stub_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rsp, rip;
	uint64_t flags_sp; /* where on its stack the stub finds its %rflags (below the red zone) */
};

/* At GS_STUB_CODE_SIZE in the mapping; gpusnoop writes it before each call. */
struct gs_stub_control {
	uint64_t fn;	 /* the function to call */
	uint64_t result; /* its %rax */
	uint64_t done;	 /* 1 once result is stored; the thread then restores itself */
	uint64_t pad;
	struct gs_stub_regs regs;
	char path[GS_STUB_MAX_PATH]; /* an argument string (dlopen's path) */
};

struct gs_remote_stub {
	uint8_t code[256];
	size_t code_len;
	size_t restore_off; /* entry of the restore sequence alone (a call given up on) */
	size_t xsave_off;   /* the save area's offset in the mapping, 64-byte aligned */
	size_t map_size;    /* the whole mapping, whole pages */
	bool xsave;	    /* XSAVE/XRSTOR, else FXSAVE/FXRSTOR */
};

/*
 * Builds the stub for a save area of xsave_size bytes (0: FXSAVE's 512). Returns 0 or
 * -EINVAL when it would not fit.
 */
int gs_remote_stub__build(struct gs_remote_stub *s, size_t xsave_size);
/* This CPU's XSAVE area size for every state component it supports; 0 without OSXSAVE. */
size_t gs_remote_stub__xsave_size(void);

/*
 * The registers a thread stopped with regs (user_regs_struct's values) continues with, had
 * the kernel resumed it: a system call interrupted by the stop is restarted (its number back
 * in %rax, %rip back on the syscall instruction), as the kernel does for a stop that
 * delivers no signal. The stub bypasses the kernel's restart, so it must be done here.
 */
void gs_remote_stub__resume(uint64_t rip, uint64_t rax, int64_t orig_rax, uint64_t *out_rip,
			    uint64_t *out_rax);

#endif /* GS_REMOTE_STUB_H */
