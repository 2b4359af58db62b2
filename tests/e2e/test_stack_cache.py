#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_stack_cache.py: a stack sent once per CPU and referred to after (bpf/gs_stack_cache.bpf.h),
and --stack-sample: every event still gets exactly its own stack, or its call site alone."""
import collections
import json
import math
import os
import re
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, Gpusnoop, Workload, expect_eq, main, process, run_attached,
                     run_gpusnoop, test)

# tests/fixtures/workloads/gs_stacks.c: phase k's path i allocates 1 + i + 16 * k bytes
PHASES = ["phase_alternate", "phase_cycle", "phase_threads", "phase_serial"]
STATS = re.compile(r"stacks: (\d+) sent whole and kept, (\d+) sent as references, "
                   r"(\d+) references unresolved, (\d+) call sites alone")


def expected_counts(n, phases):
    want = {}
    if "alternate" in phases:
        want.update({("phase_alternate", i): n for i in (0, 1)})
    if "cycle" in phases:
        want.update({("phase_cycle", i): n for i in range(6)})
    if "threads" in phases:
        want.update({("phase_threads", i): 4 * n for i in (2, 3)})
    if "serial" in phases:
        want.update({("phase_serial", i): 4 * (n // 4) for i in (4, 5)})
    return want


def path_of(frames):
    """(phase, path) from a gs_stacks stack: via_one/via_zero are the path's bits, lowest first."""
    syms = [f.get("symbol") for f in frames]
    expect_eq(syms[0], "alloc_here", "innermost frame")
    vias = [s for s in syms if s in ("via_zero", "via_one")]
    expect_eq(len(vias), 3, f"levels of {syms}")
    phase = next(s for s in syms if s in PHASES)
    return phase, sum(1 << b for b, s in enumerate(vias) if s == "via_one")


def check_exact(proc, n, phases):
    """Each stack's allocations all have its size, and each path has all its allocations."""
    got = {}
    for s in proc["stacks"]:
        phase, i = path_of(s["frames"])
        size = 1 + i + 16 * PHASES.index(phase)
        expect_eq(s["bytes"], s["allocations"] * size, f"bytes of {phase} path {i}")
        got[(phase, i)] = got.get((phase, i), 0) + s["allocations"]
    expect_eq(got, expected_counts(n, phases), "allocations per stack")


def stack_stats(g):
    m = STATS.search(g.stderr_text())
    assert m, g.stderr_text()
    return tuple(int(x) for x in m.groups())


def run_stacks(n, phases, *gs_args):
    env = {"GS_STACKS_N": str(n), "GS_STACKS_PHASES": ",".join(phases),
           "GS_FAKE_CUDA_NO_DRIVER": "1"}
    w = Workload("gs_stacks", env=env)
    g = run_attached(w, "leaks", "-v", "-p", str(w.pid), "--top", "0", "--format", "json",
                     *gs_args)
    report = g.reports()[-1]
    return process(report, w.pid), report, g


ALL = ("alternate", "cycle", "threads", "serial")


@test
def repeated_stacks_are_sent_once_and_each_event_keeps_its_own():
    # alternating stacks, a cycle of stacks, more stacks in all than a CPU keeps (12, 8
    # slots), threads sharing stacks, threads that end and new ones: every allocation under
    # exactly its own stack
    proc, report, g = run_stacks(200, ALL)
    check_exact(proc, 200, ALL)
    expect_eq(report["dropped_events"], 0, "dropped events")
    sent, refs, unresolved, sites = stack_stats(g)
    expect_eq((unresolved, sites), (0, 0), "unresolved references, sites alone")
    expect_eq(sent + refs, 3600, "stacks sent whole or by reference")
    # alternate's 400, threads' 1600 and serial's 400 repeat stacks a CPU has just sent
    assert refs >= 1000, (sent, refs)


@test
def a_loop_of_six_stacks_is_sent_by_reference():
    # a loop's stacks come round in turn: with 4 slots a CPU kept none of these 6 when it came
    # back to it (each slot replaced just before), and every stack was sent whole
    proc, report, g = run_stacks(200, ("cycle",))
    check_exact(proc, 200, ("cycle",))
    sent, refs, unresolved, _ = stack_stats(g)
    expect_eq((sent + refs, unresolved), (1200, 0), "stacks sent, unresolved references")
    # each CPU sends each stack whole once, again only after a thread's move to another CPU
    assert refs >= 1000, (sent, refs)


@test
def a_full_ring_buffer_never_gives_an_event_another_stack():
    # the reader stopped while 2 x 3000 + 6 x 3000 allocations flood a 1 MiB ring buffer:
    # records are lost, but a reference is only ever made to a stack that was delivered
    n, phases = 3000, ("alternate", "cycle")
    w = Workload("gs_stacks", env={"GS_STACKS_N": str(n), "GS_STACKS_PHASES": ",".join(phases),
                                   "GS_FAKE_CUDA_NO_DRIVER": "1"})
    g = Gpusnoop("leaks", "-v", "-p", str(w.pid), "--ringbuf", "1", "--top", "0",
                 "--format", "json")
    try:
        g.wait_tracing()
        os.kill(g.proc.pid, signal.SIGSTOP)
        w.release()
        w.wait_line("done")
        os.kill(g.proc.pid, signal.SIGCONT)
        expect_eq(g.stop(), 0, "gpusnoop status")
        report = g.reports()[-1]
    finally:
        g.kill()
        w.finish()
    proc = process(report, w.pid)
    assert report["dropped_events"] > 0, report
    seen = 0
    for s in proc["stacks"]:
        phase, i = path_of(s["frames"])
        expect_eq(s["bytes"], s["allocations"] * (1 + i + 16 * PHASES.index(phase)),
                  f"bytes of {phase} path {i}")
        seen += s["allocations"]
    expect_eq(seen + report["dropped_events"], 8 * n, "allocations seen and lost")
    sent, refs, unresolved, _ = stack_stats(g)
    expect_eq(unresolved, 0, "unresolved references")
    expect_eq(sent + refs, seen, "stacks sent whole or by reference")
    assert refs > 0, (sent, refs)


