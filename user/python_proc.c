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
#include "user/py_debug_offsets.h"
#include "user/python_check.h"
#include "user/python_cold.h"
#include "user/python_proc.h"
#include "user/symcache.h"

#define TP_BASICSIZE 32 /* PyTypeObject: ob_refcnt, ob_type, ob_size, tp_name, tp_basicsize */
#define TP_NAME	     24

/* link-time values of the symbols discovery needs; 0: absent */
struct interp_syms {
	uint64_t runtime, code_type, version, gilstate_get;
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
	} else if (!strcmp(name, "PyGILState_GetThisThreadState")) {
		s->gilstate_get = sym->st_value;
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
	/* stripped (no .symtab): the loop's .cold part found through the entry's jumps */
	if (s->eval && !s->eval_cold &&
	    gs_py_find_eval_cold(e, s->eval, s->eval_size, &s->eval_cold, &s->eval_cold_size))
		s->eval_cold = s->eval_cold_size = 0;
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

/*
 * 3.15: PyGILState_GetThisThreadState() returns a thread-local, "[endbr64] mov %fs:OFF,%rax;
 * ret" in an executable (local-exec TLS), or "mov GOT(%rip),%rax; mov %fs:(%rax),%rax; ret"
 * in libpython (initial-exec: the GOT slot holds OFF). Returns OFF (< 0), or 0 if the code
 * is neither (3.13, 3.14 call PyThread_tss_get() on _PyRuntime's autoTSSkey instead).
 */
static int32_t gilstate_tls(const struct gs_maps *maps, uint64_t fn)
{
	uint8_t c[20];
	int64_t got = 0;
	int32_t off = 0;
	size_t i = 0;

	if (!fn || gs_read_process_memory(maps, fn, c, sizeof(c)))
		return 0;
	if (!memcmp(c, "\xf3\x0f\x1e\xfa", 4))
		i = 4;
	if (!memcmp(c + i, "\x64\x48\x8b\x04\x25", 5) && c[i + 9] == 0xc3) {
		memcpy(&off, c + i + 5, sizeof(off));
	} else if (!memcmp(c + i, "\x48\x8b\x05", 3) && !memcmp(c + i + 7, "\x64\x48\x8b\x00", 4) &&
		   c[i + 11] == 0xc3) {
		memcpy(&off, c + i + 3, sizeof(off));
		if (gs_read_process_memory(maps, fn + i + 7 + (int64_t)off, &got, sizeof(got)))
			return 0;
		off = (int32_t)got;
		if (got != off)
			return 0;
	}
	/* static TLS sits below the thread pointer, within glibc's static TLS room */
	return off < 0 && off > -65536 ? off : 0;
}

/*
 * The live frame chains read with d must end at a <module> code object. A version newer than
 * the descriptions (py_debug_offsets.c) is used only then; before its first frames exist (a
 * process just exec'd) it is looked at again later (*gone).
 */
static const char *check_chains(const struct gs_maps *maps, const struct gs_py_interp *out,
				const struct gs_py_debug_offsets *d, bool *gone)
{
	static const char *const said[] = { "a <module>", "no frames yet", "no <module>" };
	enum gs_py_check c;

	if (d->layout_minor == d->minor)
		return NULL;
	c = gs_py_check_live(maps, out->runtime, out->code_type, d);
	gs_dbg("CPython 3.%d (offsets read as 3.%d's): frame chains end at %s", d->minor,
	       d->layout_minor, said[c]);
	if (c == GS_PY_CHECK_OK)
		return NULL;
	*gone = c == GS_PY_CHECK_NOT_YET;
	return "its frame chains (as the newest known version's offsets read them)";
}

/*
 * 3.13+: the frame, thread-state, code and str offsets the interpreter publishes at the start
 * of _PyRuntime, over the table's. Returns NULL, or what is not supported; *gone when the
 * memory could not be read (a process that exec'd meanwhile: no refusal).
 */
static const char *apply_debug_offsets(const struct gs_maps *maps, struct gs_py_interp *out,
				       bool *gone)
{
	uint8_t blob[GS_PY_DEBUG_BLOB];
	struct gs_py_layout *l = &out->layout;
	struct gs_py_debug_offsets d;
	const char *why;

	if (gs_read_process_memory(maps, out->runtime, blob, sizeof(blob))) {
		*gone = true;
		return "its runtime state";
	}
	if (gs_py_debug_offsets_parse(blob, sizeof(blob), &d, &why))
		return why;
	if ((why = check_chains(maps, out, &d, gone)))
		return why;
	out->minor = d.minor;
	l->bpf.tstate_frame = d.tstate_current_frame;
	l->bpf.frame_code = d.frame_executable;
	l->bpf.frame_back = d.frame_previous;
	l->bpf.frame_instr = d.frame_instr_ptr;
	l->bpf.frame_flag = d.frame_owner;
	l->co_filename = d.co_filename;
	l->co_name = d.co_name;
	l->co_qualname = d.co_qualname;
	l->co_lines = d.co_linetable;
	l->co_firstlineno = d.co_firstlineno;
	l->str_state = d.str_state;
	l->str_ascii_data = d.str_ascii_size;
	/* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8 */
	l->str_compact_data = d.str_ascii_size + 16;
	out->code_header = d.co_code_adaptive;
	return NULL;
}

/* 3.11+: the code units follow the fixed part of a code object, tp_basicsize bytes */
static enum gs_py_find code_header(const struct gs_maps *maps, struct gs_py_interp *out)
{
	uint64_t basicsize = 0, name_ptr = 0;
	char name[8] = "";

	if (out->minor < 11)
		return GS_PY_FOUND;
	if (gs_read_process_memory(maps, out->code_type + TP_BASICSIZE, &basicsize,
				   sizeof(basicsize)) ||
	    gs_read_process_memory(maps, out->code_type + TP_NAME, &name_ptr, sizeof(name_ptr)))
		return GS_PY_NONE; /* gone, or exec'd meanwhile: not a refusal */
	out->why = "its code objects' layout";
	/* 3.13+: the published size must be the type's, and the type must be "code" */
	if (basicsize < 128 || basicsize > 512 ||
	    (out->code_header && out->code_header != basicsize))
		return GS_PY_UNSUPPORTED;
	if (out->minor >= 13 && (gs_read_process_memory(maps, name_ptr, name, sizeof(name) - 1) ||
				 strcmp(name, "code")))
		return GS_PY_UNSUPPORTED;
	out->code_header = basicsize;
	out->why = NULL;
	return GS_PY_FOUND;
}

/* 3.13+: offsets from the process, the thread state's binding from the code or the table */
static enum gs_py_find describe_new(const struct gs_maps *maps, const struct interp_syms *s,
				    uint64_t bias, struct gs_py_interp *out)
{
	const struct gs_py_layout *table;
	bool gone = false;
	int32_t tls;

	out->why = apply_debug_offsets(maps, out, &gone);
	if (gone)
		return GS_PY_NONE;
	if (out->why)
		return GS_PY_UNSUPPORTED;
	table = gs_py_layout_find(3, out->minor);
	tls = gilstate_tls(maps, s->gilstate_get ? s->gilstate_get + bias : 0);
	out->layout.bpf.tls_tstate = tls;
	out->why = "its thread states' binding";
	if (!tls && (!table || !table->runtime_tss_key || table->minor != out->minor))
		return GS_PY_UNSUPPORTED; /* a newer version's autoTSSkey is not known */
	out->layout.runtime_tss_key = tls ? 0 : table->runtime_tss_key;
	out->why = NULL;
	return GS_PY_FOUND;
}

static enum gs_py_find describe(struct gs_symcache *sc, const struct gs_maps *maps,
				const struct gs_mapping *m, const struct interp_syms *s,
				struct gs_py_interp *out, bool suffix_ok)
{
	const struct gs_py_layout *table;
	enum gs_py_find found;
	uint64_t bias;

	if (load_bias(sc, maps, m, &bias))
		return GS_PY_NONE;
	snprintf(out->path, sizeof(out->path), "%s", m->path);
	read_version(maps, s->version ? s->version + bias : 0, out);
	table = suffix_ok ? gs_py_layout_find(out->major, out->minor) : NULL;
	out->why = "this version or build";
	if (!table || !s->code_type || !s->eval)
		return GS_PY_UNSUPPORTED;
	/* thread states are found through glibc's struct pthread; musl keeps keys elsewhere */
	out->why = "musl libc";
	for (size_t i = 0; i < maps->nr; i++)
		if (maps->mappings[i].path && strstr(maps->mappings[i].path, "/ld-musl-"))
			return GS_PY_UNSUPPORTED;
	out->layout = *table;
	out->runtime = s->runtime + bias;
	out->code_type = s->code_type + bias;
	out->eval.start[0] = s->eval + bias;
	out->eval.end[0] = out->eval.start[0] + s->eval_size;
	if (s->eval_cold) {
		out->eval.start[1] = s->eval_cold + bias;
		out->eval.end[1] = out->eval.start[1] + s->eval_cold_size;
	}
	if (out->minor >= 13 && (found = describe_new(maps, s, bias, out)) != GS_PY_FOUND)
		return found;
	out->why = NULL;
	return code_header(maps, out);
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
