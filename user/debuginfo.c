// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* debuginfo.c: separate debug files (build id, .gnu_debuglink) and MiniDebugInfo for symbols. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "user/debuginfo.h"
#include "user/elf_file.h"
#include "user/log.h"

#define NT_GNU_BUILD_ID_TYPE 3
#define MAX_BUILD_ID	     64		/* bytes; GNU ld writes 20 */
#define MAX_DEBUGDATA	     (16 << 20) /* .gnu_debugdata as stored (xz) */
#define MAX_DEBUGDATA_OUT    (64 << 20) /* ... and decompressed */
#define MAX_CRC_BYTES	     (4ULL << 30)

static const char *debug_root = "/usr/lib/debug";

void gs_debuginfo__set_root(const char *dir)
{
	debug_root = dir;
}

/* The section named name, its header in *shdr; NULL if none. */
static Elf_Scn *find_section(Elf *e, const char *name, GElf_Shdr *shdr)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		const char *n;

		if (!gelf_getshdr(scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(e, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* The GNU build id, in hex into hex[2 * MAX_BUILD_ID + 1]; false if none. */
static bool build_id(Elf *e, char *hex)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off, next;

		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_NOTE)
			continue;
		data = elf_getdata(scn, NULL);
		while (data && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const unsigned char *d = (const unsigned char *)data->d_buf;

			if (nh.n_type == NT_GNU_BUILD_ID_TYPE && nh.n_namesz == 4 &&
			    !memcmp(d + name_off, "GNU", 4) && nh.n_descsz >= 2 &&
			    nh.n_descsz <= MAX_BUILD_ID) {
				for (size_t i = 0; i < nh.n_descsz; i++)
					sprintf(hex + 2 * i, "%02x", d[desc_off + i]);
				return true;
			}
			off = next;
		}
	}
	return false;
}

/* .gnu_debuglink: a file name (no '/') and the file's CRC32; false if none or malformed. */
static bool debuglink(Elf *e, char *name, size_t len, uint32_t *crc)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section(e, ".gnu_debuglink", &shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	const char *d;
	size_t n, crc_off;

	if (!data || !data->d_buf || data->d_size < 8)
		return false;
	d = data->d_buf;
	n = strnlen(d, data->d_size);
	crc_off = (n + 4) & ~(size_t)3; /* the name, its NUL, padding to 4 */
	if (!n || n >= len || crc_off + 4 > data->d_size || memchr(d, '/', n) || !strcmp(d, ".") ||
	    !strcmp(d, ".."))
		return false;
	memcpy(name, d, n + 1);
	memcpy(crc, d + crc_off, 4); /* the file's byte order: x86-64's little endian */
	return true;
}

/* A regular file opened for reading, not following a last symlink an owner could swap. */
static int open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	return fd;
}

static bool crc_matches(int fd, uint32_t want)
{
	unsigned char buf[65536];
	uLong crc = crc32(0, NULL, 0);
	uint64_t total = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), (off_t)total)) > 0) {
		crc = crc32(crc, buf, (uInt)n);
		total += (uint64_t)n;
		if (total > MAX_CRC_BYTES)
			return false;
	}
	return n == 0 && (uint32_t)crc == want;
}

/* Adds the .symtab of the ELF at fd; 1 if it had symbols. */
static int merge_fd(struct gs_elf *elf, int fd)
{
	Elf *e = gs_elf_begin(fd);
	int n;

	if (!e)
		return 0;
	n = elf_kind(e) == ELF_K_ELF ? gs_elf__merge_symtab(elf, e) : 0;
	elf_end(e);
	return n;
}

static int try_build_id(struct gs_elf *elf, Elf *e)
{
	char hex[2 * MAX_BUILD_ID + 1], path[PATH_MAX];
	int fd, n;

	if (!build_id(e, hex))
		return 0;
	if (snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", debug_root, hex, hex + 2) >=
	    (int)sizeof(path))
		return 0;
	fd = open_regular(path);
	if (fd < 0)
		return 0;
	n = merge_fd(elf, fd);
	close(fd);
	if (n > 0)
		gs_dbg("symbols from %s", path);
	return n;
}

