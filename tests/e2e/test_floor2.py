#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_floor2.py: issue 30's cheaper probes: a free's return probe skipped where the free is of
a pointer the session saw allocated (uprobe sessions, Linux 6.13+), failures still reported."""
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Gpusnoop, Workload, expect_eq, main, process, test  # noqa: E402
from test_leaks import apis_expectations  # noqa: E402

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}
ITERS = 3000
BPF_ENABLE_STATS = 32  # enum bpf_cmd
SYS_BPF = 321  # x86-64


def enable_bpf_stats():
    """BPF_ENABLE_STATS: run counts are kept while the descriptor is open (another test turning
    the sysctl off does not stop them)."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(8)  # type 0: BPF_STATS_RUN_TIME
    fd = libc.syscall(SYS_BPF, BPF_ENABLE_STATS, attr, 8)
    assert fd >= 0, f"BPF_ENABLE_STATS: {os.strerror(ctypes.get_errno())}"
    return fd


def prog_runs(pid):
    """{program name: run count} of the BPF programs process pid holds open."""
    ids = {}
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                kv = dict(l.split(":\t", 1) for l in f.read().splitlines() if ":\t" in l)
        except OSError:
            continue
        if "prog_id" in kv and "run_cnt" in kv:  # a program's (a link's names one too)
            ids[kv["prog_id"].strip()] = int(kv["run_cnt"])
    runs = {}
    for prog_id, cnt in ids.items():
        out = subprocess.run(["bpftool", "prog", "show", "id", prog_id], capture_output=True,
                             text=True).stdout.split()
        if len(out) > 3 and out[2] == "name":
            runs[out[3]] = runs.get(out[3], 0) + cnt
    return runs


def leaks_on(w, env=None):
    """leaks -p w.pid, w run to 'done'; (final report, run counts read before the stop)."""
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json", env=env)
    try:
        g.wait_tracing()
        w.release()
        w.wait_line("done")
        runs = prog_runs(g.proc.pid)
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()})")
        reports = g.reports()
        expect_eq([r["report"] for r in reports], ["final"], "reports written")
        return reports[0], runs
    finally:
        g.kill()
        w.finish()


@test
def free_of_a_pointer_seen_allocated_runs_no_return_probe():
    fd = enable_bpf_stats()
    try:
        # the stand-in runtime's cudaFree calls the driver's cuMemFree_v2: both probed
        w = Workload("gs_bench", "loop", str(ITERS), "100", "--hold", hold=False)
        report, runs = leaks_on(w)
    finally:
        os.close(fd)
    proc = process(report, w.pid)
    # one user call each: the driver's nested free is no second, unknown one
    expect_eq((proc["unknown_frees"], proc["failed_frees"]), (0, 0),
              "frees matched to their allocations")
    # every free is one entry run of the session program (runtime + driver), no return run
    expect_eq((runs.get("mem_free_session"), runs.get("mem_free_exit")),
              (runs.get("mem_alloc_enter"), 0), f"free programs' runs ({runs})")
    expect_eq(runs.get("mem_alloc_enter", 0) >= 2 * ITERS, True, f"allocations seen ({runs})")


@test
def failing_frees_reported_with_and_without_sessions():
    # gs_apis frees a pointer never allocated: unknown, and it fails at its return
    for env in ({}, {"GPUSNOOP_KERNEL_FEATURES_OFF": "uprobe_multi"}):
        fd = enable_bpf_stats()
        try:
            w = Workload("gs_apis", env=NO_DRIVER)
            report, runs = leaks_on(w, env=env)
        finally:
            os.close(fd)
        apis_expectations(process(report, w.pid))
        expect_eq(runs.get("mem_free_session", 0) > 0, not env,
                  f"session program used with {env} ({runs})")
        if env:  # without sessions every free's return is probed
            expect_eq(runs.get("mem_free_exit"), runs.get("mem_free_enter"), f"runs ({runs})")


if __name__ == "__main__":
    main()
