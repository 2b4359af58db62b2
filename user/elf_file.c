// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* elf_file.c: load function symbols (.symtab + .dynsym) and PT_LOAD segments with libelf. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/bounds.h"
#include "user/array.h"
#include "user/demangle.h"
#include "user/elf_file.h"
#include "user/proc_maps.h"
#include "user/sym_search.h"

struct elf_sym {
	uint64_t addr;
	uint64_t size;
	char *name;	 /* mangled, as in the string table */
	char *demangled; /* filled on first symbolization; == name for C symbols */
	int binding;
};

struct elf_segment {
	uint64_t vaddr, memsz, offset, filesz;
};

struct gs_elf {
	struct elf_sym *syms; /* sorted by addr, preferred name first at each address */
	size_t nr_syms, cap_syms;
	bool has_symtab; /* a .symtab with functions: no separate debug info needed */
	struct elf_segment *segs;
	size_t nr_segs;
	char *interp;
	struct gs_elf_kernel_handle *handles;
	size_t nr_handles;
};

#define STUB_PREFIX   "__device_stub__"
#define HANDLE_SUFFIX "E8__handle"

/*
 * _ZZ27__device_stub__Z7add_onePfiPfiE8__handle: after "_ZZ", the length-prefixed stub name
 * "__device_stub__Z7add_onePfi" (the kernel's mangled name less its leading '_'), its
 * parameter types, then the static's name. Returns the kernel's mangled name, owned.
 */
static char *kernel_of_handle_static(const char *name)
{
	size_t len = strlen(name), stub_len;
	char *end, *kernel;

	if (strncmp(name, "_ZZ", 3) || len < strlen(HANDLE_SUFFIX) ||
	    strcmp(name + len - strlen(HANDLE_SUFFIX), HANDLE_SUFFIX))
		return NULL;
	if (name[3] < '0' || name[3] > '9') /* strtoul would take a sign or spaces */
		return NULL;
	errno = 0;
	stub_len = strtoul(name + 3, &end, 10);
	/* the length is the file's word: (end - name) + stub_len can wrap, compare the rest */
	if (errno || stub_len <= strlen(STUB_PREFIX) || stub_len > len - (size_t)(end - name) ||
	    strncmp(end, STUB_PREFIX, strlen(STUB_PREFIX)))
		return NULL;
	kernel = malloc(stub_len - strlen(STUB_PREFIX) + 2);
	if (!kernel)
		return NULL;
	kernel[0] = '_';
	memcpy(kernel + 1, end + strlen(STUB_PREFIX), stub_len - strlen(STUB_PREFIX));
	kernel[stub_len - strlen(STUB_PREFIX) + 1] = '\0';
	return kernel;
}

static int add_kernel_handle(struct gs_elf *elf, uint64_t vaddr, char *kernel)
{
	struct gs_elf_kernel_handle *grown =
		realloc(elf->handles, (elf->nr_handles + 1) * sizeof(*grown));

	if (!grown) {
		free(kernel);
		return -ENOMEM;
	}
	elf->handles = grown;
	elf->handles[elf->nr_handles++] = (struct gs_elf_kernel_handle){ vaddr, kernel };
	return 0;
}

static int binding_rank(int binding)
{
	return binding == STB_GLOBAL ? 0 : binding == STB_WEAK ? 1 : 2;
}

static int cmp_sym(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	/* at one address, prefer the exported name, then the larger symbol */
	if (binding_rank(x->binding) != binding_rank(y->binding))
		return binding_rank(x->binding) - binding_rank(y->binding);
	return x->size > y->size ? -1 : x->size < y->size;
}

static int add_symbols(struct gs_elf *elf, Elf *e, Elf_Scn *scn, GElf_Shdr *shdr, size_t *cap)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t sym_size = gelf_fsize(e, ELF_T_SYM, 1, EV_CURRENT);
	size_t n;

	if (!data || !sym_size)
		return 0;
	/* what the data holds, not sh_size/sh_entsize: a huge sh_size would loop for ever */
	n = data->d_size / sym_size;
	if (n > INT_MAX) /* gelf_getsym takes an int */
		n = INT_MAX;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		int type;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		if (type == STT_OBJECT && sym.st_size == sizeof(uint64_t)) {
			char *kernel;

			name = elf_strptr(e, shdr->sh_link, sym.st_name);
			kernel = name ? kernel_of_handle_static(name) : NULL;
			if (kernel && add_kernel_handle(elf, sym.st_value, kernel))
				return -ENOMEM;
			continue;
		}
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(e, shdr->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		if (GS_ARRAY_RESERVE(elf->syms, elf->nr_syms, *cap, 1024))
			return -ENOMEM;
		elf->syms[elf->nr_syms] = (struct elf_sym){
			.addr = sym.st_value,
			.size = sym.st_size,
			.name = strdup(name),
			.binding = GELF_ST_BIND(sym.st_info),
		};
		if (!elf->syms[elf->nr_syms].name)
			return -ENOMEM;
		elf->nr_syms++;
	}
	return 0;
}

