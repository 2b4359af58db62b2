// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_proc_maps.c: /proc/PID/maps parsing (escaped, deleted, spaced paths) and lookups. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/proc_maps.h"

/* Shaped like the kernel's show_map_vma(): the path column is padded to a fixed width. */
static const char sample[] =
	"55d1c4a00000-55d1c4a02000 r--p 00000000 fd:01 1311 /usr/bin/cat\n"
	"55d1c4a02000-55d1c4a07000 r-xp 00002000 fd:01 1311 /usr/bin/cat\n"
	"55d1c5e3e000-55d1c5e5f000 rw-p 00000000 00:00 0                          [heap]\n"
	"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	"7f0000021000-7f0000022000 ---p 00000000 00:00 0\n"
	"7f0000100000-7f0000101000 r-xp 00001000 103:05 4194305                  "
	"/tmp/a\\012b.so\n"
	"7f0000200000-7f0000201000 r--p 00000000 00:1a 77                        "
	"/tmp/gone.so (deleted)\n"
	"7f0000300000-7f0000302000 r-xp 00003000 08:02 9                         "
	"/opt/my lib/lib x.so\n"
	"7ffd1a1b0000-7ffd1a1d1000 rw-p 00000000 00:00 0                          [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

static const struct gs_mapping *at(const struct gs_maps *maps, size_t i)
{
	return i < maps->nr ? &maps->mappings[i] : NULL;
}

GS_TEST(parse_file_lines)
{
	struct gs_maps *maps = gs_maps__parse(1234, sample);
	const struct gs_mapping *m;

	if (!GS_EXPECT(maps))
		return;
	GS_EXPECT_EQ(maps->pid, 1234);
	GS_EXPECT_EQ(maps->nr, 10);

	if (GS_EXPECT((m = at(maps, 0)))) {
		GS_EXPECT_EQ(m->start, 0x55d1c4a00000ULL);
		GS_EXPECT_EQ(m->end, 0x55d1c4a02000ULL);
		GS_EXPECT_EQ(m->pgoff, 0);
		GS_EXPECT_EQ(m->dev, makedev(0xfd, 0x01));
		GS_EXPECT_EQ(m->inode, 1311);
		GS_EXPECT(!m->exec);
		GS_EXPECT(!m->deleted);
		GS_EXPECT_STR_EQ(m->path, "/usr/bin/cat");
	}
	if (GS_EXPECT((m = at(maps, 1)))) {
		GS_EXPECT_EQ(m->start, 0x55d1c4a02000ULL);
		GS_EXPECT_EQ(m->end, 0x55d1c4a07000ULL);
		GS_EXPECT_EQ(m->pgoff, 0x2000);
		GS_EXPECT(m->exec);
		GS_EXPECT_STR_EQ(m->path, "/usr/bin/cat");
	}
	gs_maps__free(maps);
}

GS_TEST(parse_anonymous_and_pseudo)
{
	struct gs_maps *maps = gs_maps__parse(1, sample);
	const struct gs_mapping *m;

	if (!GS_EXPECT(maps) || !GS_EXPECT_EQ(maps->nr, 10))
		goto out;
	/* [heap], an unnamed mapping with and without the trailing blank, [stack], [vsyscall] */
	for (size_t i = 2; i < 10; i++) {
		if (i >= 5 && i < 8)
			continue;
		m = at(maps, i);
		GS_EXPECT_STR_EQ(m->path, NULL);
		GS_EXPECT_EQ(m->inode, 0);
		GS_EXPECT_EQ(m->dev, 0);
		GS_EXPECT(!m->deleted);
	}
	m = at(maps, 2);
	GS_EXPECT_EQ(m->start, 0x55d1c5e3e000ULL);
	GS_EXPECT_EQ(m->end, 0x55d1c5e5f000ULL);
	GS_EXPECT(!m->exec);
	m = at(maps, 9);
	GS_EXPECT_EQ(m->start, 0xffffffffff600000ULL);
	GS_EXPECT_EQ(m->end, 0xffffffffff601000ULL);
	GS_EXPECT(m->exec);
out:
	gs_maps__free(maps);
}

