/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* ctl_tree.h: the control requests with --children: a process and its descendants. */
#ifndef GS_CTL_TREE_H
#define GS_CTL_TREE_H

#include <stdio.h>
#include "profilers/daemon/ctl_request.h"

struct gs_daemon;
struct gs_ctl_peer;

/*
 * Answers `leaks PID --children` (one report over PID and its live descendants that the
 * daemon follows and the peer may see, each with its parent and ranks) and
 * `record PID --children SECONDS` (root only: `gpusnoop record -p PID --children`) on out.
 */
void gs_daemon__ctl_tree(struct gs_daemon *d, const struct gs_ctl_peer *peer,
			 const struct gs_ctl_request *req, FILE *out);

#endif /* GS_CTL_TREE_H */
