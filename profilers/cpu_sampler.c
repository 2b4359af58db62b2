// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* cpu_sampler.c: perf_event_open per CPU, cpu.bpf.c attached to each, in-kernel counts read. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cpu.skel.h"
#include "profilers/bpf_objects.h"
#include "profilers/bpf_old.h"
#include "profilers/cpu_sampler.h"
#include "profilers/tracker.h"
#include "user/kernel_probe.h"
#include "user/log.h"

#define MAX_CPUS 4096

struct gs_cpu_sampler {
	struct cpu_bpf *skel;
	struct bpf_link **links;
	unsigned int nr_links;
	const char *event;
	int cgroup_fd;
	bool split_take; /* no lookup-and-delete on hash maps (5.14): a lookup, then a delete */
};

int gs_parse_cpu_list(const char *s, bool *cpus, int max)
{
	const char *p = s;

	memset(cpus, 0, (size_t)max * sizeof(*cpus));
	while (*p && *p != '\n') {
		char *end;
		long lo = strtol(p, &end, 10), hi = lo;

		if (end == p || lo < 0)
			return -EINVAL;
		p = end;
		if (*p == '-') {
			hi = strtol(p + 1, &end, 10);
			if (end == p + 1 || hi < lo)
				return -EINVAL;
			p = end;
		}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n')
			return -EINVAL;
		for (long c = lo; c <= hi && c < max; c++)
			cpus[c] = true;
	}
	return 0;
}

unsigned int gs_cpu_max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned int rate = 100000;

	if (f) {
		if (fscanf(f, "%u", &rate) != 1)
			rate = 100000;
		fclose(f);
	}
	return rate;
}

int gs_cpu_parse_hz(const char *arg, unsigned int *hz)
{
	unsigned int max = gs_cpu_max_sample_rate();
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v <= 0 || (unsigned long)v > max) {
		gs_err("invalid frequency '%s': a number of Hz from 1 to %u "
		       "(/proc/sys/kernel/perf_event_max_sample_rate)",
		       arg, max);
		return -EINVAL;
	}
	*hz = (unsigned int)v;
	return 0;
}

