// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* python_proc.c: CPython discovery from a process's mappings and the interpreter's symbols. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/elf_file.h"
#include "user/log.h"
#include "user/proc_maps.h"
#include "user/proc_mem.h"
#include "user/python_proc.h"
#include "user/symcache.h"

#define TP_BASICSIZE 32 /* PyTypeObject: ob_refcnt, ob_type, ob_size, tp_name, tp_basicsize */

/* link-time values of the symbols discovery needs; 0: absent */
struct interp_syms {
	uint64_t runtime, code_type, version;
	uint64_t eval, eval_size, eval_cold, eval_cold_size;
};

/* "python3.11", "libpython3.11.so.1.0": the minor version the name says, -1 if not one */
static int minor_from_name(const char *path, bool *suffix_ok)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char *end;
	long minor;

	if (!strncmp(base, "lib", 3))
		base += 3;
	if (strncmp(base, "python3.", 8))
		return -1;
	minor = strtol(base + 8, &end, 10);
	if (end == base + 8 || minor < 0 || minor > 99)
		return -1;
	/* "t": free-threaded, "d": debug (other layouts); only the plain build is known */
	*suffix_ok = !*end || !strncmp(end, ".so", 3);
	return (int)minor;
}

static void note_symbol(struct interp_syms *s, const char *name, const GElf_Sym *sym)
{
	if (!strcmp(name, "_PyRuntime")) {
		s->runtime = sym->st_value;
	} else if (!strcmp(name, "PyCode_Type")) {
		s->code_type = sym->st_value;
	} else if (!strcmp(name, "Py_Version")) {
		s->version = sym->st_value;
	} else if (!strcmp(name, "_PyEval_EvalFrameDefault")) {
		s->eval = sym->st_value;
		s->eval_size = sym->st_size;
	} else if (!strcmp(name, "_PyEval_EvalFrameDefault.cold")) {
		s->eval_cold = sym->st_value;
		s->eval_cold_size = sym->st_size;
	}
}

/* Reads the symbols of .dynsym and .symtab of the ELF at fd. Returns 0 or -errno. */
static int read_syms(int fd, struct interp_syms *s)
{
	Elf *e = gs_elf_begin(fd);
	Elf_Scn *scn = NULL;

	if (!e)
		return -errno;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(data, (int)i, &sym) || !sym.st_value)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (name && (name[0] == '_' || name[0] == 'P'))
				note_symbol(s, name, &sym);
		}
	}
	elf_end(e);
	return 0;
}

/* load bias of the file mapped at m: its run-time address minus its link-time address */
static int load_bias(struct gs_symcache *sc, const struct gs_maps *maps, const struct gs_mapping *m,
		     uint64_t *bias)
{
	struct gs_elf *elf = gs_symcache__elf(sc, maps, m);
	uint64_t vaddr;

	if (!elf || gs_elf__offset_to_vaddr(elf, m->pgoff, &vaddr))
		return -ENOEXEC;
	*bias = m->start - vaddr;
	return 0;
}

/* Py_Version (3.11+): PY_VERSION_HEX, 0x030b07f0 for 3.11.7 */
static void read_version(const struct gs_maps *maps, uint64_t addr, struct gs_py_interp *out)
{
	uint32_t hex = 0;

	if (!addr || gs_read_process_memory(maps, addr, &hex, sizeof(hex)))
		return;
	out->major = (int)(hex >> 24);
	out->minor = (int)((hex >> 16) & 0xff);
}

static enum gs_py_find describe(struct gs_symcache *sc, const struct gs_maps *maps,
				const struct gs_mapping *m, const struct interp_syms *s,
				struct gs_py_interp *out, bool suffix_ok)
{
	uint64_t bias, basicsize = 0;

	if (load_bias(sc, maps, m, &bias))
		return GS_PY_NONE;
	snprintf(out->path, sizeof(out->path), "%s", m->path);
	read_version(maps, s->version ? s->version + bias : 0, out);
	out->layout = suffix_ok ? gs_py_layout_find(out->major, out->minor) : NULL;
	out->why = "this version or build";
	if (!out->layout || !s->code_type || !s->eval)
		return GS_PY_UNSUPPORTED;
	/* thread states are found through glibc's struct pthread; musl keeps keys elsewhere */
	out->why = "musl libc";
	for (size_t i = 0; i < maps->nr; i++)
		if (maps->mappings[i].path && strstr(maps->mappings[i].path, "/ld-musl-"))
			return GS_PY_UNSUPPORTED;
	out->runtime = s->runtime + bias;
	out->code_type = s->code_type + bias;
	out->eval.start[0] = s->eval + bias;
	out->eval.end[0] = out->eval.start[0] + s->eval_size;
	if (s->eval_cold) {
		out->eval.start[1] = s->eval_cold + bias;
		out->eval.end[1] = out->eval.start[1] + s->eval_cold_size;
	}
	/* 3.11+: the code units follow the fixed part of the object, tp_basicsize bytes */
	if (out->minor >= 11) {
		if (gs_read_process_memory(maps, out->code_type + TP_BASICSIZE, &basicsize,
					   sizeof(basicsize)) ||
		    basicsize < 128 || basicsize > 512) {
			out->why = "its code objects' layout";
			return GS_PY_UNSUPPORTED;
		}
		out->code_header = basicsize;
	}
	out->why = NULL;
	return GS_PY_FOUND;
}

enum gs_py_find gs_py_interp_find(struct gs_symcache *sc, const struct gs_maps *maps,
				  struct gs_py_interp *out)
{
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = &maps->mappings[i];
		struct interp_syms s = { 0 };
		bool suffix_ok = false;
		int fd, minor, err;

		if (!m->exec || !m->path || (minor = minor_from_name(m->path, &suffix_ok)) < 0)
			continue;
		fd = gs_mapping__open(maps, m, NULL);
		if (fd < 0)
			continue;
		err = read_syms(fd, &s);
		close(fd);
		if (err || !s.runtime)
			continue; /* a launcher that links libpython: the library comes next */
		*out = (struct gs_py_interp){ .major = 3, .minor = minor };
		return describe(sc, maps, m, &s, out, suffix_ok);
	}
	return GS_PY_NONE;
}
