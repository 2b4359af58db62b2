/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* out_dir.h: a directory of report files: private, no symlinks followed, capped in size. */
#ifndef GS_OUT_DIR_H
#define GS_OUT_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gs_out_dir;
struct gs_out;

/*
 * Opens path (created 0700 when missing) once, by descriptor: a symlink, a directory owned
 * by another user than this process (root for the daemon) or one writable by group or others
 * is refused, since whoever can write there can swap the files this process writes. Files
 * this module creates start with prefix; only those count against max_bytes and are ever
 * removed. Temporaries a killed run left are removed. Returns 0 or -errno (logged in one
 * line); the caller frees with gs_out_dir__free().
 */
int gs_out_dir__open(struct gs_out_dir **out, const char *path, const char *prefix,
		     uint64_t max_bytes);
/*
 * Starts prefix + name, mode 0600: written to a temporary in the directory and renamed to
 * its name (never over an existing one) by gs_out__close(), removed on failure. The full
 * path goes to path_out. Returns 0 or -errno (logged).
 */
int gs_out_dir__create(struct gs_out_dir *d, const char *name, struct gs_out **out, char *path_out,
		       size_t len);
/*
 * The temporary for prefix + name, mode 0600, for another process to write through the
 * returned descriptor (O_CLOEXEC); its name in the directory goes to tmp, the final path
 * to path_out. Finish with gs_out_dir__commit() or gs_out_dir__discard(). Returns the
 * descriptor or -errno (logged).
 */
int gs_out_dir__create_tmp(struct gs_out_dir *d, const char *name, char *tmp, size_t tmp_len,
			   char *path_out, size_t len);
/* Renames tmp to prefix + name (never over an existing file). Returns 0 or -errno (logged). */
int gs_out_dir__commit(struct gs_out_dir *d, const char *tmp, const char *name);
/* Removes tmp, the temporary of a failed write. */
void gs_out_dir__discard(struct gs_out_dir *d, const char *tmp);
/* Removes the oldest files until those with the prefix total at most max_bytes. */
void gs_out_dir__enforce_cap(struct gs_out_dir *d);
/*
 * Of the files named prefix + sub (the newest always stays), keeps at most keep (0: any
 * number) totalling at most keep_bytes (0: any size), removing the oldest first.
 */
void gs_out_dir__retain(struct gs_out_dir *d, const char *sub, size_t keep, uint64_t keep_bytes);
void gs_out_dir__free(struct gs_out_dir *d);

#endif /* GS_OUT_DIR_H */
