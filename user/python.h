/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* python.h: Python frames in every stack: interpreter discovery, the walk's map, the merge. */
#ifndef GS_PYTHON_H
#define GS_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <linux/types.h>
#include "bpf/gs_event.h"

struct bpf_object;
struct gs_symcache;
struct gs_python;

/*
 * Creates the py_procs map the BPF walk reads (bpf/gs_python.bpf.h). Names are kept in
 * symcache's Python names, so that every stack table symbolizing through it names the
 * frames. Returns NULL with errno set.
 */
struct gs_python *gs_python__new(struct gs_symcache *symcache);
void gs_python__free(struct gs_python *py);
/*
 * Makes an object's py_procs and py_pids maps (opened, not loaded) the session's; py NULL
 * (--no-python): the object keeps its own, empty ones. Returns 0 or -errno.
 */
int gs_python__share_maps(struct gs_python *py, struct bpf_object *obj);

/*
 * Looks for CPython in pid (after its maps snapshot in symcache was refreshed) and, the
 * first time one is found, tells the BPF walk where its frames are. An interpreter that is
 * not supported is logged once per process; its stacks stay native.
 */
void gs_python__scan(struct gs_python *py, pid_t pid);
void gs_python__forget(struct gs_python *py, pid_t pid);

/* Takes the names of a code object BPF sent (GS_EV_PYCODE). */
void gs_python__learn(struct gs_python *py, const struct gs_py_code_event *e);
/* Keeps a GS_EV_PYSTACK record until the record it belongs to arrives. */
void gs_python__stash(struct gs_python *py, const struct gs_py_stack_event *e);

/*
 * Frames of a merged stack at most: the native ones, every Python frame, the marker of
 * missing native frames and a truncation mark.
 */
#define GS_PY_MERGED_MAX (GS_MAX_STACK + GS_PY_MAX_FRAMES + 2)
/* the largest fixed part before frames[] of the records below (checked in python.c) */
#define GS_PY_MERGED_HEAD 1536

/*
 * Room for any record gs_python__merge_record() writes: its frames[] go on past the
 * record's own GS_MAX_STACK into room, up to GS_PY_MERGED_MAX (nr_frames says how many).
 */
union gs_py_merged {
	struct gs_mem_alloc alloc;
	struct gs_mem_free_ret free_ret;
	struct gs_cuda_call call;
	struct gs_cpu_sample sample;
	struct gs_torch_mem torch_mem;
	struct gs_torch_oom torch_oom;
	__u8 room[GS_PY_MERGED_HEAD + GS_PY_MERGED_MAX * sizeof(__u64)];
};

/*
 * For a record with GS_EV_F_PYSTACK (rec, already validated by gs_event_decode()): writes
 * into out a copy whose frames are the native frames with each run of the interpreter's
 * evaluation loop replaced by the Python frames it ran (names: user/python_names.h), and
 * the Python frames native unwinding did not reach after a marker frame, and a truncation
 * mark (user/stack_marks.h) when BPF cut the Python stack: at most GS_PY_MERGED_MAX frames. Returns false (out untouched) when there is nothing to merge.
 */
bool gs_python__merge_record(struct gs_python *py, const void *rec, union gs_py_merged *out);

/*
 * For a record whose native stack fills its GS_MAX_STACK frames (most likely cut there):
 * writes into out a copy with a [truncated] mark (user/stack_marks.h) after them. Returns
 * false (out untouched) for any other record. Needs no gs_python (--no-python too).
 */
bool gs_python__mark_cut_stack(const void *rec, union gs_py_merged *out);

#endif /* GS_PYTHON_H */
