// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_symcache.c: resolving addresses of this process and of an exited child to symbols. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "user/proc_maps.h"
#include "user/python_names.h"
#include "user/symcache.h"

/* above PID_MAX_LIMIT (4194304), so never a live process */
#define NO_PID 0x7ffffff0

__attribute__((noinline)) int probe_target(void);
__attribute__((noinline)) int probe_target(void)
{
	/* enough body that +3 stays inside the function */
	__asm__ volatile("" ::: "memory");
	return getpid() == 0 ? 1 : 42;
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

GS_TEST(resolve_own_function)
{
	struct gs_symcache *cache = gs_symcache__new();
	uint64_t addr = (uint64_t)(uintptr_t)&probe_target;
	char exe[PATH_MAX];
	struct gs_frame f;

	if (!GS_EXPECT(cache))
		return;
	GS_EXPECT(realpath("/proc/self/exe", exe) != NULL);

	gs_symcache__resolve(cache, getpid(), addr, &f);
	GS_EXPECT_EQ(f.address, addr);
	GS_EXPECT_STR_EQ(f.symbol, "probe_target");
	GS_EXPECT_STR_EQ(f.module, exe);
	GS_EXPECT_EQ(f.offset, 0);

	gs_symcache__resolve(cache, getpid(), addr + 3, &f);
	GS_EXPECT_EQ(f.address, addr + 3);
	GS_EXPECT_STR_EQ(f.symbol, "probe_target");
	GS_EXPECT_STR_EQ(f.module, exe);
	GS_EXPECT_EQ(f.offset, 3);
	gs_symcache__free(cache);
}

GS_TEST(resolve_unmapped)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_frame f;

	if (!GS_EXPECT(cache))
		return;
	gs_symcache__resolve(cache, getpid(), 8, &f);
	GS_EXPECT_EQ(f.address, 8);
	GS_EXPECT_STR_EQ(f.symbol, NULL);
	GS_EXPECT_STR_EQ(f.module, NULL);

	/* no process at all */
	gs_symcache__resolve(cache, NO_PID, (uint64_t)(uintptr_t)&probe_target, &f);
	GS_EXPECT_STR_EQ(f.symbol, NULL);
	GS_EXPECT_STR_EQ(f.module, NULL);
	gs_symcache__free(cache);
}

GS_TEST(resolve_libc_function)
{
	struct gs_symcache *cache = gs_symcache__new();
	/* dlsym, not &getpid: in a non-PIE build that could be the executable's PLT stub */
	void *fn = dlsym(RTLD_DEFAULT, "getpid");
	struct gs_frame f;

	if (!GS_EXPECT(cache) || !GS_EXPECT(fn))
		goto out;
	gs_symcache__resolve(cache, getpid(), (uint64_t)(uintptr_t)fn + 1, &f);
	GS_EXPECT(f.symbol && (!strcmp(f.symbol, "getpid") || !strcmp(f.symbol, "__getpid")));
	GS_EXPECT_EQ(f.offset, 1);
	GS_EXPECT(f.module && !strncmp(base_name(f.module), "libc.so", 7));
out:
	gs_symcache__free(cache);
}

GS_TEST(maps_snapshots)
{
	struct gs_symcache *cache = gs_symcache__new();
	const struct gs_maps *maps, *again;

	if (!GS_EXPECT(cache))
		return;
	maps = gs_symcache__maps(cache, getpid());
	if (GS_EXPECT(maps)) {
		GS_EXPECT_EQ(maps->pid, getpid());
		GS_EXPECT(gs_maps__find(maps, (uint64_t)(uintptr_t)&probe_target) != NULL);
	}
	/* read once, then served from the cache */
	again = gs_symcache__maps(cache, getpid());
	GS_EXPECT(again == maps);
	GS_EXPECT_EQ(gs_symcache__refresh(cache, getpid()), 0);
	GS_EXPECT(gs_symcache__maps(cache, getpid()) != NULL);

	GS_EXPECT(gs_symcache__refresh(cache, NO_PID) < 0);
	GS_EXPECT(gs_symcache__maps(cache, NO_PID) == NULL);

	gs_symcache__forget(cache, getpid());
	gs_symcache__forget(cache, NO_PID);
	GS_EXPECT(gs_symcache__maps(cache, getpid()) != NULL);
	gs_symcache__free(cache);
	gs_symcache__free(NULL);
}

