// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* unwind.c: DWARF CFI unwinding of captured user stack slices, CFI cached per file (libdw). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include "user/array.h"
#include "user/bounds.h"
#include "user/elf_file.h"
#include "user/log.h"
#include "user/proc_maps.h"
#include "user/symcache.h"
#include "user/unwind.h"

/*
 * Why libdw's CFI interface rather than dwfl or libunwind: both of those tie the unwind
 * tables to one address space (a Dwfl, a unw_addr_space), so a 500 MB libtorch mapped by
 * eight ranks would be opened eight times. dwarf_cfi_addrframe() works on one ELF file in
 * its own link-time addresses, so the tables here are per file and shared by every process
 * mapping it; libdw looks FDEs up through .eh_frame_hdr's sorted table and decodes only the
 * ones asked for. What remains ours is the small register machine below (x86-64).
 */

/* DWARF register numbers of the x86-64 psABI */
enum {
	DW_RBX = 3,
	DW_RBP = 6,
	DW_RSP = 7,
	DW_RA = 16, /* the return address column, and rip in expressions */
	NR_REGS = 17,
};

#define MAX_EXPR_STACK 16

struct regs {
	uint64_t v[NR_REGS];
	uint32_t valid; /* bit per register */
};

struct load_seg {
	uint64_t offset, vaddr, filesz;
};

struct cfi_file {
	uint64_t dev, inode;
	int fd;	  /* kept while elf reads through it (a file not root's); else -1 */
	Elf *elf; /* NULL: tried and failed, do not retry */
	Dwarf_CFI *eh;
	Dwarf *dwarf;
	Dwarf_CFI *debug; /* owned by dwarf */
	struct load_seg *segs;
	size_t nr_segs;
};

struct gs_unwinder {
	struct cfi_file *files;
	size_t nr_files, cap_files;
	struct gs_symcache *symcache; /* borrowed; names JIT code */
	struct gs_unwind_stats stats;
};

/* One unwind: the stack slice and where the stack memory is. */
struct walk {
	const struct gs_ustack *st;
	uint64_t lo, hi; /* [lo, hi): stack addresses st->data covers */
};

struct gs_unwinder *gs_unwinder__new(void)
{
	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = ENOTSUP;
		return NULL;
	}
	return calloc(1, sizeof(struct gs_unwinder));
}

static void close_file(struct cfi_file *f)
{
	if (f->eh)
		dwarf_cfi_end(f->eh);
	if (f->dwarf)
		dwarf_end(f->dwarf);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f->segs);
}

void gs_unwinder__free(struct gs_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nr_files; i++)
		close_file(&u->files[i]);
	free(u->files);
	free(u);
}

void gs_unwinder__set_symcache(struct gs_unwinder *u, struct gs_symcache *cache)
{
	u->symcache = cache;
}

void gs_unwinder__stats(const struct gs_unwinder *u, struct gs_unwind_stats *out)
{
	*out = u->stats;
}

static bool has_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;
		const char *n;

		if (!gelf_getshdr(scn, &shdr))
			continue;
		n = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (n && !strcmp(n, name) && shdr.sh_type != SHT_NOBITS)
			return true;
	}
	return false;
}

/* Takes fd (verified by gs_mapping__open()); st is its fstat. */
static int load_file(struct cfi_file *f, int fd, const struct stat *st)
{
	size_t nr_phdrs;

	/*
	 * Mapped, not read: libdw touches only the FDEs it is asked for. Unless its owner
	 * could truncate it under the mapping: then read through fd, kept open for that.
	 */
	f->elf = gs_elf_begin(fd);
	if (f->elf && !gs_is_trusted_file(st))
		f->fd = fd;
	else
		close(fd);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || elf_getphdrnum(f->elf, &nr_phdrs))
		goto out_bad;
	f->segs = calloc(nr_phdrs ? nr_phdrs : 1, sizeof(*f->segs));
	if (!f->segs)
		goto out_bad;
	for (size_t i = 0; i < nr_phdrs; i++) {
		GElf_Phdr ph;

		/* a segment past the end of the file maps no byte of it */
		if (gelf_getphdr(f->elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    gs_range_ok(ph.p_offset, ph.p_filesz, (uint64_t)st->st_size))
			f->segs[f->nr_segs++] = (struct load_seg){ .offset = ph.p_offset,
								   .vaddr = ph.p_vaddr,
								   .filesz = ph.p_filesz };
	}
	f->eh = dwarf_getcfi_elf(f->elf);
	/* .debug_frame: what code built with -fno-asynchronous-unwind-tables -g has instead */
	if (has_section(f->elf, ".debug_frame")) {
		f->dwarf = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
		if (f->dwarf)
			f->debug = dwarf_getcfi(f->dwarf);
	}
	return 0;

out_bad:
	if (f->elf)
		elf_end(f->elf);
	f->elf = NULL;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	return -ENOEXEC;
}

