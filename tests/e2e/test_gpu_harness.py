#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_gpu_harness.py: what `make gpu-test` (tests/gpu/) can show without a GPU: its comparison
of a real `record -e gpu` trace (the stand-in GPU's) with a Kineto-form trace of known
durations, its memory and cost arithmetic, and its one-line refusal on a machine without one."""
import json
import os
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, LIB, ROOT, expect_eq, run_gpusnoop, test  # noqa: E402
from test_gpu import EXPECTED, LOAD_TIMEOUT, gpu_env  # noqa: E402

GPU_TEST_DIR = os.path.join(ROOT, "tests", "gpu")
sys.path.insert(0, GPU_TEST_DIR)
import compare  # noqa: E402
import gpu_test  # noqa: E402

# gs_gpu's kernels and their device times on the stand-in GPU (ns), as test_gpu.py knows them
KERNELS = {name: durs for (name, cat), durs in EXPECTED.items() if cat == "kernel"}


def record_gs_gpu():
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--",
                                  os.path.join(BIN, "gs_gpu"), env=gpu_env(),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    return compare.load_trace(out)


def kineto_trace(kernels):
    """A trace in torch.profiler's form with these {name: [ns]} kernels, through a file."""
    events, ts = [], 1000.0
    for name, durs in kernels.items():
        for d in durs:
            events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                           "ts": ts, "dur": d / 1000, "args": {"device": 0, "stream": 7}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 42, "tid": 42, "ts": ts - 5, "dur": 3, "args": {}})
            ts += d / 1000 + 1
    path = os.path.join(tempfile.mkdtemp(), "k.pt.trace.json")
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "deviceProperties": [], "traceEvents": events}, f)
    return compare.kineto_kernels(compare.load_trace(path))


def scaled(kernels, name, factor):
    return {n: [round(d * factor) for d in durs] if n == name else durs
            for n, durs in kernels.items()}


@test
def gpu_harness_compares_a_record_trace_with_kineto_per_kernel():
    ours = compare.gpusnoop_kernels(record_gs_gpu())
    expect_eq(ours, KERNELS, "kernels of gs_gpu's trace (ns)")
    gemm = "gemm_kernel(float*, int)"
    rows, worst, problems = compare.compare_kernels(ours, kineto_trace(KERNELS))
    expect_eq((problems, worst), ([], 0.0), "equal durations")
    expect_eq([(r["name"], r["count"], r["kineto_count"], r["total_ns"]) for r in rows],
              [(gemm, 20, 20, 20 * 256000), ("relu_kernel(float*, int)", 10, 10, 10 * 64000),
               ("gs_graph_node", 3, 3, 6000)], "rows, largest first")
    _, worst, problems = compare.compare_kernels(ours, kineto_trace(scaled(KERNELS, gemm, 1.04)))
    expect_eq(problems, [], "4 % is within the rule")
    assert 0.038 < worst < 0.039, worst
    _, _, problems = compare.compare_kernels(ours, kineto_trace(scaled(KERNELS, gemm, 1.06)))
    expect_eq(len(problems), 2, f"6 % off, total and mean: {problems}")
    assert all(p.startswith(gemm + ": ") and "0.9434x" in p for p in problems), problems
    fewer = dict(KERNELS, **{"gs_graph_node": [2000] * 2})
    _, _, problems = compare.compare_kernels(ours, kineto_trace(fewer))
    assert "gs_graph_node: 3 kernels in gpusnoop's trace, 2 in Kineto's" in problems, problems
    missing = {n: d for n, d in KERNELS.items() if n != gemm}
    _, _, problems = compare.compare_kernels(ours, kineto_trace(missing))
    expect_eq(problems, [gemm + ": only in gpusnoop's trace (20 kernels)"], "missing kernel")
    _, _, problems = compare.compare_kernels(ours, kineto_trace(dict(KERNELS, extra=[5000])))
    expect_eq(problems, ["extra: only in Kineto's trace (1 kernels)"], "kernel not recorded")


@test
def gpu_harness_keeps_kernels_inside_the_window():
    trace = record_gs_gpu()
    starts = sorted(round(e["ts"] * 1000) for e in trace["traceEvents"]
                    if e.get("cat") == "kernel")
    expect_eq(compare.gpusnoop_kernels(trace, (0, starts[0] - 1)), {}, "before the first")
    inside = compare.gpusnoop_kernels(trace, (starts[1], starts[-1]))
    expect_eq(sum(len(v) for v in inside.values()), len(starts) - 1, "all but the first")


def leaks_report(kind, t_ns, pid, allocated, reserved):
    dev = {"device": "cuda:0", "allocated_bytes": allocated, "tensors": 1,
           "reserved_bytes": reserved, "cached_bytes": reserved - allocated}
    return {"report": kind, "monotonic_ns": t_ns,
            "processes": [{"pid": pid, "torch": {"devices": [{"device": "cpu",
                                                               "allocated_bytes": 0},
                                                              dev]}}]}


