/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* out_file.h: outputs written beside their name and renamed into place only when complete. */
#ifndef GS_OUT_FILE_H
#define GS_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/*
 * An output in progress. A regular file (new or existing) is written to a temporary beside it
 * (same directory, O_EXCL|O_NOFOLLOW) and renamed over the name by gs_out__sync() or
 * gs_out__close() once everything before is flushed; until then the old file stays as it
 * was, and on any failure the temporary is removed. Everything happens relative to one
 * directory descriptor opened once, so a directory swapped in meanwhile changes nothing.
 * stdout ("-" or NULL), /dev/stdout and /dev/fd/N, FIFOs and devices are written in place.
 * Write errors keep their errno (ENOSPC, EDQUOT, EFBIG...), compressed or not.
 */
struct gs_out;

enum {
	GS_OUT_GZIP = 1 << 0,	   /* gzip whatever the name (default: only a "*.gz" name) */
	GS_OUT_PLAIN = 1 << 1,	   /* never gzip, whatever the name */
	GS_OUT_NOREPLACE = 1 << 2, /* the rename fails if the name exists by then */
};

/*
 * Opens path for writing. An existing file keeps its mode (and, for root, its owner); a new
 * one gets 0666 less the umask. A symlink owned by someone other than the caller or root is
 * replaced, never followed. Returns 0 or -errno (logged); free with gs_out__close/__abort.
 */
int gs_out__open(struct gs_out **out, const char *path, unsigned int flags);
/*
 * Opens name, a plain file name, relative to dirfd (which the caller keeps open until the
 * output is closed), created with mode; display names it in messages.
 */
int gs_out__openat(struct gs_out **out, int dirfd, const char *name, const char *display,
		   mode_t mode, unsigned int flags);
/*
 * Adopts fd, already open for writing (the temporary another process renames when this one
 * succeeds): written in place, closed by gs_out__close(); gzip only with GS_OUT_GZIP.
 */
int gs_out__open_fd(struct gs_out **out, int fd, const char *display, unsigned int flags);
/* The stream to write to, valid until gs_out__close()/__abort(). */
FILE *gs_out__file(struct gs_out *o);
const char *gs_out__path(const struct gs_out *o);
/* The first write error (-errno: -ENOSPC...) it met so far, 0 while none. */
int gs_out__error(const struct gs_out *o);
/*
 * Makes what was written so far the file's content: flushed (a gzip output ends a gzip
 * member, so the file is valid), synced, renamed into place on the first call. Later
 * writes append. A failure after the first sync cuts the file back to what the last good
 * sync left, so it only ever holds whole parts. Returns 0 or -errno (logged).
 */
int gs_out__sync(struct gs_out *o);
/*
 * Finishes the output: flushed, checked, synced and renamed into place (stdout is only
 * flushed). On failure the temporary is removed (or the file cut back to its last sync).
 * Always frees o. Returns 0 or -errno (logged). NULL is ignored.
 */
int gs_out__close(struct gs_out *o);
/* Gives up: nothing more is written, the temporary is removed. Frees o; NULL is ignored. */
void gs_out__abort(struct gs_out *o);
/*
 * Gives up after a writer into o failed with err (-errno, often -EIO from ferror()): logs
 * the write error o saw first (ENOSPC...), else err, aborts as gs_out__abort(). Returns the
 * -errno it logged.
 */
int gs_out__fail(struct gs_out *o, int err);

/*
 * The temporary beside name in dirfd: ".NAME.tmp.XXXXXX", created O_EXCL|O_NOFOLLOW with
 * mode, its name in tmp. Returns the descriptor (O_CLOEXEC) or -errno.
 */
int gs_tmp_create(int dirfd, const char *name, mode_t mode, char *tmp, size_t len);
/*
 * Renames tmp to name (both in dirfd), failing with -EEXIST when noreplace and name exists.
 * The temporary is removed when this fails. Returns 0 or -errno.
 */
int gs_tmp_commit(int dirfd, const char *tmp, const char *name, bool noreplace);

#endif /* GS_OUT_FILE_H */
