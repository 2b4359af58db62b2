// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/* test_proc_tree.c: ranks from environment blocks, parents and exits kept in the tree. */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/unit/harness.h"
#include "profilers/proc_tree.h"

#define ENV(s) s, sizeof(s) - 1

GS_TEST(ranks_from_torchrun_environment)
{
	int32_t rank, local, size;

	gs_parse_rank_env(ENV("PATH=/bin\0RANK=5\0LOCAL_RANK=1\0WORLD_SIZE=8\0"), &rank, &local,
			  &size);
	GS_EXPECT_EQ(rank, 5);
	GS_EXPECT_EQ(local, 1);
	GS_EXPECT_EQ(size, 8);
	gs_parse_rank_env(ENV("OMPI_COMM_WORLD_SIZE=4\0SLURM_NTASKS=16\0"), &rank, &local, &size);
	GS_EXPECT_EQ(size, 4);
}

GS_TEST(launcher_names_win_over_the_schedulers)
{
	int32_t rank, local;

	gs_parse_rank_env(ENV("SLURM_PROCID=9\0SLURM_LOCALID=3\0OMPI_COMM_WORLD_RANK=2\0"), &rank,
			  &local, NULL);
	GS_EXPECT_EQ(rank, 2);
	GS_EXPECT_EQ(local, 3);
	gs_parse_rank_env(ENV("SLURM_PROCID=9"), &rank, &local,
			  NULL); /* unterminated last string */
	GS_EXPECT_EQ(rank, 9);
	GS_EXPECT_EQ(local, -1);
}

GS_TEST(hostile_values_are_ignored)
{
	int32_t rank, local;

	gs_parse_rank_env(ENV("RANK=-1\0RANK=1x\0RANK=\0RANK=2147483648\0LOCAL_RANK=99999999999\0"
			      "RANKS=4\0XRANK=4\0RANK\0"),
			  &rank, &local, NULL);
	GS_EXPECT_EQ(rank, -1);
	GS_EXPECT_EQ(local, -1);
	gs_parse_rank_env(ENV("RANK=junk\0SLURM_PROCID=7\0RANK=2147483647\0"), &rank, &local, NULL);
	GS_EXPECT_EQ(rank, 2147483647);
	gs_parse_rank_env("", 0, &rank, &local, NULL);
	GS_EXPECT_EQ(rank, -1);
}

GS_TEST(exited_processes_stay_and_a_reused_pid_starts_afresh)
{
	struct gs_proc_tree *tree = gs_proc_tree__new();
	const struct gs_proc_tree_entry *e;

	if (!GS_EXPECT(tree))
		return;
	GS_EXPECT_EQ(gs_proc_tree__add(tree, getpid(), 0), 0);
	GS_EXPECT_EQ(gs_proc_tree__add(tree, 0x3ffffff0, getpid()), 0); /* no such process */
	gs_proc_tree__exit(tree, 0x3ffffff0);
	e = gs_proc_tree__find(tree, 0x3ffffff0);
	GS_EXPECT(e && e->exited && e->ppid == getpid() && e->rank == -1);
	GS_EXPECT_EQ(gs_proc_tree__add(tree, 0x3ffffff0, 1), 0);
	e = gs_proc_tree__find(tree, 0x3ffffff0);
	GS_EXPECT(e && !e->exited && e->ppid == 1);
	e = gs_proc_tree__find(tree, getpid());
	GS_EXPECT(e && e->ppid == 0 && !e->exited);
	GS_EXPECT(!gs_proc_tree__find(tree, 0x3ffffff1));
	gs_proc_tree__free(tree);
}

GS_TEST(rank_read_from_a_live_process)
{
	struct gs_proc_tree *tree = gs_proc_tree__new();
	const struct gs_proc_tree_entry *e;
	char *const argv[] = { "sleep", "10", NULL };
	char *const envp[] = { "A=1", "RANK=3", "LOCAL_RANK=0", NULL };
	int sync[2];
	char c;
	pid_t pid;

	if (!GS_EXPECT(tree) || !GS_EXPECT(pipe2(sync, O_CLOEXEC) == 0))
		return;
	pid = fork();
	if (pid == 0) {
		execve("/bin/sleep", argv, envp);
		_exit(127);
	}
	close(sync[1]);
	GS_EXPECT_EQ(read(sync[0], &c, 1), 0); /* closed at exec */
	close(sync[0]);
	GS_EXPECT_EQ(gs_proc_tree__add(tree, pid, getpid()), 0);
	e = gs_proc_tree__find(tree, pid);
	GS_EXPECT(e && e->rank == 3 && e->local_rank == 0 && !strcmp(e->comm, "sleep"));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	gs_proc_tree__free(tree);
}

GS_TEST(descendants_of_a_process)
{
	pid_t child, grandchild = 0, *pids = NULL, *ppids = NULL, self = getpid();
	int sync[2];
	size_t nr = 0;

	if (!GS_EXPECT(pipe(sync) == 0))
		return;
	child = fork();
	if (child == 0) {
		pid_t g = fork();

		if (g == 0) {
			pause();
			_exit(0);
		}
		if (write(sync[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		pause();
		_exit(0);
	}
	GS_EXPECT_EQ(read(sync[0], &grandchild, sizeof(grandchild)), (ssize_t)sizeof(grandchild));
	GS_EXPECT_EQ(gs_proc_tree_descendants(&self, 1, &pids, &ppids, &nr), 0);
	GS_EXPECT_EQ(nr, 2);
	if (nr == 2) {
		GS_EXPECT(pids[0] == child && ppids[0] == self);
		GS_EXPECT(pids[1] == grandchild && ppids[1] == child);
	}
	free(pids);
	free(ppids);
	kill(grandchild, SIGKILL);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(sync[0]);
	close(sync[1]);
}

GS_TEST_MAIN(ranks_from_torchrun_environment, launcher_names_win_over_the_schedulers,
	     hostile_values_are_ignored, exited_processes_stay_and_a_reused_pid_starts_afresh,
	     rank_read_from_a_live_process, descendants_of_a_process)
