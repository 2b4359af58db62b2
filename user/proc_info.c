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
	char path[64], text[64];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	/* not fgets: a comm may hold newlines; only the one the kernel appends goes */
	if (f) {
		n = fread(text, 1, sizeof(text) - 1, f);
		fclose(f);
	}
	if (n && text[n - 1] == '\n')
		n--;
	if (!n) {
		snprintf(buf, len, "?");
		return;
	}
	text[n] = '\0';
	snprintf(buf, len, "%s", text);
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

bool gs_is_kernel_thread(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned int flags;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the comm, in parentheses, may hold ')' and spaces: the fields follow the last ')' */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %u", &flags) != 1)
		return false;
	return flags & GS_PF_KTHREAD;
}

char *gs_read_text_file(const char *path, size_t *len)
{
	char *text = NULL, chunk[65536];
	size_t size = 0, n, total = 0;
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
	/* proc files have no size: read to the end, or to the bound */
	err = 0;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (n > GS_TEXT_FILE_MAX - total) {
			err = EFBIG;
			break;
		}
		total += n;
		fwrite(chunk, 1, n, mem);
	}
	if (!err && ferror(f))
		err = errno ? errno : EIO;
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
