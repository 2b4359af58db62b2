// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* kernel_compat.c: pure decisions from a kernel's BPF features: what runs, what goes without. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "user/kernel_compat.h"

static const struct gs_kfeat_desc descs[GS_KF__NR] = {
	[GS_KF_RINGBUF] = { "ringbuf", "BPF ring buffer", "5.8" },
	[GS_KF_TP_BTF] = { "tp_btf", "BTF-enabled tracepoints", "5.5" },
	[GS_KF_TASK_BTF] = { "task_btf", "bpf_get_current_task_btf()", "5.11" },
	[GS_KF_TASK_STORAGE] = { "task_storage", "task storage maps", "5.11" },
	[GS_KF_FIND_VMA] = { "find_vma", "bpf_find_vma()", "5.17" },
	[GS_KF_COOKIE] = { "cookie", "BPF cookies on uprobes", "5.15" },
	[GS_KF_LOOP] = { "bpf_loop", "bpf_loop()", "5.17" },
	[GS_KF_UPROBE_MULTI] = { "uprobe_multi", "uprobe_multi links", "6.6" },
};

static const char *const cmd_names[GS_KCMD__NR] = {
	[GS_KCMD_LEAKS] = "leaks",
	[GS_KCMD_RECORD] = "record",
	[GS_KCMD_RECORD_CPU] = "record -e cpu",
	[GS_KCMD_PROFILE] = "profile",
	[GS_KCMD_DAEMON] = "daemon",
	[GS_KCMD_TREE] = "-- CMD tree",
};

const struct gs_kfeat_desc *gs_kfeat_desc(enum gs_kfeat f)
{
	return (unsigned)f < GS_KF__NR ? &descs[f] : NULL;
}

static int find_name(const char *name, size_t len)
{
	for (int f = 0; f < GS_KF__NR; f++)
		if (strlen(descs[f].name) == len && !strncmp(descs[f].name, name, len))
			return f;
	return -1;
}

int gs_kfeat_parse(const char *list, uint32_t *mask, const char **bad)
{
	const char *p = list;

	*mask = 0;
	while (p && *p) {
		size_t len = strcspn(p, ",");
		int f = len ? find_name(p, len) : 0;

		if (f < 0) {
			if (bad)
				*bad = p;
			return -EINVAL;
		}
		if (len)
			*mask |= GS_KF_BIT(f);
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

int gs_kfeat_format(uint32_t missing, char *buf, size_t len)
{
	size_t n = 0;
	int total = 0;

	if (len)
		buf[0] = '\0';
	for (int f = 0; f < GS_KF__NR; f++) {
		int w;

		if (!(missing & GS_KF_BIT(f)))
			continue;
		w = snprintf(n < len ? buf + n : NULL, n < len ? len - n : 0, "%s%s (Linux %s)",
			     total ? ", " : "", descs[f].what, descs[f].since);
		if (w < 0)
			return w;
		total += w;
		n += (size_t)w;
	}
	return total;
}

const char *gs_kcmd_name(enum gs_kcmd c)
{
	return (unsigned)c < GS_KCMD__NR ? cmd_names[c] : NULL;
}

uint32_t gs_kcmd_needs(enum gs_kcmd c)
{
	switch (c) {
	case GS_KCMD_LEAKS:
	case GS_KCMD_RECORD:
	case GS_KCMD_DAEMON:
	case GS_KCMD_TREE:
	case GS_KCMD_RECORD_CPU:
	case GS_KCMD_PROFILE:
		return GS_KF_NEED_OLD;
	default:
		return 0;
	}
}

uint32_t gs_kcmd_wants(enum gs_kcmd c)
{
	if ((unsigned)c >= GS_KCMD__NR)
		return 0;
	/* sampling attaches no uprobes */
	return GS_KF_BIT(GS_KF_LOOP) | GS_KF_BIT(GS_KF_FIND_VMA) |
	       (c == GS_KCMD_PROFILE || c == GS_KCMD_RECORD_CPU ? 0
								: GS_KF_BIT(GS_KF_UPROBE_MULTI));
}

uint32_t gs_kcompat_needs(bool cuda_probes)
{
	(void)cuda_probes; /* the 5.10 builds cover what cookies, task storage and BTF tasks do */
	return GS_KF_NEED_OLD;
}

uint32_t gs_kcompat_cpu_needs(void)
{
	return GS_KF_NEED_OLD; /* cpu has a 5.10 build too */
}

bool gs_kcompat_old_objects(uint32_t have)
{
	return gs_kcompat_old_reason(have) != 0;
}

uint32_t gs_kcompat_old_reason(uint32_t have)
{
	return GS_KF_OLD_COVERS & ~have;
}

uint32_t gs_kcompat_python_missing(uint32_t have)
{
	if (!(have & GS_KF_BIT(GS_KF_LOOP)))
		return GS_KF_BIT(GS_KF_LOOP);
	return gs_kcompat_old_reason(have);
}

bool gs_kcompat_python_frames(uint32_t have)
{
	return !gs_kcompat_python_missing(have);
}

bool gs_kcompat_kernel_stack_walk(uint32_t have)
{
	/* the 5.10 builds bound no walk: no task storage to keep each thread's stack in */
	return !(have & GS_KF_BIT(GS_KF_FIND_VMA)) || gs_kcompat_old_objects(have);
}

bool gs_kcompat_multi_links(uint32_t have)
{
	return have & GS_KF_BIT(GS_KF_UPROBE_MULTI);
}
