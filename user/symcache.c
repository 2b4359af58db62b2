// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* symcache.c: per-process maps snapshots and per-file symbol tables for symbolization. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/array.h"
#include "user/debuginfo.h"
#include "user/debuginfod_client.h"
#include "user/elf_file.h"
#include "user/log.h"
#include "user/perf_map.h"
#include "user/pid_index.h"
#include "user/proc_maps.h"
#include "user/python_names.h"
#include "user/stack_marks.h"
#include "user/symcache.h"

/*
 * A file parsed once, named by its identity when it was opened: device and inode, and
 * also size and modification time, as an inode number is reused once its file is deleted.
 */
struct cached_file {
	uint64_t dev, inode, size;
	struct timespec mtime;
	struct gs_elf *elf; /* NULL: tried and failed, do not retry */
};

struct proc_snapshot {
	pid_t pid;
	struct gs_maps *maps;
	struct gs_perf_map *perf_map; /* JIT symbols; NULL until an anonymous address is seen */
};

/* A stripped file whose debug file was asked of debuginfod: merged into elf when fetched. */
struct fetch {
	char hex[2 * 64 + 1];
	char *path; /* the file's name, as frames name their module */
	struct gs_elf *elf;
};

struct gs_symcache {
	struct cached_file *files;
	size_t nr_files, cap_files;
	struct proc_snapshot *procs;
	size_t nr_procs, cap_procs;
	struct gs_pid_index proc_index; /* pid -> position in procs */
	struct gs_py_names *py_names;	/* NULL until a Python frame is named */
	/* debuginfod (DEBUGINFOD_URLS): the client, NULL until a fetch is first wanted */
	struct gs_debuginfod *debuginfod;
	bool debuginfod_tried;
	struct fetch *fetches;
	size_t nr_fetches, cap_fetches;
	int nr_merged; /* fetched files that added symbols, so far */
};

struct gs_symcache *gs_symcache__new(void)
{
	return calloc(1, sizeof(struct gs_symcache));
}

struct gs_py_names *gs_symcache__py_names(struct gs_symcache *cache)
{
	if (!cache->py_names)
		cache->py_names = gs_py_names__new();
	return cache->py_names;
}

void gs_symcache__free(struct gs_symcache *cache)
{
	if (!cache)
		return;
	gs_debuginfod__free(cache->debuginfod); /* first: its worker stops */
	for (size_t i = 0; i < cache->nr_fetches; i++)
		free(cache->fetches[i].path);
	free(cache->fetches);
	for (size_t i = 0; i < cache->nr_files; i++)
		gs_elf__free(cache->files[i].elf);
	for (size_t i = 0; i < cache->nr_procs; i++) {
		gs_maps__free(cache->procs[i].maps);
		gs_perf_map__free(cache->procs[i].perf_map);
	}
	gs_py_names__free(cache->py_names);
	free(cache->files);
	free(cache->procs);
	gs_pid_index__release(&cache->proc_index);
	free(cache);
}

static struct proc_snapshot *find_proc(struct gs_symcache *cache, pid_t pid)
{
	size_t pos;

	return gs_pid_index__get(&cache->proc_index, pid, &pos) ? &cache->procs[pos] : NULL;
}

/*
 * With debuginfod: the files pid runs are parsed now, so that the debug files of stripped
 * ones are asked for before their first sample is symbolized (the fetch is not waited for).
 */
static void prefetch_debuginfo(struct gs_symcache *cache, const struct gs_maps *maps)
{
	if (!gs_debuginfod_enabled() || (cache->debuginfod_tried && !cache->debuginfod))
		return;
	for (size_t i = 0; i < maps->nr; i++)
		if (maps->mappings[i].path && maps->mappings[i].exec)
			gs_symcache__elf(cache, maps, &maps->mappings[i]);
}

int gs_symcache__refresh(struct gs_symcache *cache, pid_t pid)
{
	struct proc_snapshot *p = find_proc(cache, pid);
	struct gs_maps *maps = gs_maps__read(pid);

	if (!maps)
		return -errno;
	if (!p) {
		if (GS_ARRAY_RESERVE(cache->procs, cache->nr_procs, cache->cap_procs, 16) ||
		    gs_pid_index__set(&cache->proc_index, pid, cache->nr_procs)) {
			gs_maps__free(maps);
			return -ENOMEM;
		}
		p = &cache->procs[cache->nr_procs++];
		p->pid = pid;
		p->maps = NULL;
		p->perf_map = NULL;
	}
	gs_maps__free(p->maps);
	p->maps = maps;
	prefetch_debuginfo(cache, maps);
	/* while it lives: the perf map it may leave behind is checked against its owner */
	if (!p->perf_map)
		p->perf_map = gs_perf_map__new();
	if (p->perf_map)
		gs_perf_map__note_owner(p->perf_map, pid);
	return 0;
}

