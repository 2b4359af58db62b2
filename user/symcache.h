/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* symcache.h: user addresses to symbol/module/offset, ELF files cached by device and inode. */
#ifndef GS_SYMCACHE_H
#define GS_SYMCACHE_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

struct gs_symcache;
struct gs_elf;
struct gs_maps;
struct gs_mapping;
struct gs_py_names;

enum gs_frame_kind {
	GS_FRAME_NATIVE = 0,
	GS_FRAME_PYTHON, /* symbol: the code's qualified name; file and line its source */
	GS_FRAME_MARKER, /* symbol says what is missing here (native frames of a Python stack) */
};

struct gs_frame {
	uint64_t address;
	const char *symbol; /* demangled; NULL when no symbol covers the address */
	const char *module; /* path of the mapped file; for JIT code named by a perf map, the map
			     * ("/tmp/perf-PID.map"); NULL for other anonymous memory */
	uint64_t offset;    /* from the symbol's start, or the file offset without a symbol */
	const char *file;   /* GS_FRAME_PYTHON: the source file (co_filename) */
	int line;	    /* GS_FRAME_PYTHON: its line; -1 unknown */
	enum gs_frame_kind kind;
};

struct gs_symcache *gs_symcache__new(void);
/* The names of the Python frames that merged stacks stand in for (user/python_names.h). */
struct gs_py_names *gs_symcache__py_names(struct gs_symcache *cache);
void gs_symcache__free(struct gs_symcache *cache);

/*
 * Re-reads /proc/PID/maps. The previous snapshot is kept when the process is gone, so
 * addresses of an exited process still resolve. Returns 0 or -errno.
 */
int gs_symcache__refresh(struct gs_symcache *cache, pid_t pid);
/* Drops the snapshot and perf map of pid (after its last report). */
/*
 * child's snapshot, read now, or its parent's (what it maps until it execs) when child is
 * gone already: a short-lived child's stacks still resolve. 0, or -errno.
 */
int gs_symcache__inherit(struct gs_symcache *cache, pid_t child, pid_t parent);
void gs_symcache__forget(struct gs_symcache *cache, pid_t pid);
/* The current snapshot of pid, reading it if there is none; NULL if unreadable. Borrowed. */
const struct gs_maps *gs_symcache__maps(struct gs_symcache *cache, pid_t pid);

/*
 * Resolves addr in pid: a Python frame's stand-in address to its name, file and line;
 * native code from the ELF symbols of the mapped file, or for anonymous memory
 * from the process's /tmp/perf-PID.map (re-read when it grew). Strings in *frame are
 * borrowed from the cache and stay valid until the next refresh/forget of pid (module),
 * gs_symcache__free() (ELF symbol), or the next resolve/forget of pid (perf map symbol):
 * copy to keep.
 */
void gs_symcache__resolve(struct gs_symcache *cache, pid_t pid, uint64_t addr,
			  struct gs_frame *frame);

/*
 * The perf-map name of addr in pid (JIT code), re-reading the map when it grew; never
 * replaces the snapshot of pid's maps (it reads one only if there is none), so snapshots
 * handed out stay valid. Borrowed like a perf map symbol of gs_symcache__resolve(); NULL
 * when unnamed.
 */
const char *gs_symcache__jit_symbol(struct gs_symcache *cache, pid_t pid, uint64_t addr,
				    uint64_t *offset);

/*
 * Waits (bounded: gs_debuginfod__wait()) for the debug files asked of debuginfod, and adds
 * their symbols to the files they belong to. Returns the number of files that gained
 * symbols so far (growing: frames resolved before it grew may now be named, through
 * gs_symcache__resolve_module()). 0 at once when nothing was asked (DEBUGINFOD_URLS unset).
 */
int gs_symcache__await_debuginfo(struct gs_symcache *cache);
/*
 * The symbol at file offset file_off of module, a file whose debug file debuginfod
 * fetched (a frame resolved without a name before); its offset in *offset. Borrowed as
 * gs_symcache__resolve()'s ELF symbols; NULL if none.
 */
const char *gs_symcache__resolve_module(struct gs_symcache *cache, const char *module,
					uint64_t file_off, uint64_t *offset);

/*
 * The cached ELF of a mapping of pid, for naming addresses: the file the snapshot names by
 * device and inode, parsed once (through gs_mapping__open()); NULL when unreadable. Borrowed.
 */
struct gs_elf *gs_symcache__elf(struct gs_symcache *cache, const struct gs_maps *maps,
				const struct gs_mapping *m);
/*
 * The ELF of the file open at fd (st: its fstat), for probing it: a cached one only if it was
 * parsed from a file of the same device, inode, size and mtime, else parsed now from fd.
 * name is for messages. NULL when unreadable. Borrowed, valid until gs_symcache__free().
 */
struct gs_elf *gs_symcache__elf_fd(struct gs_symcache *cache, const char *name, int fd,
				   const struct stat *st);

#endif /* GS_SYMCACHE_H */
