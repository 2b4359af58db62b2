/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* out_dir.h: a directory of report files: private, no symlinks followed, capped in size. */
#ifndef GS_OUT_DIR_H
#define GS_OUT_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gs_out_dir;

/*
 * Opens path (created 0700 when missing; a symlink is refused). Files this module creates
 * start with prefix; only those count against max_bytes and are ever removed. Returns 0 or
 * -errno (logged); the caller frees with gs_out_dir__free().
 */
int gs_out_dir__open(struct gs_out_dir **out, const char *path, const char *prefix,
		     uint64_t max_bytes);
/*
 * Creates prefix + name, mode 0600, failing if it exists or is a symlink. The full path
 * goes to path_out. Returns a stream the caller closes with fclose(), or NULL (logged).
 */
FILE *gs_out_dir__create(struct gs_out_dir *d, const char *name, char *path_out, size_t len);
/* Removes the oldest files until those with the prefix total at most max_bytes. */
void gs_out_dir__enforce_cap(struct gs_out_dir *d);
/*
 * Of the files named prefix + sub (the newest always stays), keeps at most keep (0: any
 * number) totalling at most keep_bytes (0: any size), removing the oldest first.
 */
void gs_out_dir__retain(struct gs_out_dir *d, const char *sub, size_t keep, uint64_t keep_bytes);
void gs_out_dir__free(struct gs_out_dir *d);

#endif /* GS_OUT_DIR_H */