/* PT_INTERP, read with pread: elf_rawfile() would read all of an unmapped file. */
static char *read_interp(int fd, uint64_t file_size, const GElf_Phdr *ph)
{
	char *interp;
	ssize_t n;

	if (ph->p_filesz < 2 || ph->p_filesz > PATH_MAX ||
	    !gs_range_ok(ph->p_offset, ph->p_filesz, file_size))
		return NULL;
	interp = calloc(1, ph->p_filesz);
	if (!interp)
		return NULL;
	n = pread(fd, interp, ph->p_filesz - 1, (off_t)ph->p_offset);
	if (n != (ssize_t)(ph->p_filesz - 1)) {
		free(interp);
		return NULL;
	}
	return interp;
}

static int read_segments(struct gs_elf *elf, Elf *e, int fd, uint64_t file_size)
{
	size_t phnum;

	if (elf_getphdrnum(e, &phnum))
		return -EINVAL;
	elf->segs = calloc(phnum ? phnum : 1, sizeof(*elf->segs));
	if (!elf->segs)
		return -ENOMEM;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(e, (int)i, &ph))
			continue;
		if (ph.p_type == PT_LOAD) {
			/* a segment past the end of the file maps no byte of it */
			if (!gs_range_ok(ph.p_offset, ph.p_filesz, file_size))
				continue;
			elf->segs[elf->nr_segs++] = (struct elf_segment){
				.vaddr = ph.p_vaddr,
				.memsz = ph.p_memsz,
				.offset = ph.p_offset,
				.filesz = ph.p_filesz,
			};
		} else if (ph.p_type == PT_INTERP && !elf->interp) {
			elf->interp = read_interp(fd, file_size, &ph);
		}
	}
	return 0;
}

struct Elf *gs_elf_begin(int fd)
{
	struct stat st;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE || fstat(fd, &st)) {
		errno = errno ?: EINVAL;
		return NULL;
	}
	/*
	 * A mapping of a file its owner can truncate raises SIGBUS on the first touch past the
	 * new end: files that are not root's are read, not mapped (libelf then preads through
	 * fd, which must stay open as long as the Elf).
	 */
	e = elf_begin(fd, gs_is_trusted_file(&st) ? ELF_C_READ_MMAP : ELF_C_READ, NULL);
	if (!e)
		errno = ENOEXEC;
	return e;
}

struct gs_elf *gs_elf__open_fd(int fd)
{
	struct gs_elf *elf = NULL;
	Elf_Scn *scn = NULL;
	struct stat st;
	int err = 0;
	Elf *e;

	if (fstat(fd, &st))
		return NULL;
	if (!S_ISREG(st.st_mode)) {
		errno = ENOEXEC;
		return NULL;
	}
	e = gs_elf_begin(fd);
	if (!e)
		return NULL;
	if (elf_kind(e) != ELF_K_ELF) {
		err = -ENOEXEC;
		goto out_end;
	}
	elf = calloc(1, sizeof(*elf));
	if (!elf) {
		err = -ENOMEM;
		goto out_end;
	}
	err = read_segments(elf, e, fd, (uint64_t)st.st_size);
	while (!err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr shdr;

		size_t before = elf->nr_syms;

		if (!gelf_getshdr(scn, &shdr) ||
		    (shdr.sh_type != SHT_SYMTAB && shdr.sh_type != SHT_DYNSYM))
			continue;
		err = add_symbols(elf, e, scn, &shdr, &elf->cap_syms);
		if (shdr.sh_type == SHT_SYMTAB && elf->nr_syms > before)
			elf->has_symtab = true;
	}
	if (!err && elf->nr_syms) /* qsort(NULL, 0, ...) is undefined */
		qsort(elf->syms, elf->nr_syms, sizeof(*elf->syms), cmp_sym);
out_end:
	elf_end(e);
	if (err) {
		gs_elf__free(elf);
		errno = -err;
		return NULL;
	}
	return elf;
}