/* The CFI of the file m maps, opened once per file; NULL when it has none or is unreadable. */
static struct cfi_file *file_for(struct gs_unwinder *u, const struct gs_maps *maps,
				 const struct gs_mapping *m)
{
	struct cfi_file *f;
	struct stat st;
	int fd, err;

	for (size_t i = 0; i < u->nr_files; i++) {
		f = &u->files[i];
		if (f->dev == m->dev && f->inode == m->inode)
			return f->elf ? f : NULL;
	}
	/* only the file the snapshot names; not cached when it is gone or replaced */
	fd = gs_mapping__open(maps, m, &st);
	if (fd < 0) {
		gs_dbg("unwind tables of %s: %s", m->path, strerror(-fd));
		return NULL;
	}
	if (GS_ARRAY_RESERVE(u->files, u->nr_files, u->cap_files, 32)) {
		close(fd);
		return NULL;
	}
	f = &u->files[u->nr_files++];
	*f = (struct cfi_file){ .dev = m->dev, .inode = m->inode, .fd = -1 };
	err = load_file(f, fd, &st);
	if (err) {
		gs_dbg("unwind tables of %s: %s", m->path, strerror(-err));
		return NULL;
	}
	u->stats.files++;
	return f;
}

static bool file_offset_to_vaddr(const struct cfi_file *f, uint64_t off, uint64_t *vaddr)
{
	for (size_t i = 0; i < f->nr_segs; i++) {
		const struct load_seg *s = &f->segs[i];

		if (gs_in_range(off, s->offset, s->filesz)) {
			*vaddr = off - s->offset + s->vaddr;
			return true;
		}
	}
	return false;
}

static bool read_stack(const struct walk *w, uint64_t addr, uint64_t *out)
{
	if (addr < w->lo || addr > w->hi - sizeof(*out) || w->hi - w->lo < sizeof(*out))
		return false;
	memcpy(out, w->st->data + (addr - w->lo), sizeof(*out));
	return true;
}

static bool reg_get(const struct regs *r, unsigned int regno, uint64_t *out)
{
	if (regno >= NR_REGS || !(r->valid & (1u << regno)))
		return false;
	*out = r->v[regno];
	return true;
}

static void reg_set(struct regs *r, unsigned int regno, uint64_t v)
{
	r->v[regno] = v;
	r->valid |= 1u << regno;
}

struct expr_stack {
	uint64_t v[MAX_EXPR_STACK];
	size_t sp;
};

static bool push(struct expr_stack *s, uint64_t x)
{
	if (s->sp == MAX_EXPR_STACK)
		return false;
	s->v[s->sp++] = x;
	return true;
}

static bool pop(struct expr_stack *s, uint64_t *x)
{
	if (!s->sp)
		return false;
	*x = s->v[--s->sp];
	return true;
}

