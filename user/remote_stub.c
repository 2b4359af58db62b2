// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* remote_stub.c: the x86-64 code of the remote-call return stub, encoded by hand. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include "user/remote_stub.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

/* the kernel's restart codes (include/linux/errno.h, not exported to user space) */
#define ERESTARTSYS	      512
#define ERESTARTNOINTR	      513
#define ERESTARTNOHAND	      514
#define ERESTART_RESTARTBLOCK 516
#define NR_RESTART_SYSCALL    219 /* x86-64 __NR_restart_syscall */

#define CTRL(field) (GS_STUB_CODE_SIZE + offsetof(struct gs_stub_control, field))

struct emit {
	uint8_t *buf;
	size_t len, cap;
	bool overflow;
};

static void put(struct emit *e, const uint8_t *bytes, size_t n)
{
	if (e->len + n > e->cap) {
		e->overflow = true;
		return;
	}
	memcpy(e->buf + e->len, bytes, n);
	e->len += n;
}

/* an instruction whose last 4 (+ tail) bytes are a %rip-relative displacement to target */
static void put_riprel(struct emit *e, const uint8_t *op, size_t n, size_t target,
		       const uint8_t *tail, size_t tail_len)
{
	int32_t disp = (int32_t)((int64_t)target - (int64_t)(e->len + n + 4 + tail_len));
	uint8_t d[4] = { (uint8_t)disp, (uint8_t)(disp >> 8), (uint8_t)(disp >> 16),
			 (uint8_t)(disp >> 24) };

	put(e, op, n);
	put(e, d, 4);
	if (tail_len)
		put(e, tail, tail_len);
}

/* mov target(%rip), %reg (reg: 0 rax, 1 rcx, 2 rdx, 3 rbx, 4 rsp, 5 rbp, 6 rsi, 7 rdi, 8+ r8+) */
static void put_load(struct emit *e, int reg, size_t target)
{
	uint8_t op[3] = { (uint8_t)(0x48 | (reg >= 8 ? 4 : 0)), 0x8b,
			  (uint8_t)(((reg & 7) << 3) | 5) };

	put_riprel(e, op, 3, target, NULL, 0);
}

static void put_restore(struct emit *e, const struct gs_remote_stub *s)
{
	static const uint8_t all_eax[] = { 0xb8, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t all_edx[] = { 0xba, 0xff, 0xff, 0xff, 0xff };
	static const uint8_t xrstor[] = { 0x48, 0x0f, 0xae, 0x2d },
			     fxrstor[] = { 0x48, 0x0f, 0xae, 0x0d };
	static const uint8_t popfq = 0x9d, jmp[] = { 0xff, 0x25 };
	static const struct {
		int reg;
		size_t off;
	} gprs[] = {
		{ 0, CTRL(regs.rax) },	{ 1, CTRL(regs.rcx) },	{ 2, CTRL(regs.rdx) },
		{ 3, CTRL(regs.rbx) },	{ 5, CTRL(regs.rbp) },	{ 6, CTRL(regs.rsi) },
		{ 7, CTRL(regs.rdi) },	{ 8, CTRL(regs.r8) },	{ 9, CTRL(regs.r9) },
		{ 10, CTRL(regs.r10) }, { 11, CTRL(regs.r11) }, { 12, CTRL(regs.r12) },
		{ 13, CTRL(regs.r13) }, { 14, CTRL(regs.r14) }, { 15, CTRL(regs.r15) },
	};

	put(e, all_eax, sizeof(all_eax));
	put(e, all_edx, sizeof(all_edx));
	put_riprel(e, s->xsave ? xrstor : fxrstor, 4, s->xsave_off, NULL, 0);
	/* the flags from the thread's own stack: no other instruction after this sets flags */
	put_load(e, 4, CTRL(regs.flags_sp));
	put(e, &popfq, 1);
	for (size_t i = 0; i < sizeof(gprs) / sizeof(gprs[0]); i++)
		put_load(e, gprs[i].reg, gprs[i].off);
	put_load(e, 4, CTRL(regs.rsp));
	put_riprel(e, jmp, 2, CTRL(regs.rip), NULL, 0);
}

int gs_remote_stub__build(struct gs_remote_stub *s, size_t xsave_size)
{
	static const uint8_t xsave[] = { 0x48, 0x0f, 0xae, 0x25 },
			     fxsave[] = { 0x48, 0x0f, 0xae, 0x05 };
	static const uint8_t call[] = { 0xff, 0x15 }, store_rax[] = { 0x48, 0x89, 0x05 };
	static const uint8_t movq_imm[] = { 0x48, 0xc7, 0x05 }, one[] = { 1, 0, 0, 0 };
	struct emit e;

	memset(s, 0, sizeof(*s));
	s->xsave = xsave_size != 0;
	if (!xsave_size)
		xsave_size = 512;
	if (xsave_size > (1u << 20))
		return -EINVAL;
	s->xsave_off = (GS_STUB_CODE_SIZE + sizeof(struct gs_stub_control) + 63) & ~(size_t)63;
	s->map_size = (s->xsave_off + xsave_size + 4095) & ~(size_t)4095;
	e = (struct emit){ .buf = s->code, .cap = sizeof(s->code) };
	put_riprel(&e, s->xsave ? xsave : fxsave, 4, s->xsave_off, NULL, 0);
	put_riprel(&e, call, 2, CTRL(fn), NULL, 0);
	put_riprel(&e, store_rax, 3, CTRL(result), NULL, 0);
	put_riprel(&e, movq_imm, 3, CTRL(done), one, sizeof(one));
	s->restore_off = e.len;
	put_restore(&e, s);
	s->code_len = e.len;
	return e.overflow ? -EINVAL : 0;
}

size_t gs_remote_stub__xsave_size(void)
{
#if defined(__x86_64__)
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) /* OSXSAVE */
		return 0;
	__cpuid_count(0xd, 0, a, b, c, d);
	/* ecx: every component the CPU has; ebx only those enabled now */
	return c > b ? c : b;
#else
	return 0;
#endif
}

void gs_remote_stub__resume(uint64_t rip, uint64_t rax, int64_t orig_rax, uint64_t *out_rip,
			    uint64_t *out_rax)
{
	*out_rip = rip;
	*out_rax = rax;
	if (orig_rax < 0)
		return;
	switch ((int64_t)rax) {
	case -ERESTARTSYS:
	case -ERESTARTNOINTR:
	case -ERESTARTNOHAND:
		*out_rax = (uint64_t)orig_rax;
		*out_rip = rip - 2; /* syscall is 0f 05 */
		break;
	case -ERESTART_RESTARTBLOCK:
		*out_rax = NR_RESTART_SYSCALL;
		*out_rip = rip - 2;
		break;
	}
}