GS_TEST(elf_cached_per_file)
{
	struct gs_symcache *cache = gs_symcache__new();
	const struct gs_maps *maps = cache ? gs_symcache__maps(cache, getpid()) : NULL;
	const struct gs_mapping *m;
	struct gs_elf *elf = NULL;
	size_t nr_same = 0;

	if (!GS_EXPECT(maps))
		goto out;
	m = gs_maps__find(maps, (uint64_t)(uintptr_t)&probe_target);
	if (!GS_EXPECT(m))
		goto out;
	elf = gs_symcache__elf(cache, maps, m);
	GS_EXPECT(elf != NULL);
	/* every mapping of the executable shares its one gs_elf */
	for (size_t i = 0; i < maps->nr; i++) {
		const struct gs_mapping *o = &maps->mappings[i];

		if (o->inode == m->inode && o->dev == m->dev) {
			nr_same++;
			GS_EXPECT(gs_symcache__elf(cache, maps, o) == elf);
		} else if (!o->path) {
			GS_EXPECT(gs_symcache__elf(cache, maps, o) == NULL);
		}
	}
	GS_EXPECT(nr_same >= 2);
out:
	gs_symcache__free(cache);
}

/* The snapshot outlives the process: frames of a process that just exited still resolve. */
GS_TEST(resolve_after_exit)
{
	struct gs_symcache *cache = gs_symcache__new();
	uint64_t addr = (uint64_t)(uintptr_t)&probe_target + 1;
	int fds[2] = { -1, -1 }, status;
	struct gs_frame f;
	pid_t child;
	char c;

	if (!GS_EXPECT(cache) || !GS_EXPECT_EQ(pipe(fds), 0))
		goto out;
	fflush(stdout);
	child = fork();
	if (!GS_EXPECT(child >= 0))
		goto out;
	if (child == 0) {
		close(fds[1]);
		/* the same executable at the same addresses; wait for the parent */
		_exit(read(fds[0], &c, 1) < 0 ? 1 : 0);
	}
	close(fds[0]);
	fds[0] = -1;
	GS_EXPECT_EQ(gs_symcache__refresh(cache, child), 0);
	close(fds[1]);
	fds[1] = -1;
	GS_EXPECT_EQ(waitpid(child, &status, 0), child);
	GS_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	gs_symcache__resolve(cache, child, addr, &f);
	GS_EXPECT_STR_EQ(f.symbol, "probe_target");
	GS_EXPECT_EQ(f.offset, 1);
	/* a failed re-read keeps the snapshot */
	GS_EXPECT(gs_symcache__refresh(cache, child) < 0);
	gs_symcache__resolve(cache, child, addr, &f);
	GS_EXPECT_STR_EQ(f.symbol, "probe_target");

	gs_symcache__forget(cache, child);
	gs_symcache__resolve(cache, child, addr, &f);
	GS_EXPECT_STR_EQ(f.symbol, NULL);
out:
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	gs_symcache__free(cache);
}

/* A child that waits until its pipe closes; -1 when fork failed. */
static pid_t waiting_child(int *write_end)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(fds[1]);
		_exit(read(fds[0], &c, 1) < 0 ? 1 : 0);
	}
	close(fds[0]);
	*write_end = fds[1];
	return pid;
}

