// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* check.c: `gpusnoop check`: the kernel's BPF features and what each command can do with them. */
#include <argp.h>
#include <stdio.h>
#include <string.h>
#include "profilers/cmd/subcommands.h"
#include "profilers/options.h"
#include "user/kernel_compat.h"
#include "user/kernel_probe.h"

static const char *found(const struct gs_kernel *k, enum gs_kfeat f)
{
	if (k->off & GS_KF_BIT(f))
		return "off";
	if (k->unprivileged && f != GS_KF_TP_BTF)
		return "?";
	return k->have & GS_KF_BIT(f) ? "yes" : "no";
}

static void print_features(const struct gs_kernel *k)
{
	printf("kernel %s\n", k->release);
	printf("%-14s %-5s %-6s %s\n", "FEATURE", "FOUND", "SINCE", "WHAT");
	for (int f = 0; f < GS_KF__NR; f++) {
		const struct gs_kfeat_desc *d = gs_kfeat_desc(f);

		printf("%-14s %-5s %-6s %s\n", d->name, found(k, f), d->since, d->what);
	}
	if (k->regs_cs_size)
		printf("%-14s %d bytes\n", "pt_regs.cs", k->regs_cs_size);
}

/* ", no Python frames (why)" where they are off here, else "" */
static const char *python_lost(uint32_t have)
{
	uint32_t missing = gs_kcompat_python_missing(have);

	if (!missing)
		return "";
	if (missing & GS_KF_BIT(GS_KF_LOOP))
		return ", no Python frames (bpf_loop(), Linux 5.17)";
	return ", no Python frames (the 5.10 builds)";
}

/* "yes", "yes, without ...: ..." or "no: ..."; returns whether the command runs */
static bool print_command(const struct gs_kernel *k, enum gs_kcmd c)
{
	uint32_t missing = gs_kcmd_needs(c) & ~k->have;
	uint32_t lost = gs_kcmd_wants(c) & ~k->have;
	char what[512];

	if (k->unprivileged) {
		printf("%-14s ?\n", gs_kcmd_name(c));
		return false;
	}
	if (missing) {
		if (gs_kfeat_format(missing, what, sizeof(what)) < 0)
			what[0] = '\0';
		printf("%-14s no: needs %s\n", gs_kcmd_name(c), what);
		return false;
	}
	printf("%-14s yes%s%s%s\n", gs_kcmd_name(c), python_lost(k->have),
	       gs_kcompat_kernel_stack_walk(k->have) ? ", the kernel's user stack walk" : "",
	       lost & GS_KF_BIT(GS_KF_UPROBE_MULTI) ? ", one link per probe" : "");
	return true;
}

/* "task_btf, cookie" for the features of mask, as GPUSNOOP_KERNEL_FEATURES_OFF names them */
static void feature_names(uint32_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int f = 0; f < GS_KF__NR && n < len; f++) {
		int w;

		if (!(mask & GS_KF_BIT(f)))
			continue;
		w = snprintf(buf + n, len - n, "%s%s", n ? ", " : "", gs_kfeat_desc(f)->name);
		if (w < 0)
			return;
		n += (size_t)w;
	}
}

/* the BPF objects each command loads here: the usual builds or the 5.10 ones, and why */
static void print_objects(const struct gs_kernel *k)
{
	static const char *const objs[GS_KCMD__NR] = {
		[GS_KCMD_LEAKS] = "proc mem cuda",  [GS_KCMD_RECORD] = "proc mem cuda",
		[GS_KCMD_RECORD_CPU] = "proc cpu",  [GS_KCMD_PROFILE] = "proc cpu",
		[GS_KCMD_DAEMON] = "proc mem cuda", [GS_KCMD_TREE] = "proc mem cuda",
	};
	uint32_t why = gs_kcompat_old_reason(k->have);
	char names[256];

	if (k->unprivileged)
		return;
	feature_names(why, names, sizeof(names));
	printf("%-14s %s\n", "COMMAND", "BPF OBJECTS");
	for (int c = 0; c < GS_KCMD__NR; c++) {
		if (!why) {
			printf("%-14s %s%s: usual builds\n", gs_kcmd_name(c), objs[c],
			       c == GS_KCMD_DAEMON ? " torch" : "");
			continue;
		}
		printf("%-14s %s: 5.10 builds (%s: %s)%s\n", gs_kcmd_name(c), objs[c], names,
		       (why & k->off) == why ? "off" : "no",
		       c == GS_KCMD_DAEMON ? "; torch: none (no 5.10 build)" : "");
	}
}

static const char check_doc[] =
	"The BPF features of this kernel, each probed (a tiny map or program, never the "
	"version number), and what each command can do here.\v"
	"Exit status 1 when a command cannot run on this kernel. " GS_KERNEL_FEATURES_OFF_ENV
	"=FEATURE,... treats features as missing, to see what an older kernel does.\n\n"
	"EXAMPLES:\n"
	"  gpusnoop check\n"
	"  gpusnoop check && gpusnoop leaks -- ./train";

static error_t check_parse(int key, char *arg, struct argp_state *state)
{
	if (key == ARGP_KEY_ARG)
		argp_error(state, "no arguments expected");
	return key == ARGP_KEY_ARG ? 0 : ARGP_ERR_UNKNOWN;
}

static const struct argp_child check_children[] = {
	{ &gs_help_argp, 0, NULL, 0 },
	{ 0 },
};

static const struct argp check_argp = {
	NULL, check_parse, "", check_doc, check_children, NULL, NULL,
};

int gs_cmd_check(int argc, char **argv)
{
	struct gs_kernel k;
	bool all = true;

	if (argp_parse(&check_argp, argc, argv, 0, NULL, NULL))
		return 1;
	if (gs_kernel__probe(&k))
		return 1;
	print_features(&k);
	if (k.unprivileged)
		printf("(BPF refused the probes: run as root for a complete answer)\n");
	printf("%-14s %s\n", "COMMAND", "ON THIS KERNEL");
	for (int c = 0; c < GS_KCMD__NR; c++)
		all &= print_command(&k, c);
	print_objects(&k);
	if (fflush(stdout) || ferror(stdout))
		return 1;
	return all && !k.unprivileged ? 0 : 1;
}
