// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* kernel_probe.c: tries each BPF feature gpusnoop uses on the running kernel, never its version. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "user/kernel_compat.h"
#include "user/kernel_probe.h"
#include "user/log.h"
#include "user/uprobe_multi.h"

/* BPF at all: a map that every kernel since 3.19 has; EPERM says nothing else can be known */
static bool bpf_permitted(void)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, NULL, 4, 4, 1, NULL);

	if (fd >= 0) {
		close(fd);
		return true;
	}
	return errno != EPERM && errno != EACCES;
}

static bool has_helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, NULL) == 1;
}

/* the size of a member of BTF type id, inside anonymous unions too (6.9's x86 pt_regs.cs) */
static int member_size_in(const struct btf *btf, int id, const char *member, int depth)
{
	const struct btf_type *t = btf__type_by_id(btf, id);
	const struct btf_member *m;

	if (!t || depth > 3 || !(btf_is_struct(t) || btf_is_union(t)))
		return 0;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++) {
		const char *name = btf__name_by_offset(btf, m->name_off);
		long size;

		if (name && !*name) {
			size = member_size_in(btf, btf__resolve_type(btf, m->type), member,
					      depth + 1);
			if (size)
				return (int)size;
			continue;
		}
		if (!name || strcmp(name, member))
			continue;
		size = btf__resolve_size(btf, m->type);
		return size > 0 && size <= 64 ? (int)size : 0;
	}
	return 0;
}

static int member_size(const struct btf *btf, const char *type, const char *member)
{
	int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);

	return id > 0 ? member_size_in(btf, id, member, 0) : 0;
}

/* tp_btf programs attach to the btf_trace_<tracepoint> typedefs (5.5) */
static void probe_btf(struct gs_kernel *k)
{
	struct btf *btf = btf__load_vmlinux_btf();

	if (!btf)
		return;
	if (btf__find_by_name_kind(btf, "btf_trace_sched_process_exec", BTF_KIND_TYPEDEF) > 0)
		k->have |= GS_KF_BIT(GS_KF_TP_BTF);
	k->regs_cs_size = member_size(btf, "pt_regs", "cs");
	btf__free(btf);
}

static int apply_off(struct gs_kernel *k)
{
	const char *list = getenv(GS_KERNEL_FEATURES_OFF_ENV), *bad = NULL;

	if (!list)
		return 0;
	if (gs_kfeat_parse(list, &k->off, &bad)) {
		gs_err("%s: unknown feature at \"%.*s\"", GS_KERNEL_FEATURES_OFF_ENV,
		       (int)strcspn(bad, ","), bad);
		return -EINVAL;
	}
	k->have &= ~k->off;
	return 0;
}

int gs_kernel__probe(struct gs_kernel *k)
{
	struct utsname u;

	*k = (struct gs_kernel){ 0 };
	if (!uname(&u))
		memcpy(k->release, u.release, strnlen(u.release, sizeof(k->release) - 1));
	probe_btf(k);
	if (!bpf_permitted()) {
		k->unprivileged = true;
		return apply_off(k);
	}
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1)
		k->have |= GS_KF_BIT(GS_KF_RINGBUF);
	if (libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1)
		k->have |= GS_KF_BIT(GS_KF_TASK_STORAGE);
	if (has_helper(BPF_FUNC_get_current_task_btf))
		k->have |= GS_KF_BIT(GS_KF_TASK_BTF);
	if (has_helper(BPF_FUNC_find_vma))
		k->have |= GS_KF_BIT(GS_KF_FIND_VMA);
	if (has_helper(BPF_FUNC_get_attach_cookie))
		k->have |= GS_KF_BIT(GS_KF_COOKIE);
	if (has_helper(BPF_FUNC_loop))
		k->have |= GS_KF_BIT(GS_KF_LOOP);
	if (gs_has_uprobe_multi())
		k->have |= GS_KF_BIT(GS_KF_UPROBE_MULTI);
	return apply_off(k);
}

int gs_kernel__require(const struct gs_kernel *k, uint32_t needs)
{
	uint32_t missing = needs & ~k->have;
	char what[512];

	/* without privileges, loading says what to grant */
	if (!missing || k->unprivileged)
		return 0;
	if (gs_kfeat_format(missing, what, sizeof(what)) < 0)
		what[0] = '\0';
	gs_err("kernel %s lacks BPF features gpusnoop needs: %s%s; `gpusnoop check` lists what "
	       "works here",
	       k->release, what,
	       missing & k->off ? " (switched off by " GS_KERNEL_FEATURES_OFF_ENV ")" : "");
	return -ENOTSUP;
}

int gs_kernel__check_session(bool cuda_probes, bool *python)
{
	struct gs_kernel k;
	int err = gs_kernel__probe(&k);

	err = err ?: gs_kernel__require(&k, gs_kcompat_needs(cuda_probes));
	if (err)
		return err;
	if (*python && !k.unprivileged && !gs_kcompat_python_frames(k.have)) {
		char what[256];

		if (gs_kfeat_format(gs_kcompat_python_missing(k.have), what, sizeof(what)) < 0)
			what[0] = '\0';
		gs_warn("python frames: off: kernel %s lacks %s; stacks stay native", k.release,
			what);
		*python = false;
	}
	return 0;
}

bool gs_kernel_old_objects(bool *cookies)
{
	struct gs_kernel k;

	if (gs_kernel__probe(&k) || k.unprivileged)
		return false;
	*cookies = k.have & GS_KF_BIT(GS_KF_COOKIE);
	return gs_kcompat_old_objects(k.have);
}

int gs_kernel__require_cpu(void)
{
	struct gs_kernel k;
	int err = gs_kernel__probe(&k);

	return err ?: gs_kernel__require(&k, gs_kcompat_cpu_needs());
}

bool gs_kernel_has_find_vma(void)
{
	const char *list = getenv(GS_KERNEL_FEATURES_OFF_ENV);
	uint32_t off = 0;

	/* an unknown name was refused at the session's start (gs_kernel__check_session) */
	if (list && !gs_kfeat_parse(list, &off, NULL) && (off & GS_KF_BIT(GS_KF_FIND_VMA)))
		return false;
	return has_helper(BPF_FUNC_find_vma);
}
