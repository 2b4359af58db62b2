// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_elf_file.c: symbols, segments and interpreter of the fixture ELF files; demangling. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <malloc.h>
#include <stdint.h>
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

GS_TEST_MAIN(find_and_symbolize_functions, segment_conversions, interp, shared_library, open_errors,
	     open_failure_frees, demangle)
