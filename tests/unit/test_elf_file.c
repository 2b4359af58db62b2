// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_elf_file.c: symbols, segments and interpreter of the fixture ELF files; demangling. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <malloc.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/demangle.h"
#include "user/elf_file.h"

#ifndef GS_FIXTURES
#define GS_FIXTURES ".output/fixtures"
#endif

#define LEAKY  GS_FIXTURES "/bin/gs_leaky"
#define CUDART GS_FIXTURES "/lib/libcudart.so.13"

GS_TEST(find_and_symbolize_functions)
{
	static const char *const names[] = { "leak_weights", "leak_activations", "churn_buffers",
					     "main" };
	struct gs_elf *elf = gs_elf__open(LEAKY);
	uint64_t addr, off = ~0ULL;

	if (!GS_EXPECT(elf))
		return;
	GS_EXPECT(gs_elf__nr_symbols(elf) > 4);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		addr = gs_elf__find_function(elf, names[i]);
		if (!GS_EXPECT(addr != 0))
			continue;
		GS_EXPECT_STR_EQ(gs_elf__symbolize(elf, addr, &off), names[i]);
		GS_EXPECT_EQ(off, 0);
		GS_EXPECT_STR_EQ(gs_elf__symbolize(elf, addr + 1, &off), names[i]);
		GS_EXPECT_EQ(off, 1);
	}
	/* the ELF header, before any function */
	GS_EXPECT_STR_EQ(gs_elf__symbolize(elf, 0x10, &off), NULL);
	GS_EXPECT_STR_EQ(gs_elf__symbolize(elf, 0, &off), NULL);
	GS_EXPECT_EQ(gs_elf__find_function(elf, "no_such_function"), 0);
	gs_elf__free(elf);
}

/* Compares the conversions with the PT_LOAD headers as libelf reads them. */
GS_TEST(segment_conversions)
{
	struct gs_elf *elf = gs_elf__open(LEAKY);
	uint64_t addr, off, back;
	size_t phnum, nr_load = 0;
	int fd = -1;
	Elf *e = NULL;

	if (!GS_EXPECT(elf))
		return;
	addr = gs_elf__find_function(elf, "leak_weights");
	if (GS_EXPECT(addr) && GS_EXPECT_EQ(gs_elf__vaddr_to_offset(elf, addr, &off), 0) &&
	    GS_EXPECT_EQ(gs_elf__offset_to_vaddr(elf, off, &back), 0))
		GS_EXPECT_EQ(back, addr);

	GS_EXPECT(elf_version(EV_CURRENT) != EV_NONE);
	fd = open(LEAKY, O_RDONLY | O_CLOEXEC);
	if (!GS_EXPECT(fd >= 0))
		goto out;
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!GS_EXPECT(e) || !GS_EXPECT_EQ(elf_getphdrnum(e, &phnum), 0))
		goto out;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		uint64_t mid;

		if (!GS_EXPECT(gelf_getphdr(e, (int)i, &ph)) || ph.p_type != PT_LOAD ||
		    !ph.p_filesz)
			continue;
		nr_load++;
		mid = ph.p_filesz / 2;
		if (GS_EXPECT_EQ(gs_elf__vaddr_to_offset(elf, ph.p_vaddr + mid, &off), 0))
			GS_EXPECT_EQ(off, ph.p_offset + mid);
		if (GS_EXPECT_EQ(gs_elf__offset_to_vaddr(elf, ph.p_offset + mid, &back), 0))
			GS_EXPECT_EQ(back, ph.p_vaddr + mid);
		/* .bss has an address but no bytes in the file */
		if (ph.p_memsz > ph.p_filesz)
			GS_EXPECT(gs_elf__vaddr_to_offset(elf, ph.p_vaddr + ph.p_filesz, &off) !=
				  0);
	}
	GS_EXPECT(nr_load >= 2);
	GS_EXPECT(gs_elf__offset_to_vaddr(elf, 1ULL << 40, &back) != 0);
	GS_EXPECT(gs_elf__vaddr_to_offset(elf, 1ULL << 40, &off) != 0);
out:
	if (e)
		elf_end(e);
	if (fd >= 0)
		close(fd);
	gs_elf__free(elf);
}

GS_TEST(interp)
{
	struct gs_elf *elf = gs_elf__open(LEAKY);

	if (GS_EXPECT(elf))
		GS_EXPECT_STR_EQ(gs_elf__interp(elf), "/lib64/ld-linux-x86-64.so.2");
	gs_elf__free(elf);

	/* a shared library has none */
	elf = gs_elf__open(CUDART);
	if (GS_EXPECT(elf))
		GS_EXPECT_STR_EQ(gs_elf__interp(elf), NULL);
	gs_elf__free(elf);
}