/* A deep copy of maps, as pid's. NULL with errno set. */
static struct gs_maps *copy_maps(const struct gs_maps *maps, pid_t pid)
{
	struct gs_maps *out = calloc(1, sizeof(*out));

	if (!out)
		return NULL;
	out->pid = pid;
	out->mappings = calloc(maps->nr ? maps->nr : 1, sizeof(*out->mappings));
	if (!out->mappings) {
		free(out);
		return NULL;
	}
	for (; out->nr < maps->nr; out->nr++) {
		struct gs_mapping *m = &out->mappings[out->nr];

		*m = maps->mappings[out->nr];
		if (m->path && !(m->path = strdup(m->path))) {
			gs_maps__free(out);
			errno = ENOMEM;
			return NULL;
		}
	}
	return out;
}

int gs_symcache__inherit(struct gs_symcache *cache, pid_t child, pid_t parent)
{
	struct proc_snapshot *p, *from;
	struct gs_maps *maps;

	if (find_proc(cache, child) || gs_symcache__refresh(cache, child) == 0)
		return 0;
	from = find_proc(cache, parent);
	if (!from || !from->maps)
		return -ESRCH;
	maps = copy_maps(from->maps, child);
	if (!maps)
		return -ENOMEM;
	if (GS_ARRAY_RESERVE(cache->procs, cache->nr_procs, cache->cap_procs, 16) ||
	    gs_pid_index__set(&cache->proc_index, child, cache->nr_procs)) {
		gs_maps__free(maps);
		return -ENOMEM;
	}
	p = &cache->procs[cache->nr_procs++];
	*p = (struct proc_snapshot){ .pid = child, .maps = maps };
	return 0;
}

void gs_symcache__forget(struct gs_symcache *cache, pid_t pid)
{
	struct proc_snapshot *p = find_proc(cache, pid);

	gs_py_names__forget(cache->py_names, pid);
	if (!p)
		return;
	gs_maps__free(p->maps);
	gs_perf_map__free(p->perf_map);
	gs_pid_index__remove(&cache->proc_index, pid);
	/* the last entry fills the hole; its index entry follows (it exists: no allocation) */
	*p = cache->procs[--cache->nr_procs];
	if (p != &cache->procs[cache->nr_procs])
		gs_pid_index__set(&cache->proc_index, p->pid, (size_t)(p - cache->procs));
}

const struct gs_maps *gs_symcache__maps(struct gs_symcache *cache, pid_t pid)
{
	struct proc_snapshot *p = find_proc(cache, pid);

	if (!p && gs_symcache__refresh(cache, pid) == 0)
		p = find_proc(cache, pid);
	return p ? p->maps : NULL;
}

