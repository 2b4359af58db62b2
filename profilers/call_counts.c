// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* call_counts.c: launches and syncs counted in the kernel (bpf/gs_call_counts.bpf.h), read. */
#include <errno.h>
#include <stdlib.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>
#include "cuda.skel.h"
#include "bpf/gs_event.h"
#include "profilers/bpf_objects.h"
#include "profilers/call_counts.h"

static int map_fd(const struct gs_bpf_objects *o)
{
	return o && o->cuda ? bpf_map__fd(o->cuda->maps.call_counts) : -1;
}

/* pid's values, one per possible CPU, summed into t */
static int read_one(int fd, __u32 pid, struct gs_call_counts *vals, int ncpus,
		    struct gs_call_totals *t)
{
	*t = (struct gs_call_totals){ .pid = (pid_t)pid };
	if (bpf_map_lookup_elem(fd, &pid, vals))
		return -errno; /* gone since the key was read */
	for (int cpu = 0; cpu < ncpus; cpu++) {
		t->launches += vals[cpu].launches;
		t->syncs += vals[cpu].syncs;
		t->sync_ns += vals[cpu].sync_ns;
	}
	return 0;
}

int gs_call_counts__each(struct gs_bpf_objects *o,
			 void (*fn)(void *ctx, const struct gs_call_totals *t), void *ctx)
{
	int fd = map_fd(o), ncpus = libbpf_num_possible_cpus();
	struct gs_call_counts *vals;
	struct gs_call_totals t;
	__u32 key, next;
	int more;

	if (fd < 0)
		return 0;
	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	vals = calloc((size_t)ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	/*
	 * The next key is taken before fn runs, so that fn may forget the process it is given.
	 * Bounded: the map holds GS_MAX_TARGETS keys; one deleted by another thread meanwhile
	 * restarts the walk.
	 */
	more = !bpf_map_get_next_key(fd, NULL, &key);
	for (int n = 0; more && n < 2 * GS_MAX_TARGETS; n++) {
		more = !bpf_map_get_next_key(fd, &key, &next);
		if (!read_one(fd, key, vals, ncpus, &t))
			fn(ctx, &t);
		key = next;
	}
	free(vals);
	return 0;
}

void gs_call_counts__forget(struct gs_bpf_objects *o, pid_t pid)
{
	__u32 key = (__u32)pid;
	int fd = map_fd(o);

	if (fd >= 0)
		bpf_map_delete_elem(fd, &key);
}
