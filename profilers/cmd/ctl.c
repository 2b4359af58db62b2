// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ctl.c: `gpusnoop ctl`, asks a running `gpusnoop daemon` through its control socket. */
#include <argp.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "profilers/daemon/ctl_request.h"
#include "profilers/options.h"
#include "profilers/cmd/subcommands.h"
#include "user/ctl_socket.h"
#include "user/log.h"

/* the daemon answers at once; this bounds a daemon that is stopped or stuck */
#define CTL_TIMEOUT_MS 30000

struct ctl_opts {
	const char *socket_path;
	const char *format; /* --format: leaks text|json, record json|perfetto */
	bool children;	    /* --children */
	char request[1024]; /* the daemon's line limit, GS_CTL_LINE_MAX */
	size_t len;
};

enum { OPT_SOCKET = 0x3000, OPT_CHILDREN };

static const struct argp_option ctl_options[] = {
	{ "socket", OPT_SOCKET, "PATH", 0, "The daemon's socket (default /run/gpusnoop.sock)", 0 },
	{ "format", 'f', "FMT", 0,
	  "leaks: text (default) or json; record: json or perfetto (default: the daemon's "
	  "trace-format)",
	  0 },
	{ "children", OPT_CHILDREN, NULL, 0,
	  "leaks, record: the process's descendants too (record: root only)", 0 },
	{ 0 },
};

static error_t ctl_parse(int key, char *arg, struct argp_state *state)
{
	struct ctl_opts *o = state->input;
	int n;

	switch (key) {
	case OPT_SOCKET:
		o->socket_path = arg;
		break;
	case OPT_CHILDREN:
		o->children = true;
		break;
	case 'f':
		o->format = arg;
		break;
	case ARGP_KEY_ARG:
		if (strpbrk(arg, " \t\n"))
			argp_error(state, "invalid argument '%s'", arg);
		n = snprintf(o->request + o->len, sizeof(o->request) - o->len, "%s%s",
			     o->len ? " " : "", arg);
		if (n < 0 || (size_t)n >= sizeof(o->request) - o->len)
			argp_error(state, "request too long");
		o->len += (size_t)n;
		break;
	case ARGP_KEY_END:
		if (!o->len)
			argp_error(state, "what to ask: status, leaks PID, snapshot PID or "
					  "record PID SECONDS [EVENTS]");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const char ctl_doc[] =
	"Ask a running `gpusnoop daemon` through its control socket.\v"
	"Requests:\n"
	"  status                       what the daemon follows, losses, recordings\n"
	"  leaks PID                    a leak report of one process (or --format json)\n"
	"  snapshot PID                 a report written to the daemon's output dir\n"
	"  record PID SECONDS [EVENTS]  a trace of at most 3600 s written there\n"
	"                               (EVENTS: as record's -e; --format perfetto:\n"
	"                               Perfetto's protobuf trace)\n\n"
	"Root may ask about any process; other users about their own, with at most "
	"user-max-recordings recordings at once and user-max-bytes of files (see the daemon's "
	"settings).\n\n"
	"EXAMPLES:\n"
	"  gpusnoop ctl status\n"
	"  gpusnoop ctl leaks 1234 --format json\n"
	"  gpusnoop ctl leaks 1234 --children      # a launcher's ranks, one report\n"
	"  gpusnoop ctl snapshot 1234              # prints the report's path\n"
	"  gpusnoop ctl record 1234 30 cuda-mem    # prints the trace's path\n"
	"  gpusnoop ctl record 1234 30 --format perfetto  # a .pftrace.gz\n\n"
	"A request the daemon would refuse as malformed is refused here, with exit status 64.";

static const struct argp_child ctl_children[] = {
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const struct argp ctl_argp = {
	ctl_options, ctl_parse,	   "status\nleaks PID\nsnapshot PID\nrecord PID SECONDS [EVENTS]",
	ctl_doc,     ctl_children, NULL,
	NULL
};

/* A word for the request, when there is room (it was checked against the same limit). */
static void append(struct ctl_opts *o, const char *word)
{
	strncat(o->request, word, sizeof(o->request) - strlen(o->request) - 1);
}

/*
 * --format and --children as the daemon takes them, then the request checked as the daemon
 * checks it: a malformed one is a usage error here. 0, or GS_EXIT_USAGE (logged).
 */
static int finish_request(struct ctl_opts *o)
{
	struct gs_ctl_request req;
	char msg[256];
	bool leaks = !strncmp(o->request, "leaks ", 6), record = !strncmp(o->request, "record ", 7);

	if (o->format && !(leaks && (!strcmp(o->format, "text") || !strcmp(o->format, "json"))) &&
	    !(record && (!strcmp(o->format, "json") || !strcmp(o->format, "perfetto")))) {
		gs_err("--format %.32s: leaks takes text or json, record json or perfetto",
		       o->format);
		return GS_EXIT_USAGE;
	}
	if (o->format && leaks && !strcmp(o->format, "json"))
		append(o, " json");
	if (o->format && record) {
		append(o, " format=");
		append(o, o->format);
	}
	if (o->children) /* the daemon takes it anywhere after the request's word */
		append(o, " --children");
	if (gs_ctl_request__parse(o->request, &req, msg, sizeof(msg))) {
		gs_err("%s", msg);
		return GS_EXIT_USAGE;
	}
	return 0;
}

int gs_cmd_ctl(int argc, char **argv)
{
	struct ctl_opts o = { .socket_path = "/run/gpusnoop.sock" };
	char *reply = NULL;
	size_t len = 0;
	FILE *f;
	int err;

	if (argp_parse(&ctl_argp, argc, argv, 0, NULL, &o))
		return GS_EXIT_USAGE;
	err = finish_request(&o);
	if (err)
		return err;
	f = open_memstream(&reply, &len);
	if (!f) {
		gs_err("out of memory");
		return 1;
	}
	err = gs_ctl_request(o.socket_path, o.request, f, CTL_TIMEOUT_MS);
	fclose(f);
	if (!err && !strncmp(reply, "error: ", 7)) {
		/* the daemon's own word, as our one-line error */
		fprintf(stderr, "gpusnoop: %s", reply);
		err = -EINVAL;
	} else if (!err) {
		fputs(reply, stdout);
		if (fflush(stdout) || ferror(stdout)) {
			gs_err("writing stdout: %s", strerror(errno));
			err = -EIO;
		}
	}
	free(reply);
	return err ? 1 : 0;
}