GS_TEST(parse_escaped_newline)
{
	struct gs_maps *maps = gs_maps__parse(1, sample);
	const struct gs_mapping *m = maps ? at(maps, 5) : NULL;

	if (GS_EXPECT(m)) {
		GS_EXPECT_STR_EQ(m->path, "/tmp/a\nb.so");
		GS_EXPECT(!m->deleted);
		GS_EXPECT(m->exec);
		GS_EXPECT_EQ(m->pgoff, 0x1000);
	}
	gs_maps__free(maps);
}

GS_TEST(parse_deleted_suffix)
{
	struct gs_maps *maps = gs_maps__parse(1, sample);
	const struct gs_mapping *m = maps ? at(maps, 6) : NULL;

	if (GS_EXPECT(m)) {
		GS_EXPECT_STR_EQ(m->path, "/tmp/gone.so");
		GS_EXPECT(m->deleted);
		GS_EXPECT(!m->exec);
	}
	gs_maps__free(maps);
}

GS_TEST(parse_path_with_spaces)
{
	struct gs_maps *maps = gs_maps__parse(1, sample);
	const struct gs_mapping *m = maps ? at(maps, 7) : NULL;

	if (GS_EXPECT(m)) {
		GS_EXPECT_STR_EQ(m->path, "/opt/my lib/lib x.so");
		GS_EXPECT(!m->deleted);
		GS_EXPECT_EQ(m->pgoff, 0x3000);
	}
	gs_maps__free(maps);
}

/*
 * seq_file_path(m, file, "\n") escapes only '\n', as "\012": a backslash in a name is
 * printed as is, so only that one sequence may be turned back.
 */
GS_TEST(parse_only_newline_is_escaped)
{
	static const char text[] = "1000-2000 r--p 00000000 08:01 5 /tmp/back\\101slash\n"
				   "2000-3000 r--p 00000000 08:01 6 /tmp/tail\\\n"
				   "3000-4000 r--p 00000000 08:01 7 /tmp/x\\012\\012y\n";
	struct gs_maps *maps = gs_maps__parse(1, text);

	if (!GS_EXPECT(maps) || !GS_EXPECT_EQ(maps->nr, 3))
		goto out;
	GS_EXPECT_STR_EQ(maps->mappings[0].path, "/tmp/back\\101slash");
	GS_EXPECT_STR_EQ(maps->mappings[1].path, "/tmp/tail\\");
	GS_EXPECT_STR_EQ(maps->mappings[2].path, "/tmp/x\n\ny");
out:
	gs_maps__free(maps);
}

GS_TEST(parse_dev_and_inode)
{
	struct gs_maps *maps = gs_maps__parse(1, sample);

	if (GS_EXPECT(maps) && GS_EXPECT_EQ(maps->nr, 10)) {
		/* the kernel prints major and minor in hex: 103 is major 259 (nvme) */
		GS_EXPECT_EQ(at(maps, 5)->dev, makedev(259, 5));
		GS_EXPECT_EQ(at(maps, 5)->inode, 4194305);
		GS_EXPECT_EQ(at(maps, 6)->dev, makedev(0, 0x1a));
		GS_EXPECT_EQ(at(maps, 6)->inode, 77);
		GS_EXPECT_EQ(at(maps, 7)->dev, makedev(8, 2));
		GS_EXPECT_EQ(at(maps, 7)->inode, 9);
	}
	gs_maps__free(maps);
}

GS_TEST(parse_edge_input)
{
	struct gs_maps *maps;

	maps = gs_maps__parse(1, "");
	if (GS_EXPECT(maps))
		GS_EXPECT_EQ(maps->nr, 0);
	gs_maps__free(maps);

	/* no final newline; a malformed line is skipped */
	maps = gs_maps__parse(1, "not a maps line\n"
				 "1000-2000 r-xp 00000000 08:01 5 /bin/x");
	if (GS_EXPECT(maps) && GS_EXPECT_EQ(maps->nr, 1)) {
		GS_EXPECT_EQ(maps->mappings[0].start, 0x1000);
		GS_EXPECT_STR_EQ(maps->mappings[0].path, "/bin/x");
	}
	gs_maps__free(maps);

	gs_maps__free(NULL);
}

