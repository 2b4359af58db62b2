// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* snapshot_file.c: PyTorch memory snapshot files: numbered names, written whole or not at all. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "profilers/mem_model.h"
#include "profilers/snapshot_file.h"
#include "user/log.h"
#include "user/out_file.h"

int gs_snapshot_file_name(const char *path, pid_t pid, unsigned int seq, char *buf, size_t len)
{
	const char *base = strrchr(path, '/');
	const char *dot;
	char middle[48] = "";
	size_t stem;
	int n;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	/* "snap" and ".hidden" have no extension */
	stem = dot && dot > base ? (size_t)(dot - path) : strlen(path);
	if (pid > 0)
		snprintf(middle, sizeof(middle), ".%d", (int)pid);
	if (seq)
		snprintf(middle + strlen(middle), sizeof(middle) - strlen(middle), ".%u", seq);
	n = snprintf(buf, len, "%.*s%s%s", (int)stem, path, middle, path + stem);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int gs_snapshot_file_write(struct gs_mem_model *m, pid_t pid, uint64_t now_ns, const char *path)
{
	struct gs_out *out;
	int err = gs_out__open(&out, path, GS_OUT_PLAIN);

	if (err)
		return err;
	err = gs_mem_model__write_snapshot(m, pid, now_ns, gs_out__file(out));
	if (err == -ENOMEM) {
		gs_err("%s: out of memory", path);
		gs_out__abort(out);
		return err;
	}
	if (err)
		return gs_out__fail(out, err);
	return gs_out__close(out);
}

static int write_one(struct gs_mem_model *m, const char *path, pid_t pid, pid_t primary,
		     unsigned int seq, const char *reason, uint64_t now_ns)
{
	char name[4096];
	int err = gs_snapshot_file_name(path, pid == primary ? 0 : pid, seq, name, sizeof(name));

	if (err) {
		gs_err("%s: name too long", path);
		return err;
	}
	err = gs_snapshot_file_write(m, pid, now_ns, name);
	if (!err)
		gs_info("pid %d: memory snapshot (%s) written to %s", (int)pid, reason, name);
	return err;
}

int gs_snapshot_files_write(struct gs_mem_model *m, const char *path, pid_t primary, pid_t only,
			    unsigned int seq, const char *reason, uint64_t now_ns)
{
	int err = 0;

	/* a process that never showed PyTorch (-a sees every CUDA process exit) gets none */
	if (only > 0)
		return only == primary || gs_mem_model__torch_proc(m, only)
			       ? write_one(m, path, only, primary, seq, reason, now_ns)
			       : 0;
	/* the target's file is written even before it showed PyTorch */
	if (primary > 0 && !gs_mem_model__torch_proc(m, primary))
		err = write_one(m, path, primary, primary, seq, reason, now_ns);
	for (size_t i = 0; i < m->torch.nr_procs && !err; i++)
		err = write_one(m, path, m->torch.procs[i]->pid, primary, seq, reason, now_ns);
	return err;
}
