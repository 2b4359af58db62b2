/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* perfetto_json.h: a stream that takes Chrome Trace Event JSON and writes Perfetto's format. */
#ifndef GS_PERFETTO_JSON_H
#define GS_PERFETTO_JSON_H

#include <stdbool.h>
#include <stdio.h>

/*
 * The sink hook: a writer of the JSON timeline (gs_trace_writer, gs_chrome_trace) writes
 * its document into the returned stream, which parses it as it comes (one row held at a
 * time) and hands each row to gs_perfetto__row(), each top-level value (the metadata) to
 * gs_perfetto__top_level(). fclose() ends the trace (open slices are closed) and fails
 * (EOF, errno set) when the document was malformed or out failed; out is borrowed and left
 * open. NULL with errno set.
 */
FILE *gs_perfetto_json__open(FILE *out);

/* Whether path names a Perfetto trace: "*.pftrace", "*.perfetto-trace" (".gz" after either). */
bool gs_is_perfetto_path(const char *path);

#endif /* GS_PERFETTO_JSON_H */
