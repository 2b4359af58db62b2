/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ctl_request.h: one `gpusnoop ctl` request line, parsed and range-checked; no I/O. */
#ifndef GS_CTL_REQUEST_H
#define GS_CTL_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

/* a request line, its newline included: longer ones are refused before they are parsed */
#define GS_CTL_REQUEST_MAX 1024
#define GS_CTL_EVENTS_MAX  128
#define GS_CTL_PID_MAX	   0x3fffffff
/* `record PID SECONDS`: long enough to catch a slow leak, short enough to end on its own */
#define GS_CTL_RECORD_MIN_S 0.1
#define GS_CTL_RECORD_MAX_S 3600.0

enum gs_ctl_verb {
	GS_CTL_STATUS,	 /* "status" */
	GS_CTL_LEAKS,	 /* "leaks PID [--children] [text|json]" */
	GS_CTL_SNAPSHOT, /* "snapshot PID" */
	GS_CTL_RECORD,	 /* "record PID [--children] SECONDS [EVENTS] [format=json|perfetto]" */
};

/* record format=: the trace's format; by default the daemon's trace-format setting */
enum gs_ctl_format { GS_CTL_FORMAT_DEFAULT, GS_CTL_FORMAT_JSON, GS_CTL_FORMAT_PERFETTO };

struct gs_ctl_request {
	enum gs_ctl_verb verb;
	int pid;			/* leaks, snapshot, record: 1..GS_CTL_PID_MAX */
	bool json;			/* leaks: JSON rather than text */
	bool children;			/* leaks, record: PID's descendants too ("--children") */
	double secs;			/* record: GS_CTL_RECORD_MIN_S..GS_CTL_RECORD_MAX_S */
	char events[GS_CTL_EVENTS_MAX]; /* record: `gpusnoop record -e` list; "": the default */
	enum gs_ctl_format format;	/* record: "format=json" or "format=perfetto" */
};

/*
 * Parses one request line (no newline; words separated by spaces or tabs). Returns 0 with
 * req filled, or -EINVAL with why in msg (one line, without "error: ", always terminated
 * when msg_len > 0; words of the request in it are cut short and non-printable bytes shown
 * as '?'). Pure: no I/O, no globals, no allocation.
 */
int gs_ctl_request__parse(const char *line, struct gs_ctl_request *req, char *msg, size_t msg_len);
/* The verb's word ("status", ...), for logs. */
const char *gs_ctl_verb_name(enum gs_ctl_verb verb);

#endif /* GS_CTL_REQUEST_H */