GS_TEST(shared_library)
{
	struct gs_elf *elf = gs_elf__open(CUDART);
	uint64_t addr, off = ~0ULL;

	if (!GS_EXPECT(elf))
		return;
	/* .dynsym names are unversioned: cudaMalloc@@libcudart.so.13 is "cudaMalloc" */
	addr = gs_elf__find_function(elf, "cudaMalloc");
	if (GS_EXPECT(addr != 0)) {
		GS_EXPECT_STR_EQ(gs_elf__symbolize(elf, addr, &off), "cudaMalloc");
		GS_EXPECT_EQ(off, 0);
	}
	GS_EXPECT(gs_elf__find_function(elf, "cudaFree") != 0);
	GS_EXPECT(gs_elf__find_function(elf, "cudaFree") != addr);
	GS_EXPECT_EQ(gs_elf__find_function(elf, "cudaNoSuchFunction"), 0);
	GS_EXPECT_EQ(gs_elf__find_function(elf, "cudaMalloc@@libcudart.so.13"), 0);
	GS_EXPECT_EQ(gs_elf__find_function(elf, ""), 0);
	gs_elf__free(elf);
}

GS_TEST(open_errors)
{
	char path[] = "/tmp/gs_unit_elf_XXXXXX";
	static const char text[] = "not an ELF file\n";
	int fd = mkstemp(path);

	if (!GS_EXPECT(fd >= 0))
		return;
	GS_EXPECT_EQ(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	errno = 0;
	GS_EXPECT(gs_elf__open(path) == NULL);
	GS_EXPECT_EQ(errno, ENOEXEC);
	unlink(path);

	errno = 0;
	GS_EXPECT(gs_elf__open(path) == NULL);
	GS_EXPECT_EQ(errno, ENOENT);

	/* an empty file */
	strcpy(path, "/tmp/gs_unit_elf_XXXXXX");
	fd = mkstemp(path);
	if (GS_EXPECT(fd >= 0)) {
		close(fd);
		errno = 0;
		GS_EXPECT(gs_elf__open(path) == NULL);
		GS_EXPECT(errno != 0);
		unlink(path);
	}
	gs_elf__free(NULL);
}

/*
 * Heap bytes in use after n opens and frees of path, less those before. A warm-up first
 * fills malloc's per-thread caches, whose free chunks mallinfo2() counts as in use.
 */
static long long heap_growth(const char *path, int n)
{
	size_t before, after;

	for (int i = 0; i < 100; i++)
		gs_elf__free(gs_elf__open(path));
	before = mallinfo2().uordblks;
	for (int i = 0; i < n; i++)
		gs_elf__free(gs_elf__open(path));
	after = mallinfo2().uordblks;
	return (long long)after - (long long)before;
}

/* A failed open releases what it took, libelf's descriptor (elf_end()) too. */
GS_TEST(open_failure_frees)
{
	char path[] = "/tmp/gs_unit_elf_XXXXXX";
	static const char text[] = "not an ELF file\n";
	int fd = mkstemp(path);
	long long grown;

	if (!GS_EXPECT(fd >= 0))
		return;
	GS_EXPECT_EQ(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	/* the measure itself: opening and freeing a real ELF leaves nothing behind */
	grown = heap_growth(LEAKY, 1000);
	if (!GS_EXPECT(grown < 16 * 1000))
		printf("  %lld bytes more in use after 1000 opens of %s\n", grown, LEAKY);
	grown = heap_growth(path, 1000);
	if (!GS_EXPECT(grown < 16 * 1000))
		printf("  %lld bytes more in use after 1000 failed opens\n", grown);
	unlink(path);
}

GS_TEST(demangle)
{
	char *s;

	s = gs_demangle("_ZN3c109alloc_cpuEm");
	GS_EXPECT_STR_EQ(s, "c10::alloc_cpu(unsigned long)");
	free(s);
	s = gs_demangle("_Z5scaleIfEvPT_S0_i");
	GS_EXPECT_STR_EQ(s, "void scale<float>(float*, float, int)");
	free(s);
	GS_EXPECT_STR_EQ(gs_demangle("main"), NULL);
	GS_EXPECT_STR_EQ(gs_demangle("_Zgarbage"), NULL);
	GS_EXPECT_STR_EQ(gs_demangle(""), NULL);
	GS_EXPECT_STR_EQ(gs_demangle("_Z"), NULL);
}

/* A memfd holding a copy of path; -1 on failure. */
static int copy_to_memfd(const char *path, size_t *len)
{
	char buf[65536];
	int in = open(path, O_RDONLY | O_CLOEXEC), out = memfd_create("gs_unit_elf", MFD_CLOEXEC);
	ssize_t n;

	*len = 0;
	if (in < 0 || out < 0)
		goto out_fail;
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		if (write(out, buf, (size_t)n) != n)
			goto out_fail;
		*len += (size_t)n;
	}
	close(in);
	return n < 0 ? (close(out), -1) : out;

out_fail:
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
	return -1;
}

/* Rewrites the first program header of type type in the ELF at fd; false if none. */
static bool patch_phdr(int fd, uint32_t type, uint32_t new_type, uint64_t offset, uint64_t filesz)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;

	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh))
		return false;
	for (unsigned int i = 0; i < eh.e_phnum; i++) {
		off_t at = (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize);

		if (pread(fd, &ph, sizeof(ph), at) != sizeof(ph))
			return false;
		if (ph.p_type != type)
			continue;
		ph.p_type = new_type;
		ph.p_offset = offset;
		ph.p_filesz = filesz;
		return pwrite(fd, &ph, sizeof(ph), at) == sizeof(ph);
	}
	return false;
}