GS_TEST(find)
{
	struct gs_maps *maps = gs_maps__parse(1, sample);
	const struct gs_mapping *first, *second;

	if (!GS_EXPECT(maps) || !GS_EXPECT_EQ(maps->nr, 10))
		goto out;
	first = at(maps, 0);
	second = at(maps, 1);
	GS_EXPECT(gs_maps__find(maps, first->start) == first);
	GS_EXPECT(gs_maps__find(maps, first->end - 1) == first);
	/* adjacent mappings: first's end is second's start */
	GS_EXPECT(gs_maps__find(maps, first->end) == second);
	GS_EXPECT(gs_maps__find(maps, second->end - 1) == second);
	/* end is exclusive and followed by a gap */
	GS_EXPECT(gs_maps__find(maps, second->end) == NULL);
	GS_EXPECT(gs_maps__find(maps, 0x7f00000fffffULL) == NULL);
	GS_EXPECT(gs_maps__find(maps, 0x7f0000100000ULL) == at(maps, 5));
	GS_EXPECT(gs_maps__find(maps, 0x7f0000301fffULL) == at(maps, 7));
	GS_EXPECT(gs_maps__find(maps, 0x7f0000302000ULL) == NULL);
	GS_EXPECT(gs_maps__find(maps, 0) == NULL);
	GS_EXPECT(gs_maps__find(maps, first->start - 1) == NULL);
	GS_EXPECT(gs_maps__find(maps, 0xffffffffff600fffULL) == at(maps, 9));
	GS_EXPECT(gs_maps__find(maps, UINT64_MAX) == NULL);
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *m = at(maps, i);

		GS_EXPECT(gs_maps__find(maps, m->start) == m);
		GS_EXPECT(gs_maps__find(maps, m->end - 1) == m);
	}
out:
	gs_maps__free(maps);
}

GS_TEST(find_empty)
{
	struct gs_maps *maps = gs_maps__parse(1, "");

	if (GS_EXPECT(maps))
		GS_EXPECT(gs_maps__find(maps, 0x1000) == NULL);
	gs_maps__free(maps);
}

__attribute__((noinline)) int maps_probe(void);
__attribute__((noinline)) int maps_probe(void)
{
	return 7;
}

GS_TEST(read_self)
{
	uint64_t addr = (uint64_t)(uintptr_t)&maps_probe;
	struct gs_maps *maps = gs_maps__read(getpid());
	const struct gs_mapping *m;
	char exe[PATH_MAX];
	struct stat st_exe, st_path;
	ssize_t n;
	int fd;

	if (!GS_EXPECT(maps))
		return;
	GS_EXPECT_EQ(maps->pid, getpid());
	GS_EXPECT(maps->nr > 1);
	for (size_t i = 1; i < maps->nr; i++)
		GS_EXPECT(maps->mappings[i - 1].end <= maps->mappings[i].start);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (!GS_EXPECT(n > 0))
		goto out;
	exe[n] = '\0';
	m = gs_maps__find(maps, addr);
	if (!GS_EXPECT(m))
		goto out;
	GS_EXPECT(m->start <= addr && addr < m->end);
	GS_EXPECT(m->exec);
	GS_EXPECT(!m->deleted);
	GS_EXPECT_STR_EQ(m->path, exe);
	if (GS_EXPECT_EQ(stat(exe, &st_exe), 0)) {
		GS_EXPECT_EQ(m->inode, st_exe.st_ino);
		GS_EXPECT_EQ(m->dev, st_exe.st_dev);
	}

	/* gs_mapping__open opens that very file, through map_files or the path */
	fd = gs_mapping__open(maps, m, &st_path);
	if (GS_EXPECT(fd >= 0)) {
		GS_EXPECT_EQ(st_path.st_ino, st_exe.st_ino);
		GS_EXPECT_EQ(st_path.st_dev, st_exe.st_dev);
		close(fd);
	}

	/* anonymous memory has no file */
	for (size_t i = 0; i < maps->nr; i++) {
		if (!maps->mappings[i].path) {
			GS_EXPECT_EQ(gs_mapping__open(maps, &maps->mappings[i], NULL), -ENOENT);
			break;
		}
	}
out:
	gs_maps__free(maps);
}