/* *res = a OP b for the binary operations (a pushed first); false for any other. */
static bool binary_op(uint8_t atom, uint64_t a, uint64_t b, uint64_t *res)
{
	switch (atom) {
	case DW_OP_plus:
		*res = a + b;
		break;
	case DW_OP_minus:
		*res = a - b;
		break;
	case DW_OP_mul:
		*res = a * b;
		break;
	case DW_OP_and:
		*res = a & b;
		break;
	case DW_OP_or:
		*res = a | b;
		break;
	case DW_OP_xor:
		*res = a ^ b;
		break;
	case DW_OP_shl:
		*res = b < 64 ? a << b : 0;
		break;
	case DW_OP_shr:
		*res = b < 64 ? a >> b : 0;
		break;
	case DW_OP_shra:
		*res = b < 64 ? (uint64_t)((int64_t)a >> b) : 0;
		break;
	case DW_OP_ge:
		*res = (int64_t)a >= (int64_t)b;
		break;
	case DW_OP_gt:
		*res = (int64_t)a > (int64_t)b;
		break;
	case DW_OP_le:
		*res = (int64_t)a <= (int64_t)b;
		break;
	case DW_OP_lt:
		*res = (int64_t)a < (int64_t)b;
		break;
	case DW_OP_eq:
		*res = a == b;
		break;
	case DW_OP_ne:
		*res = a != b;
		break;
	default:
		return false;
	}
	return true;
}

/* The operations that only work the stack (constants, arithmetic, a stack read). */
static bool stack_op(const struct walk *w, const Dwarf_Op *op, struct expr_stack *s)
{
	uint64_t a, b;

	switch (op->atom) {
	case DW_OP_const1u:
	case DW_OP_const1s:
	case DW_OP_const2u:
	case DW_OP_const2s:
	case DW_OP_const4u:
	case DW_OP_const4s:
	case DW_OP_const8u:
	case DW_OP_const8s:
	case DW_OP_constu:
	case DW_OP_consts:
		return push(s, op->number);
	case DW_OP_plus_uconst:
		return pop(s, &a) && push(s, a + op->number);
	case DW_OP_dup:
		return pop(s, &a) && push(s, a) && push(s, a);
	case DW_OP_drop:
		return pop(s, &a);
	case DW_OP_swap:
		return pop(s, &a) && pop(s, &b) && push(s, a) && push(s, b);
	case DW_OP_deref:
		return pop(s, &a) && read_stack(w, a, &b) && push(s, b);
	case DW_OP_neg:
		return pop(s, &a) && push(s, -a);
	case DW_OP_nop:
		return true;
	default:
		return pop(s, &b) && pop(s, &a) && binary_op(op->atom, a, b, &a) && push(s, a);
	}
}

/*
 * Evaluates a CFI DWARF expression: the operations compilers and assemblers emit for x86-64
 * CFA and register rules (PLT entries, stack realignment, signal frames). Unknown ones fail.
 * *is_value tells a DW_OP_stack_value or register result from a memory location.
 */
static bool eval_expr(const struct walk *w, const Dwarf_Op *ops, size_t nops, const struct regs *r,
		      const uint64_t *cfa, uint64_t *out, bool *is_value)
{
	struct expr_stack s = { .sp = 0 };
	uint64_t a;
	bool ok;

	*is_value = false;
	for (size_t i = 0; i < nops; i++) {
		const Dwarf_Op *op = &ops[i];
		uint8_t atom = op->atom;

		if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31) {
			ok = push(&s, atom - DW_OP_lit0);
		} else if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31) {
			ok = reg_get(r, atom - DW_OP_breg0, &a) &&
			     push(&s, a + (int64_t)op->number);
		} else if ((atom >= DW_OP_reg0 && atom <= DW_OP_reg31) || atom == DW_OP_regx) {
			/* a register location: only as the whole expression */
			*is_value = true;
			return nops == 1 &&
			       reg_get(r,
				       atom == DW_OP_regx ? (unsigned int)op->number
							  : (unsigned int)(atom - DW_OP_reg0),
				       out);
		} else if (atom == DW_OP_bregx) {
			ok = reg_get(r, (unsigned int)op->number, &a) &&
			     push(&s, a + (int64_t)op->number2);
		} else if (atom == DW_OP_call_frame_cfa) {
			ok = cfa && push(&s, *cfa);
		} else if (atom == DW_OP_stack_value) {
			ok = i == nops - 1;
			*is_value = true;
		} else {
			ok = stack_op(w, op, &s);
		}
		if (!ok)
			return false;
	}
	return pop(&s, out);
}

