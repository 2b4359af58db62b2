// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* profile_mappings.c: a sample's mapping for pprof: range, offset, build id, executable. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "user/addr_map.h"
#include "user/elf_file.h"
#include "user/proc_maps.h"
#include "user/profile_mappings.h"
#include "user/symcache.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* A mapped file, by device and inode, and its build id (NULL: none or unreadable). */
struct mapped_file {
	uint64_t dev, inode;
	char *build_id;
};

struct gs_profile_mappings {
	struct gs_symcache *cache;
	struct mapped_file *files;
	size_t nr_files, cap_files;
	/* (pid, EXE_DEV) and (pid, EXE_INODE): the executable's identity, once looked up */
	struct gs_addr_map *exes;
};

enum { EXE_DEV, EXE_INODE };

struct gs_profile_mappings *gs_profile_mappings__new(struct gs_symcache *cache)
{
	struct gs_profile_mappings *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return NULL;
	pm->cache = cache;
	pm->exes = gs_addr_map__new();
	if (!pm->exes) {
		free(pm);
		return NULL;
	}
	return pm;
}

void gs_profile_mappings__free(struct gs_profile_mappings *pm)
{
	if (!pm)
		return;
	for (size_t i = 0; i < pm->nr_files; i++)
		free(pm->files[i].build_id);
	free(pm->files);
	gs_addr_map__free(pm->exes);
	free(pm);
}

/* The build id note among the notes of data, hex-encoded into hex. */
static int build_id_of_notes(Elf_Data *data, char *hex, size_t size)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;

	while ((next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		const unsigned char *desc = (const unsigned char *)data->d_buf + desc_off;

		off = next;
		if (nhdr.n_type != NT_GNU_BUILD_ID || nhdr.n_namesz != 4 ||
		    memcmp((const char *)data->d_buf + name_off, "GNU", 4) || !nhdr.n_descsz ||
		    nhdr.n_descsz > GS_BUILD_ID_MAX || size < 2 * (size_t)nhdr.n_descsz + 1)
			continue;
		for (size_t i = 0; i < nhdr.n_descsz; i++)
			snprintf(hex + 2 * i, 3, "%02x", desc[i]);
		return 0;
	}
	return -ENOENT;
}

int gs_read_build_id(int fd, char *hex, size_t size)
{
	Elf *e = gs_elf_begin(fd);
	size_t nr_phdrs;
	int err = -ENOENT;

	if (!e)
		return -errno;
	if (elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nr_phdrs)) {
		elf_end(e);
		return -ENOEXEC;
	}
	/* program headers, as a stripped file may have no section headers */
	for (size_t i = 0; i < nr_phdrs && err; i++) {
		GElf_Phdr ph;
		Elf_Data *data;

		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		/* libelf checks that the chunk lies inside the file */
		data = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (data)
			err = build_id_of_notes(data, hex, size);
	}
	elf_end(e);
	return err;
}

/* The cached file of m, its build id read on first sight; NULL when out of memory. */
static const struct mapped_file *file_of(struct gs_profile_mappings *pm, const struct gs_maps *maps,
					 const struct gs_mapping *m)
{
	char hex[2 * GS_BUILD_ID_MAX + 1];
	struct mapped_file *f;
	int fd;

	for (size_t i = 0; i < pm->nr_files; i++)
		if (pm->files[i].dev == m->dev && pm->files[i].inode == m->inode)
			return &pm->files[i];
	if (pm->nr_files == pm->cap_files) {
		size_t cap = pm->cap_files ? pm->cap_files * 2 : 16;
		void *grown = realloc(pm->files, cap * sizeof(*pm->files));

		if (!grown)
			return NULL;
		pm->files = grown;
		pm->cap_files = cap;
	}
	f = &pm->files[pm->nr_files++];
	*f = (struct mapped_file){ .dev = m->dev, .inode = m->inode };
	fd = gs_mapping__open(maps, m, NULL);
	if (fd >= 0) {
		if (!gs_read_build_id(fd, hex, sizeof(hex)))
			f->build_id = strdup(hex);
		close(fd);
	}
	return f;
}

/*
 * Whether m maps pid's executable: the file /proc/PID/exe names, or once the process is
 * gone (or hides it), the file mapped lowest, where the kernel puts the executable.
 */
static bool is_executable(struct gs_profile_mappings *pm, pid_t pid, const struct gs_maps *maps,
			  const struct gs_mapping *m)
{
	uint64_t dev = 0, inode = 0;
	char path[32];
	struct stat st;

	if (!gs_addr_map__get(pm->exes, pid, EXE_INODE, &inode)) {
		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		if (!stat(path, &st)) {
			dev = st.st_dev;
			inode = st.st_ino;
		} else {
			for (size_t i = 0; i < maps->nr && !inode; i++) {
				dev = maps->mappings[i].dev;
				inode = maps->mappings[i].path ? maps->mappings[i].inode : 0;
			}
		}
		/* an unknown executable (inode 0) is remembered too: no look-up per frame */
		if (gs_addr_map__set(pm->exes, pid, EXE_DEV, dev) ||
		    gs_addr_map__set(pm->exes, pid, EXE_INODE, inode))
			return false;
	}
	gs_addr_map__get(pm->exes, pid, EXE_DEV, &dev);
	return inode && m->inode == inode && m->dev == dev;
}

bool gs_profile_mappings__lookup(struct gs_profile_mappings *pm, pid_t pid, uint64_t addr,
				 struct gs_profile_mapping *out)
{
	const struct gs_maps *maps = gs_symcache__maps(pm->cache, pid);
	const struct gs_mapping *m = maps ? gs_maps__find(maps, addr) : NULL;
	const struct mapped_file *f;

	if (!m || !m->path)
		return false;
	f = file_of(pm, maps, m);
	*out = (struct gs_profile_mapping){
		.start = m->start,
		.limit = m->end,
		.offset = m->pgoff,
		.build_id = f ? f->build_id : NULL,
		.executable = is_executable(pm, pid, maps, m),
	};
	return true;
}
