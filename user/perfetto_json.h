/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* perfetto_json.h: a stream that takes Chrome Trace Event JSON and writes Perfetto's format. */
#ifndef GS_PERFETTO_JSON_H
#define GS_PERFETTO_JSON_H

#include <stdbool.h>
#include <stdio.h>

/*
 * The sink hook: a writer of the JSON timeline writes its document into the stream
 * gs_perfetto_json__file() returns (unbuffered; parsed as it comes, one event held at a time):
 * each event becomes a row for gs_perfetto__row(), each top-level value (the metadata) goes
 * to gs_perfetto__top_level(). The hot path, the trace writer's ordered events, skips the
 * document: gs_trace_writer__row_sink(w, gs_perfetto_json__row, pj) hands each one over whole.
 */
struct gs_perfetto_json;

/* Writes to out (borrowed, left open). Caller ends it with gs_perfetto_json__close(). */
struct gs_perfetto_json *gs_perfetto_json__new(FILE *out);
FILE *gs_perfetto_json__file(struct gs_perfetto_json *pj);
/*
 * One event object: JSON text, or the tape the trace writer renders for a row sink
 * (user/json_tape.h), len bytes. Returns 0, or -errno (the output failed).
 */
int gs_perfetto_json__row(void *pj, const char *json, size_t len);
/*
 * Ends the trace (open slices closed) and frees pj. Returns 0, -EINVAL (the document was
 * malformed, logged) or the output's -errno. NULL is ignored.
 */
int gs_perfetto_json__close(struct gs_perfetto_json *pj);

/* Whether path names a Perfetto trace: "*.pftrace", "*.perfetto-trace" (".gz" after either). */
bool gs_is_perfetto_path(const char *path);

#endif /* GS_PERFETTO_JSON_H */