/* One step with CFI: the caller's registers from this frame's rules. */
static bool cfi_step(const struct walk *w, Dwarf_Frame *frame, const struct regs *cur,
		     struct regs *next)
{
	Dwarf_Op *ops, ops_mem[3];
	uint64_t cfa, v;
	size_t nops;
	bool is_value;

	if (dwarf_frame_cfa(frame, &ops, &nops) || !nops ||
	    !eval_expr(w, ops, nops, cur, NULL, &cfa, &is_value))
		return false;
	*next = (struct regs){ 0 };
	for (unsigned int regno = 0; regno < NR_REGS; regno++) {
		if (dwarf_frame_register(frame, (int)regno, ops_mem, &ops, &nops))
			continue;
		if (!nops) {
			/* ops NULL: same value; else undefined (call-clobbered, or the outermost RA) */
			if (!ops && reg_get(cur, regno, &v))
				reg_set(next, regno, v);
			continue;
		}
		if (!eval_expr(w, ops, nops, cur, &cfa, &v, &is_value))
			continue;
		if (!is_value && !read_stack(w, v, &v))
			continue;
		reg_set(next, regno, v);
	}
	/* the psABI: the caller's rsp is the CFA unless a rule says otherwise */
	if (!(next->valid & (1u << DW_RSP)))
		reg_set(next, DW_RSP, cfa);
	return reg_get(next, DW_RA, &v);
}

/* One step with frame pointers: [rbp] is the caller's rbp, [rbp+8] the return address. */
static bool fp_step(const struct walk *w, const struct regs *cur, struct regs *next)
{
	uint64_t bp, sp, ra, caller_bp;

	if (!reg_get(cur, DW_RBP, &bp) || !reg_get(cur, DW_RSP, &sp) || bp < sp ||
	    !read_stack(w, bp, &caller_bp) || !read_stack(w, bp + 8, &ra))
		return false;
	*next = (struct regs){ 0 };
	reg_set(next, DW_RBP, caller_bp);
	reg_set(next, DW_RSP, bp + 16);
	reg_set(next, DW_RA, ra);
	return true;
}

/*
 * CPython 3.12 and 3.13 copy one trampoline (Python/asm_trampoline.S) into anonymous memory
 * for each code object and name the copy "py::QUALNAME:FILE" in the perf map:
 *
 *	[endbr64]; sub $8,%rsp; call *%rcx; add $8,%rsp; ret
 *
 * No CFI covers the copies, and this one keeps no frame pointer: rbp still holds whatever
 * the caller had. At its return address (6 bytes in; 10 with endbr64) the caller's return
 * address is at sp+8 and the caller's sp is sp+16. A trampoline that does push %rbp; mov
 * %rsp,%rbp instead has rbp == sp there, and the frame-pointer step is the right one.
 */
static bool python_trampoline_step(struct gs_unwinder *u, const struct gs_maps *maps,
				   const struct walk *w, const struct regs *cur, struct regs *next)
{
	uint64_t pc = cur->v[DW_RA], sp, bp, ra, at;
	const struct gs_mapping *m;
	const char *name;

	if (!u->symcache || !maps || !reg_get(cur, DW_RSP, &sp) ||
	    (reg_get(cur, DW_RBP, &bp) && bp == sp))
		return false;
	/* not code of a file: anonymous, or mapped since a snapshot of a gone process */
	m = gs_maps__find(maps, pc - 1);
	if (m && m->path && m->exec)
		return false;
	name = gs_symcache__jit_symbol(u->symcache, maps->pid, pc - 1, &at);
	if (!name || strncmp(name, "py::", 4))
		return false;
	at += 1;
	if ((at != 6 && at != 10) || !read_stack(w, sp + 8, &ra))
		return false;
	*next = *cur;
	next->valid &= (1u << DW_RBP) | (1u << DW_RBX) | (0xfu << 12); /* callee-saved */
	reg_set(next, DW_RSP, sp + 16);
	reg_set(next, DW_RA, ra);
	return true;
}

