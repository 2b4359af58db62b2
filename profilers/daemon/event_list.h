/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* event_list.h: checks a `gpusnoop record -e` list before the daemon hands it to a recording. */
#ifndef GS_DAEMON_EVENT_LIST_H
#define GS_DAEMON_EVENT_LIST_H

#include <stddef.h>

/* what `record -e` takes, for messages */
#define GS_RECORD_EVENT_NAMES                                     \
	"cuda-mem, cuda-launch, cuda-launch-latency, cuda-sync, " \
	"cuda-memcpy, torch-mem, cpu, gpu, nvtx"

/*
 * Whether list is a comma list of names `gpusnoop record -e` accepts (GS_RECORD_EVENT_NAMES,
 * no empty names), shorter than max. Returns 0, or -EINVAL with why in msg ("'cuda-foo' is
 * not an event (...)"; the name cut short, non-printable bytes as '?'). Pure: no I/O.
 */
int gs_daemon_check_events(const char *list, size_t max, char *msg, size_t msg_len);

#endif /* GS_DAEMON_EVENT_LIST_H */
