/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* out_file.h: an output stream that is gzip-compressed when its name ends in ".gz". */
#ifndef GS_OUT_FILE_H
#define GS_OUT_FILE_H

#include <stdio.h>

/*
 * Opens path for writing (stdout when path is NULL or "-"). Writes through the returned
 * FILE are compressed for "*.gz" names. Returns NULL with errno set.
 */
FILE *gs_out_open(const char *path);
/* Flushes and closes (not stdout, which is only flushed). Returns 0 or -errno. */
int gs_out_close(FILE *f);

#endif /* GS_OUT_FILE_H */
