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