GS_TEST(forgetting_one_process_keeps_the_others_snapshots)
{
	struct gs_symcache *cache = gs_symcache__new();
	int fd_a = -1, fd_b = -1;
	pid_t a = waiting_child(&fd_a), b = waiting_child(&fd_b);
	const struct gs_maps *of_a;

	if (!GS_EXPECT(cache) || !GS_EXPECT(a > 0) || !GS_EXPECT(b > 0))
		goto out;
	GS_EXPECT_EQ(gs_symcache__refresh(cache, getpid()), 0);
	GS_EXPECT_EQ(gs_symcache__refresh(cache, a), 0);
	of_a = gs_symcache__maps(cache, a);
	/* the first entry goes, the last takes its place, then b comes after it */
	gs_symcache__forget(cache, getpid());
	GS_EXPECT_EQ(gs_symcache__refresh(cache, b), 0);
	GS_EXPECT(gs_symcache__maps(cache, a) == of_a); /* still the snapshot, not b's */
	GS_EXPECT(gs_symcache__maps(cache, b) != of_a);
out:
	if (fd_a >= 0)
		close(fd_a);
	if (fd_b >= 0)
		close(fd_b);
	if (a > 0)
		waitpid(a, NULL, 0);
	if (b > 0)
		waitpid(b, NULL, 0);
	gs_symcache__free(cache);
}

/*
 * issue 22 finding 4: a tagged address in pid's stack names a Python frame only if it was
 * made for pid; another's id, or garbage, is an unknown native address, never "[python frame]"
 */
GS_TEST(python_ids_resolve_only_in_their_own_process)
{
	struct gs_symcache *cache = gs_symcache__new();
	struct gs_py_names *names = gs_symcache__py_names(cache);
	pid_t me = getpid();
	uint64_t theirs = gs_py_names__intern(names, NO_PID, 0x1000, 0, "secret", "/s.py", 7);
	uint64_t mine = gs_py_names__intern(names, me, 0x2000, 0, "mine", "/m.py", 3);
	uint64_t marker = gs_py_names__marker(names, me);
	struct gs_frame f;

	gs_symcache__resolve(cache, me, theirs, &f);
	GS_EXPECT_EQ(f.kind, GS_FRAME_NATIVE);
	GS_EXPECT(!f.symbol && !f.file && !f.module);
	GS_EXPECT_EQ(f.address, theirs);
	gs_symcache__resolve(cache, me, GS_PY_ADDR_TAG | 0x123456, &f);
	GS_EXPECT_EQ(f.kind, GS_FRAME_NATIVE);
	GS_EXPECT(!f.symbol);
	gs_symcache__resolve(cache, me, mine, &f);
	GS_EXPECT_EQ(f.kind, GS_FRAME_PYTHON);
	GS_EXPECT_STR_EQ(f.symbol, "mine");
	GS_EXPECT_EQ(f.line, 3);
	gs_symcache__resolve(cache, me, marker, &f);
	GS_EXPECT_EQ(f.kind, GS_FRAME_MARKER);
	GS_EXPECT_STR_EQ(f.symbol, "[native frames missing]");
	gs_symcache__resolve(cache, NO_PID, theirs, &f);
	GS_EXPECT_STR_EQ(f.symbol, "secret");
	gs_symcache__free(cache);
}

GS_TEST(gone_child_inherits_its_parents_snapshot)
{
	struct gs_symcache *cache = gs_symcache__new();
	const struct gs_maps *mine, *child;

	GS_EXPECT(cache != NULL);
	if (!cache)
		return;
	mine = gs_symcache__maps(cache, getpid());
	GS_EXPECT(mine != NULL);
	/* NO_PID is no process: its fork record came after it was gone */
	GS_EXPECT_EQ(gs_symcache__inherit(cache, NO_PID, getpid()), 0);
	child = gs_symcache__maps(cache, NO_PID);
	GS_EXPECT(child != NULL && mine && child->nr == mine->nr && child->pid == NO_PID);
	if (child && mine && child->nr && child->mappings[0].path && mine->mappings[0].path)
		GS_EXPECT_STR_EQ(child->mappings[0].path, mine->mappings[0].path);
	GS_EXPECT_EQ(gs_symcache__inherit(cache, NO_PID - 1, NO_PID - 2), -ESRCH);
	gs_symcache__free(cache);
}

GS_TEST_MAIN(resolve_own_function, resolve_unmapped, resolve_libc_function, maps_snapshots,
	     elf_cached_per_file, resolve_after_exit,
	     forgetting_one_process_keeps_the_others_snapshots,
	     python_ids_resolve_only_in_their_own_process, gone_child_inherits_its_parents_snapshot)