@test
def gpu_harness_matches_leaks_reports_to_checkpoints():
    s = 1_000_000_000
    cps = [{"name": "a", "start_ns": 10 * s, "end_ns": 12 * s, "allocated": 512,
            "reserved": 2 << 20},
           {"name": "b", "start_ns": 20 * s, "end_ns": 22 * s, "allocated": 0,
            "reserved": 2 << 20}]
    reports = [leaks_report("interval", 10 * s + 100, 7, 0, 0),  # inside the margin: ignored
               leaks_report("interval", 11 * s, 7, 512, 2 << 20),
               leaks_report("final", 21 * s, 7, 0, 0),  # not an interval report
               leaks_report("interval", 21 * s, 7, 0, 2 << 20),
               leaks_report("interval", 21 * s + 1, 7, 0, 2 << 20)]
    rows, problems = compare.compare_memory(reports, 7, cps, s // 2)
    expect_eq(problems, [], "matching reports")
    expect_eq([(r["reports"], r["seen"]) for r in rows],
              [(1, [(512, 2 << 20)]), (2, [(0, 2 << 20)] * 2)], "reports per checkpoint")
    reports[-1] = leaks_report("interval", 21 * s + 1, 7, 512, 2 << 20)
    _, problems = compare.compare_memory(reports, 7, cps, s // 2)
    expect_eq(problems, ["b: leaks says allocated 512 reserved 2097152, PyTorch 0 2097152"],
              "a report that differs")
    _, problems = compare.compare_memory(reports, 9, cps, s // 2)
    expect_eq(problems, ["a: leaks says allocated None reserved None, PyTorch 512 2097152",
                         "b: leaks says allocated None reserved None, PyTorch 0 2097152"],
              "the process missing from the reports")
    _, problems = compare.compare_memory(reports[:1], 7, cps, s // 2)
    expect_eq(problems, ["a: no leaks report inside the checkpoint's pause",
                         "b: no leaks report inside the checkpoint's pause"], "no reports")


@test
def gpu_harness_cost_per_launch_against_baseline_and_floor():
    costs = compare.launch_costs({"untraced": [5000, 4000, 9000], "floor": [6000, 5500, 5000],
                                  "floor-gpu": [7000, 6600, 6000], "record": [5600, 6000, 5400],
                                  "record-gpu": [9000, 8000, 20000]}, "untraced",
                                 {"record": "floor", "record-gpu": "floor-gpu"})
    expect_eq(costs["untraced"], {"median_ns": 5000, "ratio": 1.0, "added_ns": 0,
                                  "rounds": 3}, "the baseline")
    expect_eq(costs["record"], {"median_ns": 5600, "ratio": 1.12, "added_ns": 600,
                                "rounds": 3, "vs_floor": 1.2}, "record: against its floor")
    expect_eq(costs["record-gpu"], {"median_ns": 9000, "ratio": 1.8, "added_ns": 4000,
                                    "rounds": 3, "vs_floor": 2.5}, "-e gpu: its own floor")


def fake_python(directory, name, answer):
    """An interpreter stand-in that answers gpu_test's torch probe with answer (a dict)."""
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\necho '%s'\n" % json.dumps(answer))
    os.chmod(path, stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return path


@test
def gpu_test_wants_pytorch_2_with_cuda():
    d = tempfile.mkdtemp()
    cases = [({"version": "1.13.1", "cuda": "11.7", "available": True},
              "torch 1.13.1 is not 2.x"),
             ({"version": "2.5.1+cpu", "cuda": None, "available": False},
              "torch 2.5.1+cpu is a CPU build"),
             ({"version": "2.5.1", "cuda": "12.4", "available": False},
              "torch 2.5.1: torch.cuda.is_available() is False")]
    saved = os.environ.get("PYTHON")
    try:
        for i, (answer, why) in enumerate(cases):
            os.environ["PYTHON"] = py = fake_python(d, "py%d" % i, answer)
            try:
                gpu_test.find_python()
                raise AssertionError(f"{answer} accepted")
            except gpu_test.Failure as e:
                expect_eq(str(e), f"no PyTorch 2.x with CUDA (set PYTHON): {py}: {why}",
                          "refusal")
        os.environ["PYTHON"] = py = fake_python(d, "ok", {"version": "2.5.1", "cuda": "12.4",
                                                          "available": True})
        expect_eq(gpu_test.find_python()["python"], py, "a usable interpreter")
    finally:
        if saved is None:
            os.environ.pop("PYTHON", None)
        else:
            os.environ["PYTHON"] = saved


def run_driver(*args, env=None):
    p = subprocess.run([sys.executable, os.path.join(GPU_TEST_DIR, "gpu_test.py"), *args],
                       capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout, p.stderr.splitlines()


@test
def gpu_test_refuses_in_one_line_without_a_gpu():
    """This machine has no NVIDIA driver (CI's neither); the stand-in driver is not taken for
    one. Nothing is built or written."""
    out = os.path.join(tempfile.mkdtemp(), "gpu-test")
    status, stdout, err = run_driver("--out", out)
    expect_eq((status, stdout, len(err)), (1, "", 1), f"one line and 1; stderr {err}")
    assert err[0].startswith("gpu-test: no NVIDIA driver: libcuda.so.1"), err
    status, stdout, err = run_driver("--out", out, env={"LD_LIBRARY_PATH": LIB})
    expect_eq((status, stdout, err), (1, "", [
        "gpu-test: no NVIDIA driver: libcuda.so.1 is the tests' stand-in "
        f"({LIB}/libcuda.so.1); unset LD_LIBRARY_PATH"]), "the stand-in refused")
    assert not os.path.exists(out), "nothing written"
