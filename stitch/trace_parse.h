/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* trace_parse.h: a streaming (yajl) reader of Chrome Trace Event JSON, one event at a time. */
#ifndef GS_TRACE_PARSE_H
#define GS_TRACE_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The document is fed in chunks of any size; memory is one event plus the top-level values
 * other than "traceEvents" (each capped at GS_TRACE_TOP_MAX bytes), however long the trace.
 *
 * Each event is handed over with its "pid", "ts" and integer "id" taken apart and every other field
 * re-serialized, compactly, as `rest`: `,"key":value,...` (a leading comma per field), so
 * a writer can put `{"pid":P,"ts":T` before it and `}` after. Numbers keep their text.
 */
#define GS_TRACE_TOP_MAX   (1 << 20)
#define GS_TRACE_TS_MAX_NS (1LL << 62) /* a larger |ts| is "out of range" */

struct gs_trace_event {
	char ph[8]; /* "" when absent */
	bool has_ts;
	int64_t ts_ns; /* "ts" (microseconds) in nanoseconds */
	bool has_pid;
	bool pid_is_str;
	int64_t pid;
	const char *pid_str; /* when pid_is_str */
	bool has_id;	     /* "id" was an integer: taken out of rest */
	int64_t id;
	const char *args_name; /* args.name when a string (process_name...), else NULL */
	bool is_process_name;  /* ph "M", name "process_name" */
	const char *rest;
	size_t rest_len;
	size_t args_start, args_end; /* the `,"args":{...}` field within rest; equal if none */
	uint64_t index;		     /* position in traceEvents */
};

struct gs_trace_parse_ops {
	void *ctx;
	/* each event; non-zero (a -errno) stops the parse with that error. NULL: skip events */
	int (*event)(void *ctx, const struct gs_trace_event *ev);
	/* a top-level value other than traceEvents, compact JSON (NULL when over the cap) */
	int (*top_level)(void *ctx, const char *key, const char *json, size_t len);
};

struct gs_trace_parser;

/* caller frees with gs_trace_parser__free(); NULL with errno set */
struct gs_trace_parser *gs_trace_parser__new(const struct gs_trace_parse_ops *ops);
/*
 * Parses the next chunk. Returns 0, -EINVAL for malformed input (see __error()), or the
 * callback's error. After an error the parser accepts nothing more.
 */
int gs_trace_parser__feed(struct gs_trace_parser *p, const void *buf, size_t len);
/* The input ended: checks that the document was complete. Returns as __feed(). */
int gs_trace_parser__finish(struct gs_trace_parser *p);
/* What was wrong ("ts is not a number"), and the byte offset in the (decompressed) text. */
const char *gs_trace_parser__error(const struct gs_trace_parser *p);
uint64_t gs_trace_parser__error_offset(const struct gs_trace_parser *p);
/* Bytes fed so far, and events seen. */
uint64_t gs_trace_parser__bytes(const struct gs_trace_parser *p);
uint64_t gs_trace_parser__events(const struct gs_trace_parser *p);
void gs_trace_parser__free(struct gs_trace_parser *p);

/*
 * Parses a JSON number of microseconds ("379465662.587", "1694039994139202", "-5", "1.5e3")
 * into nanoseconds, exactly where the text has at most 3 decimals, else rounded to nearest.
 * Returns 0, -EINVAL (not a number) or -ERANGE.
 */
int gs_parse_us_ns(const char *s, size_t len, int64_t *ns);
/* Parses a JSON integer; -EINVAL when it has a fraction or exponent, -ERANGE if too big. */
int gs_parse_i64(const char *s, size_t len, int64_t *v);
/*
 * Whether a trace file's first len bytes are a Perfetto protobuf trace's (record --format
 * perfetto): field 1 length-delimited (0x0a), then a length, which may be a whitespace byte.
 * JSON may begin with '\n' too, but then goes on, past more whitespace, to '{' or '['.
 */
bool gs_is_perfetto_data(const void *buf, size_t len);
/* Writes signed nanoseconds as microseconds with three decimals ("-0.005"). */
void gs_format_us_signed(int64_t ns, char *buf, size_t len);

#endif /* GS_TRACE_PARSE_H */
