// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* proc_mem.c: pread from the mapped file, else from /proc/PID/mem. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "user/proc_maps.h"
#include "user/proc_mem.h"

static ssize_t read_mapped_file(const struct gs_maps *maps, const struct gs_mapping *m,
				uint64_t addr, void *buf, size_t len)
{
	ssize_t n;
	int fd;

	/* the file the snapshot names, or none: then /proc/PID/mem shows what is mapped */
	fd = gs_mapping__open(maps, m, NULL);
	if (fd < 0)
		return fd;
	if (len > m->end - addr)
		len = m->end - addr;
	n = pread(fd, buf, len, (off_t)(addr - m->start + m->pgoff));
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

static ssize_t read_proc_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len, (off_t)addr);
	if (n < 0)
		n = -errno;
	close(fd);
	return n;
}

/* Reads up to len bytes; returns how many were read or -errno. */
static ssize_t read_some(const struct gs_maps *maps, uint64_t addr, void *buf, size_t len)
{
	const struct gs_mapping *m = gs_maps__find(maps, addr);
	ssize_t n = -ENOENT;

	/* a private writable mapping (.data, .bss) no longer matches its file once written */
	if (m && m->path && !m->writable)
		n = read_mapped_file(maps, m, addr, buf, len);
	if (n <= 0)
		n = read_proc_mem(maps->pid, addr, buf, len);
	return n;
}

int gs_read_process_memory(const struct gs_maps *maps, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = read_some(maps, addr, buf, len);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EIO;
}

int gs_read_process_string(const struct gs_maps *maps, uint64_t addr, char *buf, size_t len)
{
	ssize_t n;

	if (!len)
		return -EINVAL;
	n = read_some(maps, addr, buf, len - 1);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return memchr(buf, '\0', (size_t)n + 1) ? 0 : -EIO;
}
