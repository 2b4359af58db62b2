// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* dynsym.c: exported function lookup through .dynsym, without loading every symbol. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include "profilers/torch/dynsym.h"
#include "user/elf_file.h"

/* the file offset of link-time address vaddr, through the PT_LOAD that holds it; 0 if none */
static uint64_t offset_of(Elf *e, uint64_t vaddr)
{
	size_t nr = 0;

	if (elf_getphdrnum(e, &nr))
		return 0;
	for (size_t i = 0; i < nr; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr - ph.p_vaddr < ph.p_filesz)
			return vaddr - ph.p_vaddr + ph.p_offset;
	}
	return 0;
}

static void match_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *const *names,
			  size_t n, uint64_t *vaddrs)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t nr;

	if (!data || !sh->sh_entsize)
		return;
	/* the section header's count, bounded by the bytes libelf actually read */
	nr = sh->sh_size / sh->sh_entsize;
	if (nr > data->d_size / sizeof(Elf64_Sym))
		nr = data->d_size / sizeof(Elf64_Sym);
	for (size_t i = 0; i < nr; i++) {
		GElf_Sym sym;
		const char *name;

		if (!gelf_getsym(data, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		for (size_t k = 0; name && k < n; k++)
			if (!vaddrs[k] && !strcmp(name, names[k]))
				vaddrs[k] = sym.st_value;
	}
}

int gs_dynsym_offsets(int fd, const char *const *names, size_t n, uint64_t *offsets)
{
	uint64_t vaddrs[8] = { 0 };
	Elf_Scn *scn = NULL;
	Elf *e;

	if (n > sizeof(vaddrs) / sizeof(vaddrs[0]))
		return -EINVAL;
	e = gs_elf_begin(fd);
	if (!e)
		return -errno;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return -ENOEXEC;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM)
			match_symbols(e, scn, &sh, names, n, vaddrs);
	}
	for (size_t k = 0; k < n; k++)
		offsets[k] = vaddrs[k] ? offset_of(e, vaddrs[k]) : 0;
	elf_end(e);
	return 0;
}