/* The CFI frame state at pc in the process maps describes (malloc'd, caller frees), or NULL. */
static Dwarf_Frame *frame_at(struct gs_unwinder *u, const struct gs_maps *maps, uint64_t pc)
{
	const struct gs_mapping *m = maps ? gs_maps__find(maps, pc) : NULL;
	Dwarf_Frame *frame = NULL;
	struct cfi_file *f;
	uint64_t vaddr;

	/* no file, or a stale snapshot (code runs only from executable mappings): no CFI */
	if (!m || !m->path || !m->exec)
		return NULL;
	f = file_for(u, maps, m);
	if (!f || !file_offset_to_vaddr(f, pc - m->start + m->pgoff, &vaddr))
		return NULL;
	if (f->eh && dwarf_cfi_addrframe(f->eh, vaddr, &frame) == 0)
		return frame;
	if (f->debug && dwarf_cfi_addrframe(f->debug, vaddr, &frame) == 0)
		return frame;
	return NULL;
}

static int unwind(struct gs_unwinder *u, const struct gs_maps *maps, const struct gs_ustack *st,
		  uint64_t *ips, size_t max_ips)
{
	struct walk w = { .st = st };
	bool exact_pc = true;
	struct regs cur = { 0 }, next;
	size_t n = 0;

	if (st->size > GS_USTACK_BYTES)
		return -EINVAL;
	if (!max_ips)
		return 0;
	u->stats.stacks++;
	w.lo = st->regs[GS_USTACK_REG_SP];
	w.hi = w.lo + st->size;
	if (w.hi < w.lo)
		return -EINVAL;
	reg_set(&cur, DW_RA, st->regs[GS_USTACK_REG_IP]);
	reg_set(&cur, DW_RSP, st->regs[GS_USTACK_REG_SP]);
	reg_set(&cur, DW_RBP, st->regs[GS_USTACK_REG_BP]);
	ips[n++] = st->regs[GS_USTACK_REG_IP];
	while (n < max_ips) {
		uint64_t pc = cur.v[DW_RA], sp = cur.v[DW_RSP], next_sp;
		/*
		 * A return address may be one past the call's last byte, the end of the
		 * function when the callee does not return: look up the call instruction.
		 */
		Dwarf_Frame *frame = frame_at(u, maps, exact_pc ? pc : pc - 1);
		bool ok, signal = false;

		if (frame) {
			dwarf_frame_info(frame, NULL, NULL, &signal);
			ok = cfi_step(&w, frame, &cur, &next);
			free(frame);
			if (ok)
				u->stats.cfi_steps++;
		} else if (python_trampoline_step(u, maps, &w, &cur, &next)) {
			ok = true;
			u->stats.py_steps++;
		} else {
			ok = fp_step(&w, &cur, &next);
			if (ok)
				u->stats.fp_steps++;
		}
		if (!ok || !next.v[DW_RA] || !reg_get(&next, DW_RSP, &next_sp))
			break;
		/* the stack grows down: a caller's frame is above; anything else is a loop */
		if (next_sp <= sp && !signal)
			break;
		ips[n++] = next.v[DW_RA];
		exact_pc = signal; /* the interrupted pc of a signal frame is exact */
		cur = next;
	}
	return (int)n;
}

int gs_unwinder__unwind(struct gs_unwinder *u, pid_t pid, const struct gs_ustack *st, uint64_t *ips,
			size_t max_ips)
{
	struct gs_maps *maps;
	int n;

	if (pid <= 0)
		return -EINVAL;
	/* read now and dropped: a long-lived caller keeps its own snapshot (symcache) */
	maps = gs_maps__read(pid);
	if (maps)
		u->stats.maps_reads++;
	n = unwind(u, maps, st, ips, max_ips);
	gs_maps__free(maps);
	return n;
}

int gs_unwinder__unwind_maps(struct gs_unwinder *u, const struct gs_maps *maps,
			     const struct gs_ustack *st, uint64_t *ips, size_t max_ips)
{
	return unwind(u, maps, st, ips, max_ips);
}