static int try_debuglink(struct gs_elf *elf, Elf *e, const char *path)
{
	char name[256], dir[PATH_MAX], cand[PATH_MAX];
	const char *slash = path ? strrchr(path, '/') : NULL;
	uint32_t crc;
	int n = 0;

	if (!slash || !debuglink(e, name, sizeof(name), &crc) ||
	    (size_t)(slash - path) >= sizeof(dir))
		return 0;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	for (int i = 0; i < 3 && n <= 0; i++) {
		int fd, len = i == 0   ? snprintf(cand, sizeof(cand), "%s/%s", dir, name)
			      : i == 1 ? snprintf(cand, sizeof(cand), "%s/.debug/%s", dir, name)
				       : snprintf(cand, sizeof(cand), "%s%s/%s", debug_root, dir,
						  name);

		if (len >= (int)sizeof(cand) || !strcmp(cand, path))
			continue;
		fd = open_regular(cand);
		if (fd < 0)
			continue;
		if (crc_matches(fd, crc))
			n = merge_fd(elf, fd);
		close(fd);
		if (n > 0)
			gs_dbg("symbols from %s", cand);
	}
	return n;
}

/* xz data into a new buffer of at most MAX_DEBUGDATA_OUT bytes; NULL if it does not fit. */
static void *unxz(const void *in, size_t in_len, size_t *out_len)
{
	lzma_stream s = LZMA_STREAM_INIT;
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap), *grown;
	lzma_ret r;

	if (!out || lzma_stream_decoder(&s, 256 << 20, 0) != LZMA_OK) {
		free(out);
		return NULL;
	}
	s.next_in = in;
	s.avail_in = in_len;
	s.next_out = out;
	s.avail_out = cap;
	while ((r = lzma_code(&s, LZMA_FINISH)) == LZMA_OK) {
		if (s.avail_out)
			continue;
		if (cap >= MAX_DEBUGDATA_OUT || !(grown = realloc(out, cap * 2)))
			break;
		out = grown;
		s.next_out = out + cap;
		s.avail_out = cap;
		cap *= 2;
	}
	*out_len = (size_t)s.total_out;
	lzma_end(&s);
	if (r != LZMA_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

static int try_minidebuginfo(struct gs_elf *elf, Elf *e)
{
	GElf_Shdr shdr;
	Elf_Scn *scn = find_section(e, ".gnu_debugdata", &shdr);
	Elf_Data *data = scn ? elf_getdata(scn, NULL) : NULL;
	size_t len;
	void *buf;
	Elf *mini;
	int n = 0;

	if (!data || !data->d_buf || !data->d_size || data->d_size > MAX_DEBUGDATA)
		return 0;
	buf = unxz(data->d_buf, data->d_size, &len);
	if (!buf)
		return 0;
	mini = elf_memory(buf, len);
	if (mini && elf_kind(mini) == ELF_K_ELF)
		n = gs_elf__merge_symtab(elf, mini);
	if (mini)
		elf_end(mini);
	free(buf);
	return n;
}

int gs_debuginfo__load(struct gs_elf *elf, int fd, const char *path)
{
	Elf *e;
	int n;

	if (gs_elf__has_symtab(elf))
		return 0;
	e = gs_elf_begin(fd);
	if (!e)
		return -errno;
	if (elf_kind(e) != ELF_K_ELF) {
		elf_end(e);
		return 0;
	}
	n = try_build_id(elf, e);
	if (n <= 0)
		n = try_debuglink(elf, e, path);
	if (n <= 0)
		n = try_minidebuginfo(elf, e);
	elf_end(e);
	return n;
}

int gs_debuginfo__build_id(int fd, char *hex)
{
	Elf *e = gs_elf_begin(fd);
	bool found;

	if (!e)
		return -errno;
	found = elf_kind(e) == ELF_K_ELF && build_id(e, hex);
	elf_end(e);
	return found ? 0 : -ENOENT;
}

int gs_debuginfo__merge(struct gs_elf *elf, int fd, const char *want)
{
	char hex[2 * MAX_BUILD_ID + 1];
	int err = gs_debuginfo__build_id(fd, hex);

	if (err)
		return err;
	if (strcmp(hex, want))
		return -ESTALE; /* not the file asked for */
	return merge_fd(elf, fd);
}