/*
 * PT_INTERP where offset + size wraps past 2^64 to a small number: the old check
 * `p_offset + p_filesz <= len` passed and strndup() read from raw + 2^64 - 16 (SIGSEGV).
 * Read from a descriptor the interpreter is simply absent; the symbols are all there.
 */
GS_TEST(crafted_interp_bounds)
{
	static const uint64_t offsets[] = { ~0ULL - 15, ~0ULL, 1ULL << 62, 0 };
	static const uint64_t sizes[] = { 32, 2, 1ULL << 62, ~0ULL };
	uint64_t addr, off;
	size_t len;

	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		int fd = copy_to_memfd(LEAKY, &len);
		struct gs_elf *elf;

		if (!GS_EXPECT(fd >= 0))
			return;
		GS_EXPECT(patch_phdr(fd, PT_INTERP, PT_INTERP, offsets[i], sizes[i]));
		elf = gs_elf__open_fd(fd);
		if (GS_EXPECT(elf)) {
			GS_EXPECT_STR_EQ(gs_elf__interp(elf), NULL);
			addr = gs_elf__find_function(elf, "leak_weights");
			GS_EXPECT(addr != 0);
			GS_EXPECT_EQ(gs_elf__vaddr_to_offset(elf, addr, &off), 0);
		}
		gs_elf__free(elf);
		/* the descriptor is the caller's: still open, still readable */
		GS_EXPECT_EQ(pread(fd, &off, sizeof(off), 0), (ssize_t)sizeof(off));
		close(fd);
	}
}

/* A load segment reaching past the end of the file maps nothing of it: no conversion. */
GS_TEST(crafted_segment_bounds)
{
	uint64_t addr, off, vaddr;
	struct gs_elf *elf;
	size_t len;
	int fd = copy_to_memfd(CUDART, &len);

	if (!GS_EXPECT(fd >= 0))
		return;
	elf = gs_elf__open_fd(fd);
	addr = elf ? gs_elf__find_function(elf, "cudaMalloc") : 0;
	GS_EXPECT(addr != 0);
	GS_EXPECT_EQ(gs_elf__vaddr_to_offset(elf, addr, &off), 0);
	gs_elf__free(elf);
	/* every PT_LOAD now claims 2^64 - 4096 bytes from offset 4096 */
	while (patch_phdr(fd, PT_LOAD, PT_LOOS + 0x1234, 4096, ~0ULL - 4095))
		;
	/* ...as PT_LOAD again (patched under another type so the loop ends) */
	while (patch_phdr(fd, PT_LOOS + 0x1234, PT_LOAD, 4096, ~0ULL - 4095))
		;
	elf = gs_elf__open_fd(fd);
	if (GS_EXPECT(elf)) {
		GS_EXPECT_EQ(gs_elf__vaddr_to_offset(elf, addr, &off), -ENOENT);
		GS_EXPECT_EQ(gs_elf__offset_to_vaddr(elf, ~0ULL - 1, &vaddr), -ENOENT);
		GS_EXPECT_EQ(gs_elf__offset_to_vaddr(elf, 8192, &vaddr), -ENOENT);
	}
	gs_elf__free(elf);
	close(fd);
}