@test
def sampled_stacks_keep_exact_counts():
    # --stack-sample 10: one allocation in 10 of alloc_here's one call site has its stack,
    # the others the call site alone; every count and size stays exact
    n, phases = 100, ("alternate", "cycle")
    proc, report, g = run_stacks(n, phases, "--stack-sample", "10")
    expect_eq(report["stack_sample"], 10, "report's stack_sample")
    total = 8 * n
    whole = [s for s in proc["stacks"] if len(s["frames"]) > 1]
    alone = [s for s in proc["stacks"] if len(s["frames"]) == 1]
    expect_eq(len(alone), 1, "one stack of the call site alone")
    expect_eq(alone[0]["frames"][0]["symbol"], "alloc_here", "the call site's function")
    got = {}
    for s in whole:
        phase, i = path_of(s["frames"])
        expect_eq(s["bytes"], s["allocations"] * (1 + i + 16 * PHASES.index(phase)),
                  f"bytes of {phase} path {i}")
        got[(phase, i)] = got.get((phase, i), 0) + s["allocations"]
    # events 0, 10, 20.. of the call site: alternate's 2n in turns of paths 0 and 1 (so all
    # path 0), then cycle's from event 2n on: the path of event 2n + 10 j is (10 j) % 6
    want = {("phase_alternate", 0): 2 * n // 10}
    for j in range(6 * n // 10):
        key = ("phase_cycle", (10 * j) % 6)
        want[key] = want.get(key, 0) + 1
    want = {k: v for k, v in want.items() if v}
    expect_eq(got, want, "allocations with their whole stack")
    expect_eq(sum(got.values()), math.ceil(total / 10), "stacks walked")
    expect_eq(sum(s["allocations"] for s in proc["stacks"]), total, "allocations")
    expect_eq(proc["outstanding_bytes"],
              sum(n * (1 + i) for i in (0, 1)) + sum(n * (17 + i) for i in range(6)), "bytes")
    _, _, unresolved, sites = stack_stats(g)
    expect_eq((unresolved, sites), (0, total - math.ceil(total / 10)), "sites alone")


@test
def sampled_stacks_are_said_in_the_text_report():
    w = Workload("gs_stacks", env={"GS_STACKS_N": "20", "GS_STACKS_PHASES": "alternate",
                                   "GS_FAKE_CUDA_NO_DRIVER": "1"})
    g = run_attached(w, "leaks", "-p", str(w.pid), "--stack-sample", "4")
    text = g.stdout.decode()
    assert "stacks sampled 1/4 per call site (the others: their call site alone)" in text, text


@test
def launches_and_calls_keep_their_stacks():
    # gs_kernels: 3000 + 1000 + 10 launches from three loops, 100 syncs from a fourth; at
    # entry (the default) and at return (cuda-launch-latency), every call its own stack
    for events in ("cuda-launch,cuda-sync", "cuda-launch-latency,cuda-sync"):
        path = os.path.join(tempfile.mkdtemp(), "t.json")
        status, _, err = run_gpusnoop("record", "-v", "-e", events, "-o", path, "--",
                                      os.path.join(BIN, "gs_kernels"), timeout=120)
        expect_eq(status, 0, f"gpusnoop status ({err})")
        with open(path) as f:
            trace = json.load(f)
        stacks = collections.defaultdict(collections.Counter)
        for e in trace["traceEvents"]:
            if e["ph"] == "X" and "stack" in e.get("args", {}):
                what = e["args"].get("kernel", e["name"])
                stacks[what][tuple(e["args"]["stack"])] += 1
        want = {"gemm_kernel(float*, int)": ("launch_gemm+", 3000),
                "relu_kernel(float*, int)": ("launch_relu+", 1000),
                "void scale<float>(float*, float, int)": ("launch_scale+", 10),
                "cudaStreamSynchronize": ("sync_streams+", 100)}
        for what, (fn, count) in want.items():
            expect_eq(len(stacks[what]), 1, f"{what}: stacks ({events})")
            stack, n = stacks[what].most_common(1)[0]
            expect_eq(n, count, f"{what}: calls ({events})")
            assert any(f.startswith(fn) for f in stack[:3]), (what, stack)
        m = STATS.search(err)
        assert m, err
        sent, refs, unresolved, _ = (int(x) for x in m.groups())
        expect_eq(unresolved, 0, f"unresolved references ({events})")
        assert refs >= 4000, (events, sent, refs)


if __name__ == "__main__":
    sys.exit(main())
