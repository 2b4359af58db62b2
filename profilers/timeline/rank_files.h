/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* rank_files.h: `record -o DIR/`: one trace file per rank, as Kineto writes them. */
#ifndef GS_TIMELINE_RANK_FILES_H
#define GS_TIMELINE_RANK_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "stitch/reorder.h"
#include "stitch/trace_writer.h"

/*
 * Each process's events go to DIR/rank-R.json when its environment names a rank (RANK,
 * OMPI_COMM_WORLD_RANK, SLURM_PROCID), else to DIR/pid-P.json. A file is opened when its
 * first event comes, written to a temporary beside its name and renamed into place when the
 * recording ends well (user/out_file.h), so Holistic Trace Analysis can load DIR; then, when
 * DIR has rank files, the pid files move to DIR/no-rank/ (HTA would read one as rank 0).
 */
#define GS_RANK_FILES_NO_RANK_DIR "no-rank"

struct gs_rank_file {
	long rank;	 /* -1: none, pid names the file */
	long world_size; /* WORLD_SIZE or its kin in its processes' environment; -1 */
	int size_reads;	 /* reads of it so far */
	pid_t pid;
	struct gs_out *out;
	struct gs_trace_writer *writer;
};

struct gs_rank_files {
	int dirfd;
	char *dir;
	uint64_t window_ns; /* each file's reorder window */
	/* what all the files' windows hold, under one GS_TRACE_WRITER_MAX_HELD_BYTES whatever
	 * the number of ranks */
	struct gs_reorder_budget held;
	struct gs_rank_file *files;
	size_t nr, cap;
	int error; /* the first file that could not be opened: said once, not retried */
};

/* Whether output names a directory: it ends in '/' or is one already. */
bool gs_rank_files_wanted(const char *output);
/* Opens dir (made when missing). Returns 0 or -errno (logged); free with __free(). */
int gs_rank_files__open(struct gs_rank_files **rr, const char *dir, uint64_t window_ns);
/* The file of rank (>= 0) or else of pid, opened on first use: its index, or -errno (logged). */
long gs_rank_files__file(struct gs_rank_files *rr, long rank, pid_t pid);
/*
 * Kineto's "distributedInfo" into j, a trace's top-level object (HTA finds the rank there):
 * rank (nothing when < 0) and world_size (left out when < 0).
 */
void gs_rank_files__distributed_info(struct gs_json *j, long rank, long world_size);
/* A rank file's "distributedInfo"; none for a pid file. */
void gs_rank_files__top_level(const struct gs_rank_file *f, struct gs_json *j);
/* Renames every file into place. Returns 0 or the first -errno (logged); frees nothing. */
int gs_rank_files__close(struct gs_rank_files *rr);
/* Removes the temporaries of files not closed; NULL is ignored. */
void gs_rank_files__free(struct gs_rank_files *rr);

#endif /* GS_TIMELINE_RANK_FILES_H */