static int open_event(__u32 type, __u64 config, unsigned int hz, int cpu)
{
	struct perf_event_attr attr = {
		.size = sizeof(attr),
		.type = type,
		.config = config,
		.freq = 1,
		.sample_freq = hz,
	};
	int fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* cycles where the PMU counts them; -ENOENT/-EOPNOTSUPP/-ENODEV: no such hardware event */
static bool no_hardware_event(int err)
{
	return err == -ENOENT || err == -EOPNOTSUPP || err == -ENODEV;
}

static int attach_cpus(struct gs_cpu_sampler *s, unsigned int hz)
{
	bool *online = calloc(MAX_CPUS, sizeof(*online));
	__u32 type = PERF_TYPE_HARDWARE;
	__u64 config = PERF_COUNT_HW_CPU_CYCLES;
	char buf[4096] = "";
	FILE *f;
	int err = 0;

	if (!online)
		return -ENOMEM;
	f = fopen("/sys/devices/system/cpu/online", "re");
	if (!f || !fgets(buf, sizeof(buf), f) || gs_parse_cpu_list(buf, online, MAX_CPUS)) {
		gs_err("/sys/devices/system/cpu/online: cannot read the online CPUs");
		err = -EINVAL;
	}
	if (f)
		fclose(f);
	s->links = calloc(MAX_CPUS, sizeof(*s->links));
	if (!err && !s->links)
		err = -ENOMEM;
	s->event = "cycles";
	for (int cpu = 0; cpu < MAX_CPUS && !err; cpu++) {
		int fd;

		if (!online[cpu])
			continue;
		fd = open_event(type, config, hz, cpu);
		if (fd < 0 && no_hardware_event(fd) && type == PERF_TYPE_HARDWARE) {
			gs_info("no hardware cycles counter (%s): sampling with the cpu-clock "
				"software event",
				strerror(-fd));
			type = PERF_TYPE_SOFTWARE;
			config = PERF_COUNT_SW_CPU_CLOCK;
			s->event = "cpu-clock";
			fd = open_event(type, config, hz, cpu);
		}
		if (fd < 0) {
			err = fd;
			if (err == -EINVAL)
				gs_err("sampling cpu %d at %u Hz: %s (the most is %u, "
				       "/proc/sys/kernel/perf_event_max_sample_rate)",
				       cpu, hz, strerror(-err), gs_cpu_max_sample_rate());
			else
				gs_err("sampling cpu %d (%s): %s", cpu, s->event, strerror(-err));
			break;
		}
		s->links[s->nr_links] =
			bpf_program__attach_perf_event(s->skel->progs.handle_sample, fd);
		if (!s->links[s->nr_links]) {
			err = -errno;
			close(fd);
			gs_err("attaching the sampler to cpu %d: %s", cpu, strerror(-err));
			break;
		}
		s->nr_links++;
	}
	if (!err && !s->nr_links) {
		gs_err("no online CPU to sample");
		err = -ENODEV;
	}
	free(online);
	return err;
}

/*
 * cpu_bpf__open(), or the same skeleton on the bytes of cpu's 5.10 build (-DGS_OLD_KERNEL):
 * the same maps, program and globals, by the same names at the same offsets. That build has
 * no task storage, BTF task, bpf_find_vma() nor bpf_loop(): the kernel walks the user stack
 * and Python frames are off.
 */
static struct cpu_bpf *open_cpu(bool old)
{
	struct cpu_bpf *obj;
	int err;

	if (!old)
		return cpu_bpf__open();
	obj = calloc(1, sizeof(*obj));
	if (!obj)
		return NULL;
	err = cpu_bpf__create_skeleton(obj);
	if (!err) {
		obj->skeleton->data = (void *)gs_bpf_old_cpu(&obj->skeleton->data_sz);
		err = bpf_object__open_skeleton(obj->skeleton, NULL);
	}
	if (err) {
		cpu_bpf__destroy(obj);
		errno = -err;
		return NULL;
	}
	return obj;
}

static int open_cgroup(const char *path)
{
	struct statfs st;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0) {
		int err = -errno;

		gs_err("cgroup %s: %s", path, strerror(-err));
		return err;
	}
	if (fstatfs(fd, &st) || st.f_type != CGROUP2_SUPER_MAGIC) {
		gs_err("cgroup %s: not a cgroup v2 directory (e.g. /sys/fs/cgroup/system.slice)",
		       path);
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int gs_cpu_sampler__open(struct gs_cpu_sampler **out, struct gs_tracker *t,
			 const struct gs_cpu_sampler_opts *opts)
{
	struct gs_cpu_sampler *s = calloc(1, sizeof(*s));
	bool old, cookies; /* cpu.bpf.c takes no cookies */
	__u32 zero = 0;
	int err;

	if (!s)
		return -ENOMEM;
	s->cgroup_fd = -1;
	if (opts->cgroup) {
		s->cgroup_fd = open_cgroup(opts->cgroup);
		if (s->cgroup_fd < 0) {
			err = s->cgroup_fd;
			goto out_free;
		}
	}
	err = gs_kernel__require_cpu();
	if (err)
		goto out_free;
	old = gs_kernel_old_objects(&cookies);
	if (old)
		gs_dbg("cpu: the Linux 5.10 build (no task storage, BTF tasks or bpf_cookie)");
	s->skel = open_cpu(old);
	if (!s->skel) {
		err = -errno;
		gs_err("opening BPF object cpu: %s", strerror(-err));
		goto out_free;
	}
	s->skel->rodata->cfg_all_pids = opts->all;
	s->skel->rodata->cfg_no_find_vma = !gs_kernel_has_find_vma();
	/* the verifier drops the Python walk, and its bpf_loop() (5.17), where it is off */
	s->skel->rodata->cfg_python = gs_tracker__has_python(t);
	s->skel->rodata->cfg_records = opts->records;
	s->skel->rodata->cfg_cgroup = opts->cgroup != NULL;
	s->skel->rodata->cfg_no_kernel_stack = opts->no_kernel_stack;
	s->skel->rodata->cfg_no_user_stack = opts->no_user_stack;
	s->skel->rodata->cfg_tid = (__u32)opts->tid;
	s->skel->rodata->cfg_per_thread = opts->per_thread;
	s->skel->rodata->cfg_ustack = opts->ustack;
	s->skel->rodata->cfg_wakeup_bytes = gs_tracker__wakeup_bytes(t);
	/* only the mode in use needs its map: the other is kept minimal */
	if (opts->records) {
		bpf_map__set_max_entries(s->skel->maps.stacks, 1);
		bpf_map__set_max_entries(s->skel->maps.counts, 1);
	}
	err = gs_tracker__share_maps(t, s->skel->maps.events, s->skel->maps.targets,
				     s->skel->maps.stats);
	err = err ?: gs_tracker__share_python_maps(t, s->skel->obj);
	err = err ?: cpu_bpf__load(s->skel);
	if (err) {
		gs_bpf_load_error("cpu", err);
		goto out_free;
	}
	if (s->cgroup_fd >= 0 && bpf_map_update_elem(bpf_map__fd(s->skel->maps.cgroups), &zero,
						     &s->cgroup_fd, BPF_ANY)) {
		err = -errno;
		gs_err("cgroup %s: %s", opts->cgroup, strerror(-err));
		goto out_free;
	}
	err = attach_cpus(s, opts->freq_hz);
	if (err)
		goto out_free;
	gs_info("sampling %u CPUs at %u Hz (%s)", s->nr_links, opts->freq_hz, s->event);
	*out = s;
	return 0;

out_free:
	gs_cpu_sampler__free(s);
	return err;
}

/* The frames of stack id in the stacks map (zero-padded); 0 for a missing or lost one. */
static uint32_t read_stack(struct gs_cpu_sampler *s, __s32 id, __u64 *frames)
{
	uint32_t n = 0;

	if (id < 0 || bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.stacks), &id, frames))
		return 0;
	while (n < GS_MAX_STACK && frames[n])
		n++;
	return n;
}

