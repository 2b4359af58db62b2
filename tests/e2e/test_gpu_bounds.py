#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_gpu_bounds.py: what a traced process can make record's GPU side hold, write or load."""
import gzip
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, Gpusnoop, MiB, Workload, expect_eq, main,  # noqa: E402
                     run_gpusnoop, test)
from test_gpu import (INJECTION, LOAD_TIMEOUT, gpu_env, gpu_rows, load,  # noqa: E402
                      ns)
from test_daemon import NOBODY, Daemon, config_file  # noqa: E402
from test_security_daemon import NobodyWorkload  # noqa: E402

PIECES = 128  # user/busy_union.h: GS_BUSY_PIECES


def true_union(events):
    """Exact busy ns and pieces of the union of the trace's GPU rows."""
    spans = sorted((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events)
    busy, pieces, cur = 0, 0, None
    for start, end in spans:
        if cur is None or start > cur[1]:
            if cur:
                busy += cur[1] - cur[0]
            cur, pieces = [start, end], pieces + 1
        else:
            cur[1] = max(cur[1], end)
    busy += cur[1] - cur[0]
    return busy, pieces, spans[0][0], max(e for _, e in spans)


@test
def gpu_busy_of_many_idle_gaps_is_a_range_holding_the_truth():
    # 200 rounds with the device idle between them: more disjoint pieces than are kept
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--",
                                  os.path.join(BIN, "gs_gpu"),
                                  env=gpu_env(GS_GPU_LOOPS="200", GS_GPU_GAP_US="7000"),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace, _ = load(out)
    rows = gpu_rows(trace)
    expect_eq(len(rows), 200 * 30 + 8, "GPU records in the trace")
    busy, pieces, first, last = true_union(rows)
    assert pieces > PIECES, f"the workload left only {pieces} pieces"
    # before: every interval was kept (16 B each, for ever) and one exact figure printed
    m = re.search(r"GPU 0: busy ([\d.]+)% to ([\d.]+)% of ([\d.]+) ms \(first to last record\)",
                  err)
    assert m, err
    lo, hi, span_ms = float(m[1]), float(m[2]), float(m[3])
    expect_eq(span_ms, round((last - first) / 1e6, 3), "span")
    truth = 100.0 * busy / (last - first)
    assert lo - 0.05 <= truth <= hi + 0.05, (lo, truth, hi)
    assert lo < hi, (lo, hi)
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)


def record_ranks_into(out_dir):
    """gs_ranks' one rank under record -e gpu -o out_dir: (status, stderr lines)."""
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out_dir, "--", "env",
                                  "GS_RANKS=1", os.path.join(BIN, "gs_ranks"), env=gpu_env(),
                                  timeout=LOAD_TIMEOUT)
    return status, [l for l in err.splitlines() if "error" in l]


@test
def gpu_directory_output_follows_no_foreign_symlink():
    tmp = tempfile.mkdtemp(prefix="gs-ranks-link-")
    try:
        victim = os.path.join(tmp, "victim")  # root's, with a root file of rank-0's name
        os.mkdir(victim)
        with open(os.path.join(victim, "rank-0.json"), "w") as f:
            f.write("root's\n")
        link = os.path.join(tmp, "out")
        os.symlink(victim, link)
        os.lchown(link, NOBODY, NOBODY)  # another user's symlink
        # before: followed, and rank-0.json replaced by the trace
        status, errs = record_ranks_into(link + "/")
        expect_eq((status, errs), (1, [f"gpusnoop: error: -o {link}/: a symlink: refused "
                                       "(name the directory it points to)"]), "refused")
        expect_eq(sorted(os.listdir(victim)), ["rank-0.json"], "nothing new in the target")
        with open(os.path.join(victim, "rank-0.json")) as f:
            expect_eq(f.read(), "root's\n", "root's file untouched")
        # nobody's own directory is nobody's to fill: root does not write there either
        theirs = os.path.join(tmp, "theirs")
        os.mkdir(theirs)
        os.chown(theirs, NOBODY, NOBODY)
        status, errs = record_ranks_into(theirs + "/")
        expect_eq((status, errs), (1, [f"gpusnoop: error: -o {theirs}/: owned by uid {NOBODY}, "
                                       "neither yours nor root's: refused"]), "foreign dir")
        expect_eq(os.listdir(theirs), [], "nothing written there")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
