// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* stop_set.c: answering the processes bpf/proc.bpf.c stopped, and finding those never answered. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "bpf/gs_event.h"
#include "profilers/stop_set.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

int gs_parse_stat_start(const char *buf, size_t len, uint64_t *start)
{
	const char *p = NULL, *end = buf + len;
	uint64_t v = 0;
	int field = 2; /* the comm, which may hold spaces and ')', ends at the last ')' */

	for (size_t i = len; i > 0 && !p; i--)
		if (buf[i - 1] == ')')
			p = buf + i;
	if (!p)
		return -EINVAL;
	while (p < end && field < 22) {
		if (*p++ == ' ')
			field++;
	}
	if (field != 22 || p >= end || *p < '0' || *p > '9')
		return -EINVAL;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p < end && *p != ' ' && *p != '\n')
		return -EINVAL;
	*start = v;
	return 0;
}

/* Writes pid in decimal after prefix; no stdio: the watchdog runs this after fork(). */
static void proc_path(char *buf, pid_t pid)
{
	char digits[16];
	size_t n = 0, at;

	do {
		digits[n++] = (char)('0' + pid % 10);
		pid /= 10;
	} while (pid > 0 && n < sizeof(digits));
	memcpy(buf, "/proc/", 6);
	for (at = 6; n > 0; at++)
		buf[at] = digits[--n];
	memcpy(buf + at, "/stat", 6);
}

int gs_proc_start(pid_t pid, uint64_t *start)
{
	char path[40], buf[1024];
	ssize_t n;
	int fd;

	if (pid <= 0)
		return -EINVAL;
	proc_path(path, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0)
		return -EIO;
	return gs_parse_stat_start(buf, (size_t)n, start);
}

int gs_resume_process(pid_t pid, uint64_t start)
{
	uint64_t now;
	int pidfd, err;

	/* the pidfd first: from here on, that pid being reused cannot redirect the signal */
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pidfd < 0)
		return -errno;
	err = gs_proc_start(pid, &now);
	if (!err && start && now != start)
		err = -ESRCH; /* another process has the pid now */
	if (!err && syscall(SYS_pidfd_send_signal, pidfd, SIGCONT, NULL, 0))
		err = -errno;
	close(pidfd);
	return err;
}

bool gs_stop_set__answer(int map_fd, pid_t pid, uint64_t start)
{
	struct gs_stopped st;
	__u32 key = (__u32)pid;

	if (bpf_map_lookup_and_delete_elem(map_fd, &key, &st))
		return false; /* exited (its entry went with it), or swept already */
	if (st.foreign || (start && st.start != start))
		return false;
	return gs_resume_process(pid, st.start) == 0;
}

static bool seen(const uint32_t *prev, size_t nr, uint32_t pid)
{
	for (size_t i = 0; i < nr; i++)
		if (prev[i] == pid)
			return true;
	return false;
}

size_t gs_stop_set__sweep(int map_fd, uint32_t *prev, size_t *nr_prev)
{
	__u32 key, next, left[GS_STOP_SWEEP_MAX];
	size_t resumed = 0, nr_left = 0, nr_old = prev ? *nr_prev : 0;
	struct gs_stopped st;
	bool first = true;

	/* deleting while walking: start over after each deletion (the set is small) */
	while (!bpf_map_get_next_key(map_fd, first ? NULL : &key, &next)) {
		first = false;
		key = next;
		if (prev && !seen(prev, nr_old, key)) {
			if (nr_left < GS_STOP_SWEEP_MAX && !seen(left, nr_left, key))
				left[nr_left++] = key;
			continue;
		}
		if (bpf_map_lookup_and_delete_elem(map_fd, &key, &st))
			continue;
		if (!st.foreign && !gs_resume_process((pid_t)key, st.start))
			resumed++;
		first = true;
		if (resumed > GS_MAX_STOPPED * 2)
			break; /* a set refilled as fast as it is read: next sweep */
	}
	if (prev) {
		memcpy(prev, left, nr_left * sizeof(*left));
		*nr_prev = nr_left;
	}
	return resumed;
}

int gs_exe_file_key(pid_t pid, struct gs_file_key *key)
{
	char path[40];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &st))
		return -errno;
	/* the kernel's dev_t, as bpf/proc.bpf.c reads it from the superblock */
	key->dev = (__u64)major(st.st_dev) << 20 | minor(st.st_dev);
	key->ino = st.st_ino;
	return 0;
}
