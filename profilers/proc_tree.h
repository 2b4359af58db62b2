/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* proc_tree.h: the processes a session follows, with their parents and MPI/torchrun ranks. */
#ifndef GS_PROC_TREE_H
#define GS_PROC_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* the environment read for ranks: enough for any launcher's, bounded against a hostile one */
#define GS_ENVIRON_MAX (256u << 10)

struct gs_proc_tree_entry {
	pid_t pid;
	pid_t ppid;	    /* the target that forked it; 0 for a root (-p PID, -- CMD) */
	int32_t rank;	    /* RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID; -1: none */
	int32_t local_rank; /* LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK or SLURM_LOCALID; -1 */
	char comm[16];	    /* as last read (after its last exec) */
	bool exited;
};

struct gs_proc_tree;

/* NULL on allocation failure; free with gs_proc_tree__free(). */
struct gs_proc_tree *gs_proc_tree__new(void);
void gs_proc_tree__free(struct gs_proc_tree *tree);
/*
 * Records pid, forked by ppid (0: a root), and reads its comm and ranks. A pid seen before
 * (reused after an exit) starts afresh. Returns 0 or -ENOMEM.
 */
int gs_proc_tree__add(struct gs_proc_tree *tree, pid_t pid, pid_t ppid);
/* pid replaced its image: its comm and environment are the new program's. */
void gs_proc_tree__exec(struct gs_proc_tree *tree, pid_t pid);
/* pid exited: it stays listed, marked exited. */
void gs_proc_tree__exit(struct gs_proc_tree *tree, pid_t pid);
/* The entry of pid (borrowed until the next add), NULL when it is not in the tree. */
const struct gs_proc_tree_entry *gs_proc_tree__find(const struct gs_proc_tree *tree, pid_t pid);

/*
 * A process's name for people and trace viewers: "comm (rank R)", "comm (rank R, local L)", or
 * comm alone when e (NULL allowed) has no rank. Truncated to fit len.
 */
void gs_proc_tree_label(const struct gs_proc_tree_entry *e, const char *comm, char *buf,
			size_t len);

/*
 * Ranks in an environment block of len bytes ("NAME=value" strings, each ended by a NUL, as
 * /proc/PID/environ gives it; the last may be unterminated): RANK, else OMPI_COMM_WORLD_RANK,
 * else SLURM_PROCID; the local rank and the world size (NULL: not wanted) likewise. A value
 * that is not a plain decimal number below 2^31 is ignored; each is -1 when absent.
 */
void gs_parse_rank_env(const char *env, size_t len, int32_t *rank, int32_t *local_rank,
		       int32_t *world_size);
/* The same from pid's environment, at most GS_ENVIRON_MAX bytes of it; 0 or -errno. */
int gs_read_rank_env(pid_t pid, int32_t *rank, int32_t *local_rank, int32_t *world_size);

/*
 * The descendants of roots living now, from one pass over /proc: *pids and *ppids (caller
 * frees both) of *nr, parents before their children. Returns 0 or -errno.
 */
int gs_proc_tree_descendants(const pid_t *roots, size_t nr_roots, pid_t **pids, pid_t **ppids,
			     size_t *nr);

#endif /* GS_PROC_TREE_H */