static bool same_file(const struct cached_file *f, const struct stat *st)
{
	return f->dev == st->st_dev && f->inode == st->st_ino && f->size == (uint64_t)st->st_size &&
	       f->mtime.tv_sec == st->st_mtim.tv_sec && f->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

/*
 * Asks debuginfod (only with DEBUGINFOD_URLS set) for the debug file of the stripped file at
 * fd, named name. The fetch runs in the client's thread: the caller goes on without it.
 */
static void want_fetch(struct gs_symcache *cache, struct gs_elf *elf, int fd, const char *name)
{
	struct fetch *f;
	char hex[sizeof(f->hex)];

	if (!cache->debuginfod_tried && gs_debuginfod_enabled()) {
		cache->debuginfod_tried = true;
		cache->debuginfod = gs_debuginfod__new();
		if (!cache->debuginfod)
			gs_warn("debuginfod: %s: no debug files fetched",
				errno == ENOENT ? "libdebuginfod.so.1 not found" : strerror(errno));
	}
	if (!cache->debuginfod || gs_debuginfo__build_id(fd, hex) ||
	    GS_ARRAY_RESERVE(cache->fetches, cache->nr_fetches, cache->cap_fetches, 16))
		return;
	f = &cache->fetches[cache->nr_fetches];
	memcpy(f->hex, hex, sizeof(hex));
	f->elf = elf;
	f->path = strdup(name);
	if (!f->path)
		return;
	if (gs_debuginfod__request(cache->debuginfod, hex)) {
		free(f->path);
		return;
	}
	cache->nr_fetches++;
	gs_dbg("debuginfod: asked for %s (%s)", hex, name);
}

/* Merges the fetched debug files into their files' symbols (counted in nr_merged). */
static void collect_fetches(struct gs_symcache *cache)
{
	char hex[2 * 64 + 1];
	int fd;

	while ((fd = gs_debuginfod__take(cache->debuginfod, hex)) != -EAGAIN) {
		for (size_t i = 0; i < cache->nr_fetches; i++) {
			struct fetch *f = &cache->fetches[i];
			int n;

			if (strcmp(f->hex, hex))
				continue;
			n = fd < 0 ? fd : gs_debuginfo__merge(f->elf, fd, hex);
			if (n > 0)
				cache->nr_merged++;
			if (n < 0)
				gs_dbg("debuginfod: %s for %s: %s", hex, f->path, strerror(-n));
			else
				gs_dbg("debuginfod: %s for %s: %s", hex, f->path,
				       n ? "symbols added" : "no symbols");
		}
		if (fd >= 0)
			close(fd);
	}
}

int gs_symcache__await_debuginfo(struct gs_symcache *cache)
{
	if (!cache->debuginfod || !cache->nr_fetches)
		return 0;
	gs_debuginfod__wait(cache->debuginfod);
	collect_fetches(cache);
	return cache->nr_merged;
}

const char *gs_symcache__resolve_module(struct gs_symcache *cache, const char *module,
					uint64_t file_off, uint64_t *offset)
{
	uint64_t vaddr;

	for (size_t i = 0; module && i < cache->nr_fetches; i++) {
		struct fetch *f = &cache->fetches[i];

		if (!strcmp(f->path, module) && !gs_elf__offset_to_vaddr(f->elf, file_off, &vaddr))
			return gs_elf__symbolize(f->elf, vaddr, offset);
	}
	return NULL;
}

struct gs_elf *gs_symcache__elf_fd(struct gs_symcache *cache, const char *name, int fd,
				   const struct stat *st)
{
	struct cached_file *f;

	/*
	 * Entries are never replaced, only added: symbol names handed out stay valid until
	 * gs_symcache__free(). The newest of one inode comes last, so search backwards.
	 */
	for (size_t i = cache->nr_files; i-- > 0;)
		if (same_file(&cache->files[i], st))
			return cache->files[i].elf;
	if (GS_ARRAY_RESERVE(cache->files, cache->nr_files, cache->cap_files, 32))
		return NULL;
	f = &cache->files[cache->nr_files++];
	*f = (struct cached_file){
		.dev = st->st_dev,
		.inode = st->st_ino,
		.size = (uint64_t)st->st_size,
		.mtime = st->st_mtim,
		.elf = gs_elf__open_fd(fd),
	};
	if (!f->elf)
		gs_dbg("symbols of %s: %s", name, strerror(errno));
	else if (!gs_elf__has_symtab(f->elf) && gs_debuginfo__load(f->elf, fd, name) <= 0)
		want_fetch(cache, f->elf, fd, name); /* stripped, no debug file here */
	return f->elf;
}

struct gs_elf *gs_symcache__elf(struct gs_symcache *cache, const struct gs_maps *maps,
				const struct gs_mapping *m)
{
	struct gs_elf *elf;
	struct stat st;
	int fd;

	if (!m->path)
		return NULL;
	/* names only: the newest parse of the inode the snapshot names, unverified */
	for (size_t i = cache->nr_files; i-- > 0;)
		if (cache->files[i].dev == m->dev && cache->files[i].inode == m->inode)
			return cache->files[i].elf;
	fd = gs_mapping__open(maps, m, &st);
	if (fd < 0) {
		gs_dbg("symbols of %s: %s", m->path, strerror(-fd));
		errno = -fd;
		return NULL;
	}
	elf = gs_symcache__elf_fd(cache, m->path, fd, &st);
	close(fd);
	return elf;
}

/*
 * Anonymous executable memory is JIT code: its names are in the perf map file, read again
 * when an address is not found in what was read (the JIT appends as it compiles).
 */
const char *gs_symcache__jit_symbol(struct gs_symcache *cache, pid_t pid, uint64_t addr,
				    uint64_t *offset)
{
	struct proc_snapshot *p = find_proc(cache, pid);

	/* the perf map lives with a snapshot: take the first one if there is none yet */
	if (!p && gs_symcache__refresh(cache, pid) == 0)
		p = find_proc(cache, pid);
	if (!p)
		return NULL;
	if (!p->perf_map) {
		p->perf_map = gs_perf_map__new();
		if (!p->perf_map)
			return NULL;
	}
	return gs_perf_map__resolve(p->perf_map, pid, addr, offset);
}

/*
 * Anonymous executable memory is JIT code: its names are in the perf map file, read again
 * when an address is not found in what was read (the JIT appends as it compiles).
 */
static void resolve_jit(struct gs_symcache *cache, pid_t pid, uint64_t addr, struct gs_frame *frame)
{
	struct proc_snapshot *p;
	uint64_t offset;
	const char *name = gs_symcache__jit_symbol(cache, pid, addr, &offset);

	if (!name)
		return;
	p = find_proc(cache, pid);
	frame->symbol = name;
	frame->offset = offset;
	frame->module = gs_perf_map__path(p->perf_map);
}

/*
 * A stand-in address of a merged Python stack (user/python.c): a stack mark
 * (user/stack_marks.h), or the name it was given, if it was given for pid. Anything else with the tag is a native frame pointer chain's garbage or
 * forgery (the process wrote it): an unknown native address, never a Python frame.
 */
static void resolve_python(struct gs_symcache *cache, pid_t pid, uint64_t addr,
			   struct gs_frame *frame)
{
	const struct gs_py_name *n;

	if (gs_stack_mark_is(addr)) {
		*frame = (struct gs_frame){ .address = addr, .line = -1, .kind = GS_FRAME_MARKER };
		frame->symbol = gs_stack_mark_name(addr);
		return;
	}
	n = gs_py_names__get(cache->py_names, pid, addr);
	if (!n) {
		*frame = (struct gs_frame){ .address = addr, .offset = addr };
		return;
	}
	*frame = (struct gs_frame){ .address = addr, .line = -1, .kind = GS_FRAME_PYTHON };
	if (n->marker) {
		frame->kind = GS_FRAME_MARKER;
		frame->symbol = n->qualname;
	} else {
		frame->address = n->code;
		frame->symbol = n->qualname;
		frame->file = n->file;
		frame->line = n->line;
	}
}

void gs_symcache__resolve(struct gs_symcache *cache, pid_t pid, uint64_t addr,
			  struct gs_frame *frame)
{
	const struct gs_maps *maps = gs_symcache__maps(cache, pid);
	const struct gs_mapping *m = maps ? gs_maps__find(maps, addr) : NULL;
	struct gs_elf *elf;
	uint64_t file_off, vaddr;

	if (gs_debuginfod__has_news(cache->debuginfod))
		collect_fetches(cache); /* debug files fetched since: names from now on */
	if (gs_py_is_addr(addr)) {
		resolve_python(cache, pid, addr, frame);
		return;
	}
	/*
	 * A library loaded since the snapshot, or code mapped where the snapshot has data
	 * (code runs only from executable mappings): look again while the process lives.
	 */
	if ((!m || !m->exec) && gs_symcache__refresh(cache, pid) == 0) {
		maps = gs_symcache__maps(cache, pid);
		m = gs_maps__find(maps, addr);
	}
	*frame = (struct gs_frame){ .address = addr, .offset = addr };
	/* anonymous memory, or a stale snapshot of a gone process: JIT code mapped since? */
	if (!m || !m->path || !m->exec) {
		resolve_jit(cache, pid, addr, frame);
		if (frame->symbol || !m || !m->path)
			return;
	}
	frame->module = m->path;
	file_off = addr - m->start + m->pgoff;
	frame->offset = file_off;
	elf = gs_symcache__elf(cache, maps, m);
	if (!elf || gs_elf__offset_to_vaddr(elf, file_off, &vaddr))
		return;
	frame->symbol = gs_elf__symbolize(elf, vaddr, &frame->offset);
	if (!frame->symbol)
		frame->offset = file_off;
}
