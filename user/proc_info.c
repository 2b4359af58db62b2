// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc_info.c: /proc/PID/task/TID/comm and /proc/PID/exe. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "user/proc_info.h"

void gs_read_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

bool gs_read_exe_path(pid_t pid, char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	char link[64];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	n = readlink(link, buf, len - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if ((size_t)n > strlen(deleted) && !strcmp(buf + n - strlen(deleted), deleted))
		buf[n - strlen(deleted)] = '\0';
	return true;
}

char *gs_read_text_file(const char *path, size_t *len)
{
	char *text = NULL, chunk[65536];
	size_t size = 0, n;
	FILE *f = fopen(path, "re");
	FILE *mem;
	int err;

	if (!f)
		return NULL;
	mem = open_memstream(&text, &size);
	if (!mem) {
		fclose(f);
		return NULL;
	}
	/* proc files have no size: read to the end */
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, mem);
	err = ferror(f) ? (errno ? errno : EIO) : 0;
	fclose(f);
	if (fclose(mem) && !err)
		err = ENOMEM;
	if (err) {
		free(text);
		errno = err;
		return NULL;
	}
	if (len)
		*len = size;
	return text;
}
