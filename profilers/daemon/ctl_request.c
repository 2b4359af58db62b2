// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ctl_request.c: parsing the control socket's request lines; any user may send them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/daemon/ctl_request.h"
#include "profilers/daemon/event_list.h"

#define MAX_WORDS 7 /* one more than the longest request, to see extra words */
#define SHOW_MAX  32
#define USAGE                                                                                   \
	"status, leaks PID [--children] [json], snapshot PID, record PID [--children] SECONDS " \
	"[EVENTS] [format=json|perfetto]"
#define CHILDREN "--children"
#define FORMAT	 "format="

static const char *const verb_names[] = {
	[GS_CTL_STATUS] = "status",
	[GS_CTL_LEAKS] = "leaks",
	[GS_CTL_SNAPSHOT] = "snapshot",
	[GS_CTL_RECORD] = "record",
};

const char *gs_ctl_verb_name(enum gs_ctl_verb verb)
{
	return (unsigned int)verb < sizeof(verb_names) / sizeof(verb_names[0]) ? verb_names[verb]
									       : "?";
}

/*
 * A word of the request as it may be echoed in a reply or a log: at most SHOW_MAX bytes,
 * printable ASCII only, so a reply stays one short line whatever the client sent.
 */
static const char *show(const char *word, char *buf, size_t len)
{
	size_t i;

	for (i = 0; word[i] && i < SHOW_MAX && i + 4 < len; i++)
		buf[i] = word[i] >= 0x20 && word[i] < 0x7f ? word[i] : '?';
	if (word[i] && i + 4 <= len) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

/* fmt takes one %s: the word, shown safely */
static int fail(char *msg, size_t msg_len, const char *fmt, const char *word)
{
	char shown[SHOW_MAX + 4];

	if (msg_len)
		snprintf(msg, msg_len, fmt, word ? show(word, shown, sizeof(shown)) : "");
	return -EINVAL;
}

/* Digits only, 1..GS_CTL_PID_MAX: no sign, no spaces, no base prefix. */
static int parse_pid(const char *word, int *out)
{
	long v = 0;

	if (!*word || strspn(word, "0123456789") != strlen(word))
		return -EINVAL;
	for (const char *c = word; *c; c++) {
		v = v * 10 + (*c - '0');
		if (v > GS_CTL_PID_MAX)
			return -EINVAL;
	}
	if (!v)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* A decimal number of seconds in range: no "nan", "inf", hex, sign or overflow. */
static int parse_secs(const char *word, double *out)
{
	char *end;
	double v;

	if (!*word || word[0] == '-' || word[0] == '+' ||
	    strspn(word, "0123456789.eE+-") != strlen(word))
		return -EINVAL;
	errno = 0;
	v = strtod(word, &end);
	if (errno || *end || end == word || !isfinite(v) || v < GS_CTL_RECORD_MIN_S ||
	    v > GS_CTL_RECORD_MAX_S)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * Takes "--children" out of the words after the verb, into req->children. Returns 0, or
 * -EINVAL (msg set) when it is given twice or to a request that does not take it.
 */
static int take_children(struct gs_ctl_request *req, char **w, size_t *n, char *msg, size_t msg_len)
{
	size_t kept = 1;

	for (size_t i = 1; i < *n; i++) {
		if (strcmp(w[i], CHILDREN)) {
			w[kept++] = w[i];
			continue;
		}
		if (req->children)
			return fail(msg, msg_len, "'%s' given twice", CHILDREN);
		req->children = true;
	}
	*n = kept;
	if (req->children && req->verb != GS_CTL_LEAKS && req->verb != GS_CTL_RECORD)
		return fail(msg, msg_len, "'%s' goes with leaks and record", CHILDREN);
	return 0;
}

/* Takes a record's "format=..." out of the words after the verb, into req->format. */
static int take_format(struct gs_ctl_request *req, char **w, size_t *n, char *msg, size_t msg_len)
{
	size_t kept = 1;

	for (size_t i = 1; i < *n; i++) {
		const char *v = w[i] + strlen(FORMAT);

		if (strncmp(w[i], FORMAT, strlen(FORMAT))) {
			w[kept++] = w[i];
			continue;
		}
		if (req->verb != GS_CTL_RECORD)
			return fail(msg, msg_len, "'%s' goes with record", w[i]);
		if (req->format)
			return fail(msg, msg_len, "'%s' given twice", FORMAT);
		if (!strcmp(v, "json"))
			req->format = GS_CTL_FORMAT_JSON;
		else if (!strcmp(v, "perfetto"))
			req->format = GS_CTL_FORMAT_PERFETTO;
		else
			return fail(msg, msg_len, "unknown trace format '%s' (json or perfetto)",
				    v);
	}
	*n = kept;
	return 0;
}

int gs_ctl_request__parse(const char *line, struct gs_ctl_request *req, char *msg, size_t msg_len)
{
	char copy[GS_CTL_REQUEST_MAX], *save = NULL, *w[MAX_WORDS];
	size_t n = 0, want;
	int verb = -1;

	memset(req, 0, sizeof(*req));
	if (msg_len)
		msg[0] = '\0';
	if (strlen(line) >= sizeof(copy)) {
		if (msg_len)
			snprintf(msg, msg_len, "request too long (at most %d bytes)",
				 GS_CTL_REQUEST_MAX - 1);
		return -EINVAL;
	}
	strcpy(copy, line);
	for (char *t = strtok_r(copy, " \t", &save); t && n < MAX_WORDS;
	     t = strtok_r(NULL, " \t", &save))
		w[n++] = t;
	for (size_t i = 0; n && i < sizeof(verb_names) / sizeof(verb_names[0]); i++)
		if (!strcmp(w[0], verb_names[i]))
			verb = (int)i;
	if (verb < 0)
		return fail(msg, msg_len, "unknown request '%s' (" USAGE ")", n ? w[0] : NULL);
	req->verb = (enum gs_ctl_verb)verb;
	if (take_children(req, w, &n, msg, msg_len) || take_format(req, w, &n, msg, msg_len))
		return -EINVAL;
	switch (req->verb) {
	case GS_CTL_STATUS:
		want = 1;
		break;
	case GS_CTL_LEAKS:
		want = 3;
		break;
	case GS_CTL_SNAPSHOT:
		want = 2;
		break;
	case GS_CTL_RECORD:
		want = 4;
		break;
	default:
		return -EINVAL;
	}
	if (n > want)
		return fail(msg, msg_len, "unexpected '%s' after the request (" USAGE ")", w[want]);
	if (req->verb == GS_CTL_STATUS)
		return 0;
	if (n < 2)
		return fail(msg, msg_len, "%s needs a pid (" USAGE ")", w[0]);
	if (parse_pid(w[1], &req->pid))
		return fail(msg, msg_len, "'%s' is not a pid", w[1]);
	if (req->verb == GS_CTL_LEAKS && n == 3) {
		if (strcmp(w[2], "json") && strcmp(w[2], "text"))
			return fail(msg, msg_len, "unknown format '%s' (text or json)", w[2]);
		req->json = !strcmp(w[2], "json");
	}
	if (req->verb != GS_CTL_RECORD)
		return 0;
	if (n < 3)
		return fail(msg, msg_len, "%s needs a length in seconds (" USAGE ")", w[0]);
	if (parse_secs(w[2], &req->secs)) {
		if (msg_len) {
			char shown[SHOW_MAX + 4];

			snprintf(msg, msg_len,
				 "'%s' is not a recording length in seconds (%g to %g)",
				 show(w[2], shown, sizeof(shown)), GS_CTL_RECORD_MIN_S,
				 GS_CTL_RECORD_MAX_S);
		}
		return -EINVAL;
	}
	if (n == 4) {
		/* refused now: a recording that fails later leaves the client a name, no file */
		if (gs_daemon_check_events(w[3], GS_CTL_EVENTS_MAX, msg, msg_len))
			return -EINVAL;
		strcpy(req->events, w[3]);
	}
	return 0;
}
