/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* perf_map.h: symbols of JIT code from /tmp/perf-PID.map, the file JITs write for perf. */
#ifndef GS_PERF_MAP_H
#define GS_PERF_MAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * One line per symbol, "START SIZE NAME": START and SIZE in hex (an optional 0x is
 * accepted), NAME up to the end of the line and may hold spaces. Written by V8/Node, the
 * JVM's perf-map-agent, LuaJIT, .NET and Python 3.12+ (`python -X perf`, names like
 * "py::train_step:/src/train.py"). JITs only append; a later line for the same address
 * wins, as in perf.
 */
struct gs_perf_map;

/* Caller frees with gs_perf_map__free(); NULL on allocation failure. */
struct gs_perf_map *gs_perf_map__new(void);
void gs_perf_map__free(struct gs_perf_map *map);

/*
 * Adds the complete lines of text[0..len); returns the bytes consumed (up to the last
 * newline: a line still being written is read next time) or -ENOMEM. Malformed lines, lines
 * longer than GS_PERF_MAP_MAX_LINE and lines beyond GS_PERF_MAP_MAX_ENTRIES are skipped.
 * The parser of gs_perf_map__update, public for tests and fuzzing.
 */
long gs_perf_map__add_text(struct gs_perf_map *map, const char *text, size_t len);

/* What one process's perf map may cost at most: more is ignored, with one warning. */
#define GS_PERF_MAP_MAX_BYTES	(64UL << 20)
#define GS_PERF_MAP_MAX_ENTRIES (1UL << 20)
/* A longer line is skipped: it cannot be a symbol anyone wants to read. */
#define GS_PERF_MAP_MAX_LINE 4096

/*
 * Reads /tmp/perf-NSPID.map inside the process's root (NSPID: its pid in its own namespace),
 * only what was appended since the last call, in bounded chunks; starts over if the file
 * shrank or was replaced. Once the process is gone, /tmp/perf-PID.map, which JITs leave
 * behind, unless it was seen living in another PID namespace.
 *
 * The file belongs to whoever owns the process, and gpusnoop reads it as root, so as perf
 * does: opened without following a symlink (O_NOFOLLOW, and resolved with RESOLVE_IN_ROOT:
 * nothing outside the process's root), O_NONBLOCK, and used only when it is a regular file
 * owned by the process's real uid (learnt while it lived) or by root (then only with one
 * link, on its directory's mount). Anything else is ignored (-EPERM, one debug line): a
 * FIFO, a device, a symlink to another user's file. Returns 0, -ENOENT when there is no such
 * file, or another -errno. What was read stays on failure.
 */
int gs_perf_map__update(struct gs_perf_map *map, pid_t pid);

/*
 * Learns, while pid lives, whose it is (and its namespace pid), so that the file it leaves
 * behind can be checked after it is gone: the symbolizer calls it with each maps snapshot.
 */
void gs_perf_map__note_owner(struct gs_perf_map *map, pid_t pid);

/*
 * The symbol covering addr, reading what the JIT appended when addr is not in what was
 * read; NULL when still unnamed. Cheap on repeated misses: an address that was looked for
 * after the last read is not looked for again for a second, nor is a file that could not
 * be opened, and a check that finds the file unchanged reads nothing.
 */
const char *gs_perf_map__resolve(struct gs_perf_map *map, pid_t pid, uint64_t addr,
				 uint64_t *offset);

/* The symbol covering addr (borrowed, valid until the next update/free), or NULL. */
const char *gs_perf_map__lookup(struct gs_perf_map *map, uint64_t addr, uint64_t *offset);
/* The file last read, e.g. "/tmp/perf-123.map" as seen by the process; NULL before. */
const char *gs_perf_map__path(const struct gs_perf_map *map);
size_t gs_perf_map__count(const struct gs_perf_map *map);

#endif /* GS_PERF_MAP_H */
