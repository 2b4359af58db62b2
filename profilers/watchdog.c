// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* watchdog.c: a child that resumes what gpusnoop stopped once gpusnoop is gone, SIGKILL included. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "profilers/stop_set.h"
#include "profilers/watchdog.h"

#define WATCHDOG_DRAIN_ROUNDS 200 /* 10 s */
/* gpusnoop's own ending: its probes stop no process any more, one last sweep is enough */
#define WATCHDOG_CLEAN_EXIT 'q'

static void on_parent_death(int sig)
{
	(void)sig; /* only interrupts the read */
}

/* Every descriptor but keep[0..1] (>= 3), so that no probe stays attached through us. */
static void close_others(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	syscall(SYS_close_range, 3U, (unsigned)lo - 1, 0U);
	syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0U);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U);
}

/* The OOM killer may take gpusnoop under memory pressure: never its watchdog. */
static void spare_from_oom_killer(void)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (write(fd, "-1000", 5) < 0) {
		/* not allowed: the default score, tiny as the process is */
	}
	close(fd);
}

/* The id of map fd, 0 if unknown. */
static __u32 map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* Whether a loaded BPF program still uses map id: a probe that can stop a process again. */
static bool map_in_use(__u32 id)
{
	__u32 prog = 0;

	while (id && !bpf_prog_get_next_id(prog, &prog)) {
		__u32 maps[64], len;
		struct bpf_prog_info info;
		int fd = bpf_prog_get_fd_by_id(prog);
		bool uses = false;

		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		info.nr_map_ids = sizeof(maps) / sizeof(maps[0]);
		info.map_ids = (__u64)(unsigned long)maps;
		len = sizeof(info);
		if (!bpf_obj_get_info_by_fd(fd, &info, &len))
			for (__u32 i = 0; i < info.nr_map_ids && i < 64; i++)
				uses |= maps[i] == id;
		close(fd);
		if (uses)
			return true;
	}
	return false;
}

/*
 * The child: only system calls from here (the parent may have threads). It waits for the
 * pipe's end of file (every writer gone: gpusnoop's exit, by any signal) or the parent-death
 * signal, then resumes every process in the stopped set until no program that could stop one
 * again is loaded (the kernel detaches gpusnoop's probes as it releases its descriptors,
 * which may come after the pipe's end), at most WATCHDOG_DRAIN_ROUNDS times 50 ms; after
 * WATCHDOG_CLEAN_EXIT, once.
 */
static void __attribute__((noreturn)) watch(int stopped_fd, int read_fd, pid_t parent)
{
	struct sigaction sa = { .sa_handler = on_parent_death };
	struct timespec pause = { .tv_nsec = 50 * 1000 * 1000 };
	__u32 id = map_id(stopped_fd);
	bool clean = false;
	char c;

	close_others(stopped_fd, read_fd);
	/* terminal signals are for gpusnoop: out of its process group, ignoring the rest */
	setpgid(0, 0);
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGCHLD, SIG_DFL);
	sigaction(SIGUSR1, &sa, NULL);
	prctl(PR_SET_PDEATHSIG, SIGUSR1);
	spare_from_oom_killer();
	while (getppid() == parent) {
		ssize_t n = read(read_fd, &c, 1);

		if (n == 1 && c == WATCHDOG_CLEAN_EXIT) {
			clean = true;
			break;
		}
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	for (int round = 0; round < WATCHDOG_DRAIN_ROUNDS; round++) {
		bool last = clean || !map_in_use(id);

		gs_stop_set__sweep(stopped_fd, NULL, NULL);
		if (last)
			break;
		nanosleep(&pause, NULL);
	}
	_exit(0);
}

int gs_watchdog__start(struct gs_watchdog *w, int stopped_fd)
{
	pid_t parent = getpid();
	int p[2];

	w->pid = 0;
	w->write_fd = -1;
	if (pipe2(p, O_CLOEXEC))
		return -errno;
	w->pid = fork();
	if (w->pid < 0) {
		w->pid = 0;
		close(p[0]);
		close(p[1]);
		return -errno;
	}
	if (w->pid == 0) {
		close(p[1]);
		watch(stopped_fd, p[0], parent);
	}
	close(p[0]);
	w->write_fd = p[1];
	return 0;
}

void gs_watchdog__stop(struct gs_watchdog *w)
{
	char clean = WATCHDOG_CLEAN_EXIT;

	if (!w->pid)
		return;
	if (write(w->write_fd, &clean, 1) != 1) {
		/* then it sees the end of file, and waits for the probes to go */
	}
	close(w->write_fd);
	waitpid(w->pid, NULL, 0);
	w->pid = 0;
	w->write_fd = -1;
}
