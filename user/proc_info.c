// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc_info.c: /proc/PID/task/TID/comm and /proc/PID/exe. */
#include <stdio.h>
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
