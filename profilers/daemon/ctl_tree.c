// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* ctl_tree.c: the control requests with --children: a process and its descendants. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include "profilers/daemon/ctl_tree.h"
#include "profilers/daemon/daemon.h"
#include "profilers/leak_report.h"
#include "profilers/mem_model.h"
#include "profilers/proc_tree.h"
#include "profilers/tracker.h"
#include "user/clock.h"
#include "user/ctl_socket.h"

/*
 * pid and its live descendants that the daemon follows and peer may see, with their parents
 * and ranks, into *tree; the ones with CUDA memory state into procs (room for nr + 1), their
 * number returned. -errno on failure.
 */
static int tree_procs(struct gs_daemon *d, const struct gs_ctl_peer *peer, pid_t pid,
		      struct gs_proc_tree *tree, struct gs_mem_proc ***procs)
{
	pid_t *pids = NULL, *ppids = NULL;
	size_t nr = 0, found = 0;
	int err = gs_proc_tree_descendants(&pid, 1, &pids, &ppids, &nr);

	*procs = err ? NULL : calloc(nr + 1, sizeof(**procs));
	if (!err && !*procs)
		err = -ENOMEM;
	for (size_t i = 0; i <= nr && !err; i++) {
		pid_t p = i ? pids[i - 1] : pid;
		struct gs_mem_proc *mp = gs_mem_model__proc(&d->mem, p, false);

		if (!mp || !gs_daemon__may_see(peer, p))
			continue;
		err = gs_proc_tree__add(tree, p, i ? ppids[i - 1] : 0);
		(*procs)[found++] = mp;
	}
	free(pids);
	free(ppids);
	return err ? err : (int)found;
}

/* One report over the processes of the tree (each with its parent and ranks). */
static int write_tree_report(struct gs_daemon *d, struct gs_mem_proc **procs, size_t nr,
			     const struct gs_proc_tree *tree, bool json, FILE *out)
{
	struct gs_leak_report r = {
		.reason = "snapshot",
		.now_ns = gs_clock_ns(CLOCK_MONOTONIC),
		.top = d->cfg.top,
		.stack_sample = d->cfg.stack_sample,
	};
	int err = 0;

	r.procs = calloc(nr + 1, sizeof(*r.procs));
	if (!r.procs)
		return -ENOMEM;
	for (size_t i = 0; i < nr && !err; i++) {
		struct gs_leak_proc_report *p = &r.procs[i];
		const struct gs_proc_tree_entry *e = gs_proc_tree__find(tree, procs[i]->pid);

		err = gs_leak_proc_report__build(p, &d->mem, procs[i],
						 gs_tracker__comm(d->tracker, procs[i]->pid),
						 r.now_ns, 0);
		if (err)
			break;
		r.nr_procs++;
		p->ppid = e ? e->ppid : 0;
		p->rank = e ? e->rank : -1;
		p->local_rank = e ? e->local_rank : -1;
	}
	gs_tracker__stats(d->tracker, r.stats);
	r.window_lost =
		gs_loss_window__take(&d->loss_window, r.stats, r.now_ns, &r.window_start_ns);
	if (!err && json)
		gs_leak_report__write_json(out, &r, d->stacks);
	else if (!err)
		gs_leak_report__write_text(out, &r, d->stacks);
	for (size_t i = 0; i < r.nr_procs; i++)
		gs_leak_proc_report__release(&r.procs[i]);
	free(r.procs);
	return err;
}

static void ctl_leaks_tree(struct gs_daemon *d, const struct gs_ctl_peer *peer,
			   const struct gs_ctl_request *req, FILE *out)
{
	struct gs_proc_tree *tree = gs_proc_tree__new();
	struct gs_mem_proc **procs = NULL;
	int n = tree ? tree_procs(d, peer, req->pid, tree, &procs) : -ENOMEM;

	if (n == 0)
		fprintf(out,
			"error: pid %d: neither it nor a descendant of yours is a CUDA process "
			"the daemon follows\n",
			req->pid);
	else if (n < 0 || write_tree_report(d, procs, (size_t)n, tree, req->json, out))
		fprintf(out, "error: out of memory\n");
	free(procs);
	gs_proc_tree__free(tree);
}

/*
 * A recording of pid's tree follows the descendants it starts later too, whoever they run
 * as (a setuid program): only root may ask for that.
 */
static void ctl_record_tree(struct gs_daemon *d, const struct gs_ctl_peer *peer,
			    const struct gs_ctl_request *req, FILE *out)
{
	char path[512];
	int err;

	if (peer->uid) {
		fprintf(out, "error: record --children is root's: a later child may be another "
			     "user's\n");
		return;
	}
	if (kill(req->pid, 0) && errno == ESRCH) {
		fprintf(out, "error: pid %d: no such process\n", req->pid);
		return;
	}
	err = gs_daemon__start_capped_recording(
		d, req->pid, true, req->secs,
		req->events[0] ? req->events : d->cfg.oom_record_events, "record", -1, 0,
		gs_daemon__request_perfetto(d, req->format), path, sizeof(path));
	if (err == -EBUSY)
		fprintf(out, "error: busy: %d recordings are running\n", MAX_RECORDINGS);
	else if (err)
		fprintf(out, "error: could not start the recording (see the daemon's log)\n");
	else
		fprintf(out, "%s\n", path);
}

void gs_daemon__ctl_tree(struct gs_daemon *d, const struct gs_ctl_peer *peer,
			 const struct gs_ctl_request *req, FILE *out)
{
	if (req->verb == GS_CTL_LEAKS)
		ctl_leaks_tree(d, peer, req, out);
	else if (req->verb == GS_CTL_RECORD)
		ctl_record_tree(d, peer, req, out);
}
