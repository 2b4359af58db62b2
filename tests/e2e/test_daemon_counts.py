#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_daemon_counts.py: the daemon's always-on costs: calls counted in the kernel, sampled stacks."""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Workload, expect_eq, test  # noqa: E402
from test_daemon import Daemon, config_file, metric, oom_workload  # noqa: E402

MiB = 1024 * 1024


def wait_metric(d, name, pid, want, secs=10):
    """The metrics page once name for pid reads want (they are published once a second)."""
    deadline = time.monotonic() + secs
    m = d.metrics()
    while (not re.search(rf'^{name}{{pid="{pid}",comm="[^"]*"}} {want}$', m, re.M)
           and time.monotonic() < deadline):
        time.sleep(0.2)
        m = d.metrics()
    return m


@test
def daemon_call_counts_exact_while_the_daemon_reads_nothing():
    """
    4,000 launches and 100 syncs made while the daemon is stopped, with a 1 MiB ring buffer:
    as records (about 300 bytes each) they would not fit, and the counts would fall short.
    Counted in the kernel they are exact, however late the daemon reads them.
    """
    tmp, conf = config_file("gs-daemon-counts-", "cuda-call-metrics on\nringbuf 1\n")
    d = Daemon("--config", conf)
    w = None
    try:
        w = Workload("gs_gemm_loop", env={"GS_FAKE_CUDA_NO_DRIVER": "1"})
        d.wait_probed()
        os.kill(d.g.proc.pid, signal.SIGSTOP)
        try:
            w.release()
            w.wait_line("done")
        finally:
            os.kill(d.g.proc.pid, signal.SIGCONT)
        m = wait_metric(d, "gpusnoop_cuda_syncs_total", w.pid, 100)
        # 3000 gemm + 1000 relu launches, a stream sync every 40 of them
        expect_eq(metric(m, "gpusnoop_cuda_launches_total", w.pid), 4000, "launches")
        expect_eq(metric(m, "gpusnoop_cuda_syncs_total", w.pid), 100, "synchronizations")
        secs = float(re.search(rf'^gpusnoop_cuda_sync_seconds_total{{pid="{w.pid}",[^}}]*}} (\S+)$',
                               m, re.M).group(1))
        assert secs >= 100 * 0.002, f"sync time {secs}s below the fake's 2 ms per call"
        expect_eq(w.finish(), 0, "workload status")
        # gone: its series go, and its counts in the kernel with them (none made anew)
        series = f'gpusnoop_cuda_launches_total{{pid="{w.pid}",'
        deadline = time.monotonic() + 10
        while series in d.metrics() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert series not in d.metrics(), "an exited process's launches still shown"
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def daemon_stack_sample_keeps_counts_and_the_oom_stack_whole():
    """
    stack-sample 2: of fill_device's three allocations (one call site), every other one has its
    stack walked, the rest their call site alone; sizes and counts stay exact, the report says
    what was left out, and the failing call's stack is whole.
    """
    tmp, conf = config_file("gs-daemon-sample-", "stack-sample 2\n")
    d = Daemon("--config", conf)
    w = None
    try:
        w = oom_workload(d)
        deadline = time.monotonic() + 5
        while not d.reports("cuda-oom-*.json") and time.monotonic() < deadline:
            time.sleep(0.05)
        files = d.reports("cuda-oom-*.json")
        expect_eq(len(files), 1, "OOM reports")
        with open(files[0]) as f:
            report = json.load(f)
        expect_eq(report.get("stack_sample"), 2, "the report says stacks were sampled")
        t = report["trigger"]
        expect_eq([f["symbol"] for f in t["frames"][:2]], ["oom_request", "main"],
                  "failing call's stack, whole")
        p = report["processes"][0]
        expect_eq((p["outstanding_bytes"], p["outstanding_allocations"]), (96 * MiB, 3),
                  "what the process held, exact")
        stacks = sorted((s["allocations"], [f["symbol"] for f in s["frames"]][:2])
                        for s in p["stacks"])
        expect_eq(stacks, [(1, ["fill_device"]), (2, ["fill_device", "main"])],
                  "held memory: walked stacks, and the call site alone for the others")
        with open(files[0][:-5] + ".txt") as f:
            text = f.read()
        assert "stacks sampled 1/2 per call site" in text, text
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def daemon_counts_a_failed_free_that_only_its_return_probe_sees():
    """
    gs_apis hands cudaFree a pointer it never allocated, and the call fails: the daemon's
    `ctl leaks` shows an unknown free and a failed one. Only a free's return probe sees the
    failure (a failed free of a held pointer also keeps the allocation), so the daemon's
    floor in scripts/bench/ keeps that probe: the floor is what yields what the daemon shows.
    """
    d = Daemon()
    w = None
    try:
        w = Workload("gs_apis", env={"GS_FAKE_CUDA_NO_DRIVER": "1"})
        d.wait_probed()
        w.release()
        w.wait_line("done")
        deadline = time.monotonic() + 10  # records wait for the reader's poll timeout
        while True:
            status, out, err = d.ctl("leaks", str(w.pid), "--format", "json")
            expect_eq(status, 0, f"ctl leaks ({err})")
            proc = json.loads(out)["processes"][0]
            if proc["failed_frees"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        expect_eq((proc["unknown_frees"], proc["failed_frees"]), (1, 1), "bad_free")
        # 5 kept of 7 (use_free_async and use_free_host gave theirs back)
        expect_eq(proc["outstanding_allocations"], 5, "outstanding allocations")
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()
