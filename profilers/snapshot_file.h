/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* snapshot_file.h: PyTorch memory snapshot files: their names, and writing one whole. */
#ifndef GS_SNAPSHOT_FILE_H
#define GS_SNAPSHOT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gs_mem_model;

/*
 * path with ".PID" (pid > 0) and ".SEQ" (seq > 0) put before the file name's extension:
 * ("snap.pickle", 0, 2) -> "snap.2.pickle", ("out/snap", 42, 0) -> "out/snap.42". Returns 0,
 * or -ENAMETOOLONG when it does not fit in len.
 */
int gs_snapshot_file_name(const char *path, pid_t pid, unsigned int seq, char *buf, size_t len);
/*
 * Writes pid's snapshot (gs_mem_model__write_snapshot) to path: to a temporary renamed into
 * place once whole. Returns 0 or -errno (logged).
 */
int gs_snapshot_file_write(struct gs_mem_model *m, pid_t pid, uint64_t now_ns, const char *path);

/*
 * The snapshot files of a moment: only's (only > 0, when it is primary or showed PyTorch),
 * else primary's and every process's with PyTorch state. primary's file is path itself (with seq), the others' get ".PID" too. Each is
 * logged ("pid P: memory snapshot (reason) written to F"). Returns 0 or the first -errno.
 */
int gs_snapshot_files_write(struct gs_mem_model *m, const char *path, pid_t primary, pid_t only,
			    unsigned int seq, const char *reason, uint64_t now_ns);

#endif /* GS_SNAPSHOT_FILE_H */