bool gs_elf__has_symtab(const struct gs_elf *elf)
{
	return elf->has_symtab;
}

int gs_elf__merge_symtab(struct gs_elf *elf, struct Elf *e)
{
	size_t before = elf->nr_syms;
	Elf_Scn *scn = NULL;
	int err = 0;

	while (!err && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr shdr;

		if (gelf_getshdr(scn, &shdr) && shdr.sh_type == SHT_SYMTAB)
			err = add_symbols(elf, e, scn, &shdr, &elf->cap_syms);
	}
	if (elf->nr_syms > before) {
		qsort(elf->syms, elf->nr_syms, sizeof(*elf->syms), cmp_sym);
		elf->has_symtab = true;
	}
	return err ?: elf->nr_syms > before;
}

struct gs_elf *gs_elf__open(const char *path)
{
	struct gs_elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return NULL;
	elf = gs_elf__open_fd(fd);
	err = errno;
	close(fd);
	errno = err;
	return elf;
}

void gs_elf__free(struct gs_elf *elf)
{
	if (!elf)
		return;
	for (size_t i = 0; i < elf->nr_syms; i++) {
		if (elf->syms[i].demangled != elf->syms[i].name)
			free(elf->syms[i].demangled);
		free(elf->syms[i].name);
	}
	for (size_t i = 0; i < elf->nr_handles; i++)
		free(elf->handles[i].kernel);
	free(elf->handles);
	free(elf->syms);
	free(elf->segs);
	free(elf->interp);
	free(elf);
}

uint64_t gs_elf__find_function(const struct gs_elf *elf, const char *name)
{
	for (size_t i = 0; i < elf->nr_syms; i++)
		if (!strcmp(elf->syms[i].name, name))
			return elf->syms[i].addr;
	return 0;
}

int gs_elf__vaddr_to_offset(const struct gs_elf *elf, uint64_t vaddr, uint64_t *offset)
{
	for (size_t i = 0; i < elf->nr_segs; i++) {
		const struct elf_segment *s = &elf->segs[i];

		if (gs_in_range(vaddr, s->vaddr, s->filesz)) {
			*offset = vaddr - s->vaddr + s->offset;
			return 0;
		}
	}
	return -ENOENT;
}

int gs_elf__offset_to_vaddr(const struct gs_elf *elf, uint64_t offset, uint64_t *vaddr)
{
	for (size_t i = 0; i < elf->nr_segs; i++) {
		const struct elf_segment *s = &elf->segs[i];

		if (gs_in_range(offset, s->offset, s->filesz)) {
			*vaddr = offset - s->offset + s->vaddr;
			return 0;
		}
	}
	return -ENOENT;
}

/* How far back to look for an enclosing symbol when smaller ones sit inside a big one. */
#define MAX_NESTED_LOOKBACK 16

const char *gs_elf__symbolize(struct gs_elf *elf, uint64_t vaddr, uint64_t *sym_offset)
{
	/* the first symbol with addr > vaddr */
	size_t lo = GS_SYM_SEARCH(elf->syms, elf->nr_syms, addr, vaddr);

	for (size_t back = 0; back < MAX_NESTED_LOOKBACK && lo > back; back++) {
		struct elf_sym *s = &elf->syms[lo - 1 - back];

		if (!gs_in_range(vaddr, s->addr, s->size))
			continue;
		while (s > elf->syms && s[-1].addr == s->addr) /* aliases: take the preferred */
			s--;
		if (!s->demangled) {
			char *d = gs_demangle(s->name);

			s->demangled = d ? d : s->name;
		}
		*sym_offset = vaddr - s->addr;
		return s->demangled;
	}
	return NULL;
}

int gs_elf__for_each_function(const struct gs_elf *elf,
			      int (*fn)(const char *name, uint64_t vaddr, void *ctx), void *ctx)
{
	for (size_t i = 0; i < elf->nr_syms; i++) {
		int ret = fn(elf->syms[i].name, elf->syms[i].addr, ctx);

		if (ret)
			return ret;
	}
	return 0;
}

const char *gs_elf__interp(const struct gs_elf *elf)
{
	return elf->interp;
}

size_t gs_elf__nr_symbols(const struct gs_elf *elf)
{
	return elf->nr_syms;
}

size_t gs_elf__kernel_handles(const struct gs_elf *elf, const struct gs_elf_kernel_handle **out)
{
	*out = elf->handles;
	return elf->nr_handles;
}