/* Writes an ELF whose .symtab holds one 8-byte object per name; returns a memfd or -1. */
static int elf_with_objects(const char *const *names, size_t nr)
{
	static Elf64_Sym syms[16];
	static char strtab[4096], shstrtab[] = "\0.strtab\0.symtab\0.data\0.shstrtab";
	static uint64_t data[16];
	int fd = memfd_create("gs_unit_elf", MFD_CLOEXEC);
	size_t at = 1;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	Elf_Scn *scn;
	Elf_Data *d;
	Elf *e;

	if (fd < 0 || nr >= 16 || elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	memset(syms, 0, sizeof(syms));
	for (size_t i = 0; i < nr; i++) {
		size_t n = strlen(names[i]) + 1;

		if (at + n > sizeof(strtab))
			return -1;
		memcpy(strtab + at, names[i], n);
		syms[i + 1] = (Elf64_Sym){ .st_name = (uint32_t)at,
					   .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_OBJECT),
					   .st_shndx = 3,
					   .st_value = 0x4000 + 8 * i,
					   .st_size = 8 };
		at += n;
	}
	e = elf_begin(fd, ELF_C_WRITE, NULL);
	eh = e ? elf64_newehdr(e) : NULL;
	if (!eh)
		return -1;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_shstrndx = 4;
	/* 1 .strtab, 2 .symtab, 3 .data, 4 .shstrtab */
	struct {
		uint32_t type, name, link;
		void *buf;
		size_t size, entsize;
	} secs[] = {
		{ SHT_STRTAB, 1, 0, strtab, at, 0 },
		{ SHT_SYMTAB, 9, 1, syms, (nr + 1) * sizeof(Elf64_Sym), sizeof(Elf64_Sym) },
		{ SHT_PROGBITS, 17, 0, data, sizeof(data), 0 },
		{ SHT_STRTAB, 23, 0, shstrtab, sizeof(shstrtab), 0 },
	};
	for (size_t i = 0; i < 4; i++) {
		scn = elf_newscn(e);
		d = scn ? elf_newdata(scn) : NULL;
		sh = scn ? elf64_getshdr(scn) : NULL;
		if (!d || !sh)
			goto out_fail;
		d->d_buf = secs[i].buf;
		d->d_size = secs[i].size;
		d->d_type = secs[i].type == SHT_SYMTAB ? ELF_T_SYM : ELF_T_BYTE;
		d->d_align = 8;
		d->d_version = EV_CURRENT;
		sh->sh_type = secs[i].type;
		sh->sh_name = secs[i].name;
		sh->sh_link = secs[i].link;
		sh->sh_entsize = secs[i].entsize;
		sh->sh_info = secs[i].type == SHT_SYMTAB ? 1 : 0;
		sh->sh_flags = secs[i].type == SHT_PROGBITS ? SHF_ALLOC | SHF_WRITE : 0;
	}
	if (elf_update(e, ELF_C_WRITE) < 0)
		goto out_fail;
	elf_end(e);
	return fd;

out_fail:
	elf_end(e);
	close(fd);
	return -1;
}

/*
 * CUDA 13 handle statics whose length prefix is huge or wraps: (end - name) + length used
 * to wrap in the bounds check. Only the well-formed one is taken.
 */
GS_TEST(crafted_handle_names)
{
	static const char *const names[] = {
		"_ZZ99999999999999999999__device_stub__Z1kvE8__handle",
		"_ZZ18446744073709551615__device_stub__Z1kvE8__handle",
		"_ZZ18446744073709551614__device_stub__Z1kvE8__handle",
		"_ZZ18446744073709551600__device_stub__Z1kvE8__handle",
		"_ZZ-1__device_stub__Z1kvE8__handle",
		"_ZZ 19__device_stub__Z1kvE8__handle",
		"_ZZ400__device_stub__Z1kvE8__handle",
		"_ZZ15__device_stub__E8__handle",
		"_ZZ19__device_stub__Z1kvvE8__handle",
	};
	const struct gs_elf_kernel_handle *h;
	struct gs_elf *elf;
	int fd = elf_with_objects(names, sizeof(names) / sizeof(names[0]));

	if (!GS_EXPECT(fd >= 0))
		return;
	elf = gs_elf__open_fd(fd);
	if (GS_EXPECT(elf) && GS_EXPECT_EQ(gs_elf__kernel_handles(elf, &h), 1)) {
		GS_EXPECT_STR_EQ(h[0].kernel, "_Z1kv");
		GS_EXPECT_EQ(h[0].vaddr, 0x4000 + 8 * 8);
	}
	gs_elf__free(elf);
	close(fd);
}

GS_TEST_MAIN(find_and_symbolize_functions, segment_conversions, interp, shared_library, open_errors,
	     open_failure_frees, demangle, crafted_interp_bounds, crafted_segment_bounds,
	     crafted_handle_names)