def gpu_directory_output_never_replaces_a_file():
    tmp = tempfile.mkdtemp(prefix="gs-ranks-keep-")
    try:
        old = os.path.join(tmp, "rank-0.json")
        with open(old, "w") as f:
            f.write("an earlier run's\n")
        status, errs = record_ranks_into(tmp + "/")
        expect_eq(status, 1, f"status ({errs})")
        expect_eq(errs[0], f"gpusnoop: error: {tmp}/rank-0.json: exists: not overwritten "
                  "(remove it or name another directory)", "the reason")
        expect_eq(os.listdir(tmp), ["rank-0.json"], "no other file")
        with open(old) as f:
            expect_eq(f.read(), "an earlier run's\n", "the file kept")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@test
def gpu_library_a_user_names_like_ours_is_refused():
    tmp = tempfile.mkdtemp(prefix="gs-own-lib-")
    w = g = None
    try:
        # the user's own copy, named with the prefix: before, accepted by its name under -p
        lib = os.path.join(tmp, "libgpusnoop-cupti-mine.so")
        shutil.copy(INJECTION, lib)
        os.chown(lib, NOBODY, NOBODY)
        w = Workload("gs_gpu", env=gpu_env(CUDA_INJECTION64_PATH=lib))
        out = os.path.join(tmp, "gpu.json")
        g = Gpusnoop("record", "-e", "gpu", "-p", str(w.pid), "-o", out)
        g.wait_stderr("Ctrl-C to stop", LOAD_TIMEOUT)
        w.release()
        w.wait_line("done")
        expect_eq(w.finish(), 0, "workload status")
        expect_eq(g.wait(), 0, f"record status; stderr:\n{g.stderr_text()}")
        err = g.stderr_text()
        assert f"gpusnoop: warning: pid {w.pid}: {lib} is neither gpusnoop's injection " \
            "library nor a file root owns and only root may write: no GPU activity from it" \
            in err, err
        assert f"pid {w.pid}: GPU activity from" not in err, err
        trace, _ = load(out)
        expect_eq(gpu_rows(trace), [], "no GPU record from the user's library")
    finally:
        if g:
            g.kill()
        if w:
            w.kill()
        shutil.rmtree(tmp, ignore_errors=True)


@test
def gpu_daemon_user_recording_stops_itself_at_user_max_bytes():
    tmp, conf = config_file("gs-daemon-cap-", "user-max-bytes 1M\n")
    d = Daemon("--config", conf)
    w = None
    try:
        # nobody's job: an OOM the daemon reports (so it follows it), then launches for ever
        w = NobodyWorkload("gs_gpu", gpu_env(CUDA_INJECTION64_PATH=INJECTION, GS_GPU_OOM="1",
                                             GS_FAKE_CUDA_MEM_LIMIT=str(256 * MiB),
                                             GS_GPU_LOOPS="100000000",
                                             GS_GPU_GAP_US="100"))  # CUPTI's records arrive before the cap
        d.wait_probed()
        w.release()
        w.wait_line("oom 2")
        d.g.wait_stderr(f"pid {w.pid} (gs_gpu): cuda-oom: report", LOAD_TIMEOUT)
        status, out, err = d.ctl("record", str(w.pid), "600", "gpu", uid=NOBODY)
        expect_eq(status, 0, f"nobody's recording ({err})")
        path = out.strip()
        d.g.wait_stderr("recording; Ctrl-C to stop", LOAD_TIMEOUT)
        w.release()
        # before: the child wrote on (74 MB in 20 s) until the 600 s or the job ended
        line = d.g.wait_stderr("recording stopped: its trace reached ", 60)
        d.g.wait_stderr(f"recording done: {path}", 60)
        assert w.proc.poll() is None, "the job still runs: the recording stopped itself"
        size = os.path.getsize(path)
        assert size <= MiB, (size, line)
        with gzip.open(path, "rt") as f:
            trace = json.load(f)  # complete and valid
        cap = trace["metadata"]["size_cap"]
        expect_eq(cap["max_bytes"], MiB, "the cap the file says")
        assert len(gpu_rows(trace)) > 1000, "GPU records before the cap"
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()
        shutil.rmtree(d.dir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
