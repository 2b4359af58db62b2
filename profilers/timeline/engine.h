/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* engine.h: the timeline engine: tracker events -> Chrome trace rows, per file and rank. */
#ifndef GS_TIMELINE_ENGINE_H
#define GS_TIMELINE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "profilers/mem_model.h"
#include "profilers/timeline/gpu_rows.h"
#include "profilers/timeline/nvtx_rows.h"
#include "profilers/timeline/rank_files.h"
#include "profilers/timeline/trace_stats.h"
#include "profilers/tracker.h"
#include "stitch/trace_writer.h"

/*
 * The rendering state of one recording. Its user (record) makes the parts (writer, ranks,
 * stacks, names, stats, the optional gpu/nvtx renderers), hands the tracker the handlers of
 * gs_timeline__tracker_ops() and, at the end, writes each file's metadata through
 * gs_timeline__writer(). Every row goes through one place (render_begin/render_end in
 * engine.c): a different encoding plugs in there. Category words: timeline/vocab.h.
 */
struct gs_timeline {
	struct gs_tracker *tracker;
	uint32_t families; /* the CUDA families rendered as slices (GS_FAM_BIT) */
	struct gs_stack_table *stacks;
	struct gs_kernel_names *names;
	struct gs_mem_model mem;	 /* memory state: the counter tracks render it */
	struct gs_timeline_names *named; /* thread tracks named; process labels, written last */
	struct gs_addr_map *outputs;	 /* -o DIR/: (pid, 0) -> its output, kept past its exit */
	/* the summary, counted from the rows as written (gpusnoop stats: from the file) */
	struct gs_trace_stats *stats;
	struct gs_stats_row row;   /* the slice being written; ph 0: none */
	struct gs_gpu_rows *gpu;   /* -e gpu */
	struct gs_nvtx_rows *nvtx; /* -e nvtx */
	/* the output file: each event rendered alone, then written in timestamp order; with
	 * -o DIR/ a sink for what comes after a failure, the events going to ranks' files */
	struct gs_trace_writer *writer;
	struct gs_rank_files *ranks;	/* -o DIR/: one file per rank */
	struct gs_trace_writer *cur;	/* the writer of the event being rendered */
	struct gs_chrome_trace *render; /* the event being rendered */
	struct gs_kallsyms *kallsyms;	/* kernel frames of CPU samples; NULL: unnamed */
	char **stack_json;		/* by stack id: the JSON array of its frames, made once */
	size_t nr_stack_json;
	uint64_t events, cpu_samples;
	/* the rank of a one-file trace's processes, for its distributedInfo (-o DIR/: per file) */
	bool rank_seen, ranks_mixed; /* mixed: two ranks in the file, none is written */
	int32_t rank, world_size;    /* world_size -1: unknown */
	int error;		     /* the first failure (-errno): the recording stops */
	/* called at a process's end before the memory model forgets it (NULL: none) */
	void (*before_forget)(void *ctx, pid_t pid, bool exec);
	void *hook_ctx;
};

/* The handlers of the events the engine renders (ctx: tl); the caller adds proc_gone. */
void gs_timeline__tracker_ops(struct gs_timeline *tl, struct gs_tracker_ops *ops);
/* How gpu_rows.c and nvtx_rows.c render through tl's ordered output. */
struct gs_gpu_rows_emit gs_timeline__gpu_emit(struct gs_timeline *tl);
struct gs_nvtx_rows_emit gs_timeline__nvtx_emit(struct gs_timeline *tl);
/* What made the daemon write a trace (kind: "cuda-oom", ...): an instant over pid at ts_ns. */
void gs_timeline__trigger(struct gs_timeline *tl, pid_t pid, uint64_t ts_ns, const char *kind);
/* A process's image is gone (exit, or exec: a new one follows). */
void gs_timeline__proc_gone(struct gs_timeline *tl, pid_t pid, bool exec);
/* output's writer: 0, the one file (or the sink of -o DIR/); i + 1, the i-th rank file. */
struct gs_trace_writer *gs_timeline__writer(struct gs_timeline *tl, size_t output);
/*
 * Kineto's top-level keys of output, where HTA looks for them: -e gpu's deviceProperties, and
 * distributedInfo: a rank file's; the one file's when its processes have one rank (tl->rank,
 * or -e gpu's from its records); else none.
 */
void gs_timeline__top_level(struct gs_timeline *tl, size_t output);
/* Writes the process names of output (each process once, its last label) to its file. */
void gs_timeline__write_names(struct gs_timeline *tl, size_t output);
/* Every file's events older than the reorder window into the file; all of them. */
void gs_timeline__advance(struct gs_timeline *tl, uint64_t now_ns);
void gs_timeline__flush(struct gs_timeline *tl);
/* Counts each process's last label in the summary (once, before it is printed). */
void gs_timeline__count_names(struct gs_timeline *tl);
/* Frees what the engine made itself (formatted stacks); the parts stay the caller's. */
void gs_timeline__release(struct gs_timeline *tl);

#endif /* GS_TIMELINE_ENGINE_H */