/* Maps a one-byte file named name in dir; returns the mapping's address or NULL. */
static void *map_file(const char *dir, const char *name, char *path, size_t len)
{
	void *p;
	int fd;

	if (snprintf(path, len, "%s/%s", dir, name) >= (int)len)
		return NULL;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (write(fd, "x", 1) != 1) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, 1, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* What the kernel really writes for odd names: "\012" for '\n', nothing else escaped. */
GS_TEST(read_self_odd_paths)
{
	static const char *const names[] = { "with space", "new\nline", "back\\101slash", "tail\\",
					     "deleted (deleted)" };
	enum { NR = sizeof(names) / sizeof(names[0]) };
	char dir[] = "/tmp/gs_unit_maps_XXXXXX", paths[NR][PATH_MAX] = { { 0 } };
	void *addrs[NR] = { 0 };
	struct gs_maps *maps = NULL;
	const struct gs_mapping *m;
	size_t i;

	if (!GS_EXPECT(mkdtemp(dir)))
		return;
	for (i = 0; i < NR; i++)
		if (!GS_EXPECT((addrs[i] = map_file(dir, names[i], paths[i], sizeof(paths[i])))))
			goto out;
	/* the last one is unlinked: " (deleted)" is added after a name that ends like it */
	GS_EXPECT_EQ(unlink(paths[NR - 1]), 0);

	maps = gs_maps__read(getpid());
	if (!GS_EXPECT(maps))
		goto out;
	for (i = 0; i < NR; i++) {
		m = gs_maps__find(maps, (uint64_t)(uintptr_t)addrs[i]);
		if (!GS_EXPECT(m))
			continue;
		GS_EXPECT_STR_EQ(m->path, paths[i]);
		GS_EXPECT(m->deleted == (i == NR - 1));
		GS_EXPECT(!m->exec);
	}
out:
	gs_maps__free(maps);
	for (i = 0; i < NR; i++) {
		if (addrs[i])
			munmap(addrs[i], 1);
		if (paths[i][0] && i != NR - 1)
			unlink(paths[i]);
	}
	rmdir(dir);
}

GS_TEST(read_missing_pid)
{
	/* above PID_MAX_LIMIT (4194304), so never a live process */
	errno = 0;
	GS_EXPECT(gs_maps__read(0x7ffffff0) == NULL);
	GS_EXPECT_EQ(errno, ENOENT);
}

/* One line of maps text naming [start, end) of path with dev and inode. */
static struct gs_maps *crafted(uintptr_t start, uintptr_t end, dev_t dev, ino_t ino,
			       const char *path)
{
	char text[PATH_MAX + 128];

	snprintf(text, sizeof(text), "%lx-%lx r--s 00000000 %x:%x %lu %s\n", (unsigned long)start,
		 (unsigned long)end, major(dev), minor(dev), (unsigned long)ino, path);
	return gs_maps__parse(getpid(), text);
}

/*
 * A snapshot that names another file than the one mapped now (the range was remapped, or
 * the path replaced, since it was read) opens nothing: -ESTALE. Through map_files (the live
 * range) and through the path (a range that is not mapped, as when map_files is denied).
 */
GS_TEST(mapping_open_checks_identity)
{
	char dir[] = "/tmp/gs_unit_maps_XXXXXX", path[PATH_MAX], link[PATH_MAX + 8];
	const uintptr_t unmapped = 0x1000;
	struct stat st, got;
	struct gs_maps *maps;
	void *p;
	int fd;

	if (!GS_EXPECT(mkdtemp(dir)))
		return;
	p = map_file(dir, "lib.so", path, sizeof(path));
	if (!GS_EXPECT(p) || !GS_EXPECT_EQ(stat(path, &st), 0))
		goto out;
	for (int live = 1; live >= 0; live--) {
		uintptr_t start = live ? (uintptr_t)p : unmapped;
		uintptr_t end = start + (uintptr_t)sysconf(_SC_PAGESIZE);

		/* the right identity: opens, and fstat agrees */
		maps = crafted(start, end, st.st_dev, st.st_ino, path);
		if (GS_EXPECT(maps) && GS_EXPECT_EQ(maps->nr, 1)) {
			fd = gs_mapping__open(maps, &maps->mappings[0], &got);
			if (GS_EXPECT(fd >= 0)) {
				GS_EXPECT_EQ(got.st_ino, st.st_ino);
				GS_EXPECT_EQ(got.st_dev, st.st_dev);
				GS_EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
				close(fd);
			}
		}
		gs_maps__free(maps);
		/* another inode, or another device: what is there now is not what was named */
		maps = crafted(start, end, st.st_dev, st.st_ino + 1, path);
		if (GS_EXPECT(maps))
			GS_EXPECT_EQ(gs_mapping__open(maps, &maps->mappings[0], NULL), -ESTALE);
		gs_maps__free(maps);
		maps = crafted(start, end, makedev(major(st.st_dev) + 1, 0), st.st_ino, path);
		if (GS_EXPECT(maps))
			GS_EXPECT_EQ(gs_mapping__open(maps, &maps->mappings[0], NULL), -ESTALE);
		gs_maps__free(maps);
	}

	/* by path, a symlink in the last component is not followed, even to the right file */
	snprintf(link, sizeof(link), "%s/link.so", dir);
	if (GS_EXPECT_EQ(symlink(path, link), 0)) {
		maps = crafted(unmapped, unmapped + 4096, st.st_dev, st.st_ino, link);
		if (GS_EXPECT(maps))
			GS_EXPECT_EQ(gs_mapping__open(maps, &maps->mappings[0], NULL), -ELOOP);
		gs_maps__free(maps);
		unlink(link);
	}
	/* nor a FIFO (which would block): not a regular file */
	snprintf(link, sizeof(link), "%s/fifo.so", dir);
	if (GS_EXPECT_EQ(mkfifo(link, 0600), 0) && GS_EXPECT_EQ(stat(link, &got), 0)) {
		maps = crafted(unmapped, unmapped + 4096, got.st_dev, got.st_ino, link);
		if (GS_EXPECT(maps))
			GS_EXPECT_EQ(gs_mapping__open(maps, &maps->mappings[0], NULL), -ESTALE);
		gs_maps__free(maps);
		unlink(link);
	}
	munmap(p, 1);
out:
	unlink(path);
	rmdir(dir);
}

GS_TEST(trusted_file)
{
	struct stat st = { .st_uid = 0, .st_mode = S_IFREG | 0755 };

	GS_EXPECT(gs_is_trusted_file(&st));
	st.st_mode = S_IFREG | 0775;
	GS_EXPECT(!gs_is_trusted_file(&st));
	st.st_mode = S_IFREG | 0757;
	GS_EXPECT(!gs_is_trusted_file(&st));
	st.st_mode = S_IFREG | 0755;
	st.st_uid = 65534;
	GS_EXPECT(!gs_is_trusted_file(&st));
}

GS_TEST_MAIN(parse_file_lines, parse_anonymous_and_pseudo, parse_escaped_newline,
	     parse_deleted_suffix, parse_path_with_spaces, parse_only_newline_is_escaped,
	     parse_dev_and_inode, parse_edge_input, find, find_empty, read_self,
	     read_self_odd_paths, read_missing_pid, mapping_open_checks_identity, trusted_file)
