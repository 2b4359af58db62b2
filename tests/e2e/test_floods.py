#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_floods.py: a unique-stack flood stays bounded: stacks and failure groups per process."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Gpusnoop, Workload, expect_eq, main, process, test

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}


def flood_report(n, mode, gs_args=()):
    """gs_flood's n calls from n distinct call paths under `leaks -p`; its final JSON report."""
    w = Workload("gs_flood", env=dict(NO_DRIVER, GS_FLOOD_N=str(n), GS_FLOOD_MODE=mode))
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json", "--top", "0", *gs_args)
    try:
        g.wait_tracing()
        w.release()
        line = w.wait_line("flooded")
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()[-2000:]})")
        reports = g.reports()
        expect_eq([r["report"] for r in reports], ["final"], "reports written")
        return line, process(reports[0], w.pid), reports[0]
    finally:
        g.kill()
        w.finish()


def other_stacks(proc):
    return [s for s in proc["stacks"]
            if [f.get("symbol") for f in s["frames"]] == ["[other stacks]"]]


@test
def stacks_past_the_cap_are_one_counted_other():
    # 3000 kept allocations, each from its own call path; 1000 stacks kept, 2000 folded
    line, proc, report = flood_report(3000, "keep", ("--max-stacks", "1000"))
    expect_eq(line, "flooded 3000 ok 0 failed", "workload")
    expect_eq(report["dropped_events"], 0, "dropped events")
    expect_eq(proc["outstanding_allocations"], 3000, "outstanding allocations")
    expect_eq(proc["stacks_total"], 1001, "stacks: 1000 kept and the other")
    other = other_stacks(proc)
    expect_eq(len(other), 1, "one [other stacks] entry")
    expect_eq((other[0]["allocations"], other[0]["bytes"]), (2000, 2000), "[other stacks] counts")
    expect_eq(other[0]["frames"][0]["kind"], "marker", "[other stacks] frame kind")
    kept = [s for s in proc["stacks"] if s not in other]
    expect_eq(sorted({s["allocations"] for s in kept}), [1], "each kept stack: one allocation")
    expect_eq(kept[0]["frames"][0]["symbol"], "alloc_here", "kept stacks are symbolized")


@test
def failure_groups_past_the_cap_are_one_counted_other():
    # 1500 failures from 1500 call paths: 1024 groups kept, 476 in "[other failures]"
    line, proc, report = flood_report(1500, "fail")
    expect_eq(line, "flooded 0 ok 1500 failed", "workload")
    expect_eq(report["dropped_events"], 0, "dropped events")
    expect_eq(proc["failed_allocations"], 1500, "failed allocations")
    fails = proc["failures"]
    expect_eq(len(fails), 1025, "failure groups: 1024 and the other")
    expect_eq(fails[-1]["api"], "[other failures]", "folded group last")
    expect_eq((fails[-1]["count"], fails[-1]["bytes_requested"]), (476, 476 << 40),
              "[other failures] counts")
    expect_eq(sorted({f["count"] for f in fails[:-1]}), [1], "each kept group: one failure")
    expect_eq(fails[0]["error"], 2, "error of a kept group")


if __name__ == "__main__":
    main()
