// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* fuzz_elf.c: libFuzzer harness for the ELF symbol reader (user/elf_file.c). */
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tests/fuzz/fuzz.h"
#include "user/debuginfo.h"
#include "user/elf_file.h"

static int memfd = -1;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	memfd = memfd_create("fuzz_elf", MFD_CLOEXEC);
	if (memfd < 0) {
		perror("fuzz_elf: memfd_create");
		abort();
	}
	/*
	 * Writable by others, as a file an unprivileged user maps: read through the descriptor
	 * (gs_elf_begin() maps only root's files), so every byte libelf hands over is on the
	 * heap, where ASan sees reads past its end.
	 */
	if (fchmod(memfd, 0666)) {
		perror("fuzz_elf: fchmod");
		abort();
	}
	/* the input's own .gnu_debugdata and .gnu_debuglink, never this machine's debug files */
	gs_debuginfo__set_root("/nonexistent/gs-fuzz");
	return 0;
}

struct walk {
	struct gs_elf *elf;
	int n;
};

/* Every function, as the attach paths use them: by name, address and file offset. */
static int on_function(const char *name, uint64_t vaddr, void *arg)
{
	struct walk *w = arg;
	uint64_t off, back, sym_off;
	const char *sym;

	GS_FUZZ_CHECK(name && *name);
	if (w->n++ >= 64)
		return 1;
	GS_FUZZ_CHECK(gs_elf__find_function(w->elf, name) != 0);
	if (!gs_elf__vaddr_to_offset(w->elf, vaddr, &off))
		GS_FUZZ_CHECK(!gs_elf__offset_to_vaddr(w->elf, off, &back));
	for (uint64_t d = 0; d < 2; d++) {
		sym = gs_elf__symbolize(w->elf, vaddr + d, &sym_off);
		if (sym) {
			GS_FUZZ_CHECK(sym_off <= vaddr + d);
			GS_FUZZ_CHECK(strlen(sym) < SIZE_MAX);
		}
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct gs_elf_kernel_handle *handles;
	struct walk w = { 0 };
	char hex[2 * 64 + 1];
	const char *interp;
	size_t n;
	uint64_t v;

	if (ftruncate(memfd, 0) || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	w.elf = gs_elf__open_fd(memfd);
	if (!w.elf)
		return 0;
	/* a stripped input: its MiniDebugInfo (xz, then ELF) and debuglink are parsed too */
	GS_FUZZ_CHECK(gs_debuginfo__load(w.elf, memfd, "/nonexistent/gs-fuzz/input") <= 1);
	/* as a debug file fetched from debuginfod: its build id read, then merged if it matches */
	if (!gs_debuginfo__build_id(memfd, hex)) {
		GS_FUZZ_CHECK(strlen(hex) <= 2 * 64 && strlen(hex) % 2 == 0);
		GS_FUZZ_CHECK(gs_debuginfo__merge(w.elf, memfd, hex) <= 1);
	}
	gs_elf__for_each_function(w.elf, on_function, &w);
	GS_FUZZ_CHECK((size_t)w.n <= gs_elf__nr_symbols(w.elf));
	interp = gs_elf__interp(w.elf);
	if (interp)
		GS_FUZZ_CHECK(strlen(interp) < size);
	n = gs_elf__kernel_handles(w.elf, &handles);
	for (size_t i = 0; i < n; i++)
		GS_FUZZ_CHECK(handles[i].kernel && handles[i].kernel[0] == '_');
	/* addresses no symbol names: the ends of the address space and ones from the input */
	gs_elf__symbolize(w.elf, 0, &v);
	gs_elf__symbolize(w.elf, UINT64_MAX, &v);
	gs_elf__vaddr_to_offset(w.elf, UINT64_MAX, &v);
	gs_elf__offset_to_vaddr(w.elf, UINT64_MAX, &v);
	for (size_t off = 24; off < size && off < 24 + 64; off += 8) {
		uint64_t a = gs_fuzz_u64(data, size, off);

		gs_elf__symbolize(w.elf, a, &v);
		if (!gs_elf__vaddr_to_offset(w.elf, a, &v))
			gs_elf__offset_to_vaddr(w.elf, v, &v);
	}
	gs_elf__find_function(w.elf, "main");
	gs_elf__free(w.elf);
	return 0;
}