/* the kernel's ENOTSUPP (not ENOTSUP), as some answer an operation a map type lacks */
#define KERNEL_ENOTSUPP 524

/*
 * Takes key's count out of the map: atomically, so that a sample landing now either counts
 * here or makes a new entry. Before Linux 5.14 a hash map has no lookup-and-delete: a lookup
 * then a delete, and a sample landing between the two (microseconds) is not counted.
 */
static int take_count(struct gs_cpu_sampler *s, int fd, const struct gs_cpu_key *key, __u64 *count)
{
	int err;

	if (!s->split_take) {
		err = bpf_map_lookup_and_delete_elem(fd, key, count);
		if (err != -EINVAL && err != -KERNEL_ENOTSUPP)
			return err;
		gs_dbg("cpu counts: no lookup-and-delete on a hash map (Linux 5.14): lookup, "
		       "then delete");
		s->split_take = true;
	}
	err = bpf_map_lookup_elem(fd, key, count);
	if (err)
		return err;
	err = bpf_map_delete_elem(fd, key);
	return err == -ENOENT ? 0 : err;
}

int gs_cpu_sampler__drain(struct gs_cpu_sampler *s, gs_cpu_count_fn fn, void *ctx)
{
	int fd = bpf_map__fd(s->skel->maps.counts);
	size_t nr = 0, cap = bpf_map__max_entries(s->skel->maps.counts);
	struct gs_cpu_key *keys = calloc(cap, sizeof(*keys));
	__u64 user[GS_MAX_STACK], kernel[GS_MAX_STACK];
	struct gs_cpu_key *prev = NULL;

	if (!keys)
		return -ENOMEM;
	/* keys first: deleting while walking would restart the walk */
	while (nr < cap && !bpf_map_get_next_key(fd, prev, &keys[nr])) {
		prev = &keys[nr];
		nr++;
	}
	for (size_t i = 0; i < nr; i++) {
		__u64 count;

		if (take_count(s, fd, &keys[i], &count) || !count)
			continue;
		fn(ctx, &keys[i], user, read_stack(s, keys[i].user_stack_id, user), kernel,
		   read_stack(s, keys[i].kernel_stack_id, kernel), count);
	}
	free(keys);
	return 0;
}

const char *gs_cpu_sampler__event(const struct gs_cpu_sampler *s)
{
	return s->event;
}

unsigned int gs_cpu_sampler__nr_cpus(const struct gs_cpu_sampler *s)
{
	return s->nr_links;
}

void gs_cpu_sampler__free(struct gs_cpu_sampler *s)
{
	if (!s)
		return;
	/* each link closes its perf event */
	for (unsigned int i = 0; i < s->nr_links; i++)
		bpf_link__destroy(s->links[i]);
	free(s->links);
	cpu_bpf__destroy(s->skel);
	if (s->cgroup_fd >= 0)
		close(s->cgroup_fd);
	free(s);
}
