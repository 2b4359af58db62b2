#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_floor.py: the cheap modes of issue 30: `--stacks none` for record and leaks (exact
counts and sizes, no frames, and the output saying so)."""
import collections
import json
import os
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, LIB, MiB, Gpusnoop, Workload, expect_eq, main,  # noqa: E402
                     run_gpusnoop, test)
import test_python  # noqa: E402
from test_record import (GEMM, RELU, SCALE, dims, launches_by_kernel, load_trace,  # noqa: E402
                         slices)

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}


def leaks_reports(*args, env=None):
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--stacks", "none", *args,
                                    env=env)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    return [json.loads(l) for l in out.splitlines() if l.startswith("{")]


@test
def leaks_stacks_none_counts_exactly_without_frames():
    reports = leaks_reports("--", os.path.join(BIN, "gs_leaky"), env=NO_DRIVER)
    expect_eq([r["report"] for r in reports], ["exit", "final"], "reports written")
    final = reports[-1]
    expect_eq(final["stacks"], "none", "the report says stacks were off")
    expect_eq(final["dropped_events"], 0, "dropped events")
    proc = final["processes"][0]
    expect_eq((proc["outstanding_bytes"], proc["outstanding_allocations"]), (280 * MiB, 7),
              "outstanding bytes and allocations")
    # with no stacks every allocation of one API is one group, with no frames
    expect_eq([(s["bytes"], s["allocations"], s["api"], s["frames"]) for s in proc["stacks"]],
              [(280 * MiB, 7, "cudaMalloc", [])], "one frameless group")


@test
def leaks_text_header_says_stacks_off():
    status, out, err = run_gpusnoop("leaks", "--stacks", "none", "--",
                                    os.path.join(BIN, "gs_leaky"), env=NO_DRIVER)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    headers = [l for l in out.splitlines() if "gpusnoop leaks (" in l]
    expect_eq(len(headers), 2, "exit and final reports")
    for h in headers:
        assert h.endswith(", stacks off (--stacks none)"), h
    assert "leak_weights" not in out, out


@test
def leaks_default_report_says_user_stacks():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"), env=NO_DRIVER)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    final = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    expect_eq(final["stacks"], "user", "stacks in the default mode")
    expect_eq(len(final["processes"][0]["stacks"]), 2, "one stack per allocating function")


@test
def record_stacks_none_counts_exactly_without_frames():
    path = os.path.join(tempfile.mkdtemp(), "t.json")
    status, _, err = run_gpusnoop("record", "--stacks", "none", "-o", path, "--",
                                  os.path.join(BIN, "gs_kernels"), timeout=120)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    trace = load_trace(path)
    expect_eq(trace["metadata"]["stacks"], "none", "metadata says stacks were off")
    expect_eq(trace["metadata"]["dropped_events"], 0, "dropped events")
    pid = slices(trace)[0]["pid"]
    by_kernel = launches_by_kernel(trace, pid)
    expect_eq({k: len(v) for k, v in by_kernel.items()}, {GEMM: 3000, RELU: 1000, SCALE: 10},
              "launches per kernel")
    expect_eq(len(slices(trace, pid, "cudaStreamSynchronize")), 100, "stream syncs")
    copies = collections.Counter(e["name"] for e in slices(trace, pid) if "kind" in e["args"])
    expect_eq(copies["cudaMemcpy"], 6, "cudaMemcpy calls")
    with_stack = [e for e in trace["traceEvents"] if e.get("args", {}).get("stack")]
    expect_eq(with_stack, [], "events with a stack")


@test
def launch_records_without_frames_fit_a_stopped_reader_s_ring():
    # the reader stopped while gs_kernels makes 4010 launches and 100 syncs into a 1 MiB ring:
    # a launch's or sync's record without frames (--stacks none, or a stack sent before) is
    # 168 bytes, its string sharing frames[]'s room, so all fit (4110 x 176 ring bytes, 723
    # KB); with the string's 128 bytes reserved too (1.25 MB) a thousand were lost
    for stacks in (["--stacks", "none"], []):
        path = os.path.join(tempfile.mkdtemp(), "t.json")
        w = Workload("gs_kernels")
        g = Gpusnoop("record", *stacks, "-e", "cuda-launch,cuda-sync", "--ringbuf", "1",
                     "-p", str(w.pid), "-o", path)
        try:
            g.wait_stderr("Ctrl-C to stop")
            os.kill(g.proc.pid, signal.SIGSTOP)
            w.release()
            w.wait_line("done")
            os.kill(g.proc.pid, signal.SIGCONT)
            expect_eq(g.stop(), 0, f"gpusnoop status {stacks}")
        finally:
            g.kill()
            w.finish()
        trace = load_trace(path)
        expect_eq(trace["metadata"]["dropped_events"], 0, f"dropped events {stacks}")
        by_kernel = launches_by_kernel(trace, w.pid)
        expect_eq({k: len(v) for k, v in by_kernel.items()}, {GEMM: 3000, RELU: 1000, SCALE: 10},
                  f"launches per kernel {stacks}")
        expect_eq(len(slices(trace, w.pid, "cudaStreamSynchronize")), 100, f"syncs {stacks}")
        # stack arguments (shared memory, stream) and a config struct's, from the walk's window
        # or read: as the workload gave them
        expect_eq({dims(e) for e in by_kernel[GEMM]}, {((128, 2, 1), (256, 1, 1), 4096)},
                  f"gemm dims {stacks}")
        expect_eq({dims(e) for e in by_kernel[SCALE]}, {((7, 3, 2), (32, 4, 2), 1024)},
                  f"scale dims {stacks}")
        streams = {e["args"]["stream"] for e in by_kernel[GEMM] + by_kernel[SCALE]}
        expect_eq(len(streams), 1, f"one created stream {stacks}")
        assert streams != {"0x0"}, streams


@test
def stacks_none_walks_no_python_frames():
    python = test_python.interpreter("3.12")
    reports = leaks_reports("--", python, test_python.SCRIPT, os.path.join(LIB, "libcudart.so.13"),
                            "malloc")
    final = reports[-1]
    stacks = final["processes"][0]["stacks"]
    expect_eq([(s["bytes"], s["allocations"], s["api"], s["frames"]) for s in stacks],
              [(1 << 20, 1, "cudaMalloc", [])], "the one allocation, no frames")


@test
def profile_refuses_stacks_none():
    status, _, err = run_gpusnoop("profile", "--stacks", "none", "-p", str(os.getpid()))
    expect_eq(status, 64, "usage error")
    assert "unknown --stacks 'none' (fp or dwarf)" in err, err


if __name__ == "__main__":
    main()
