#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_torch2.py: a real PyTorch 2.x from PyPI: its profiler's Kineto trace stitched with a
`record -e gpu` trace of the same run, loaded by HTA; its CPU allocator under `leaks`."""
import collections
import decimal
import functools
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LIB, ROOT, Skip, Workload, expect_eq, run_gpusnoop, test
from test_gpu import LOAD_TIMEOUT, expect_flows_pair_launches, gpu_env, gpu_rows, ns
from test_torch import leaks_of_cpu_tensors

# scripts/setup.sh test installs torch==2.5.1 (PyPI) here, beside Holistic Trace Analysis
VENV_PYTHON = os.environ.get("GS_TORCH2_PYTHON", "/var/cache/gpusnoop-tests/venv/bin/python")
WORKLOADS = os.path.join(ROOT, "tests", "fixtures", "workloads")
TRAIN_SCRIPT = os.path.join(WORKLOADS, "gs_torch2_train.py")
CPU_SCRIPT = os.path.join(WORKLOADS, "gs_torch_cpu.py")
HIDDEN_LIB = os.path.join(LIB, "libgs_hidden.so")
# PyTorch maps NVIDIA's CUPTI (pip's libcupti.so.12), which the injection library would bind
# and which cannot run on the stand-in GPU: the library is told to use the stand-in's instead
STAND_IN_CUPTI = os.path.join(LIB, "libcupti.so.13")

# gs_torch2_train.py: step s launches hidden_kernel s + 1 times, 1 us on the stand-in GPU each
STEPS = 4
KERNEL = "hidden_kernel(int*)"
KERNEL_NS = 1000
LAUNCHES = sum(s + 1 for s in range(STEPS))  # 10
DEFAULT_STREAM = 7
RANK, WORLD_SIZE = 2, 4
# How far the stitched clocks may disagree. Kineto's and gpusnoop's times meet through
# CLOCK_REALTIME: gpusnoop reads it next to CLOCK_MONOTONIC once, at the recording's start (two
# vDSO reads, well under 1 us apart); torch converts its TSC readings to CLOCK_REALTIME with a
# linear fit measured at the profiler's start and end (sub-microsecond); Kineto writes whole
# ns; NTP slews both clocks alike and steps neither in a test. The stand-in GPU's times are
# CLOCK_MONOTONIC itself. A step's tight range (gs_launch_S) starts and ends a few microseconds
# from its first launch and last kernel (the Python call into ctypes and back: 4-8 us here,
# more in step 0, which starts CUDA), so an error beyond that plus this tolerance puts a launch
# outside its range: stitching with --kineto-offset 10000 (10 us) fails the test.
CLOCK_TOLERANCE_NS = 1000


def torch2_python():
    """PyTorch's version and directory in the tests' interpreter, or a Skip that says how to
    install it."""
    how = "`make setup-test` (scripts/setup.sh test) installs torch==2.5.1 there"
    if not os.access(VENV_PYTHON, os.X_OK):
        raise Skip(f"{VENV_PYTHON} missing: {how}")
    query = "import torch; print(torch.__version__, torch.__file__)"
    p = subprocess.run([VENV_PYTHON, "-c", query], capture_output=True, timeout=120)
    if p.returncode != 0:
        raise Skip(f"no PyTorch in {VENV_PYTHON}: {how}")
    version, init = p.stdout.decode().split()
    assert version.startswith("2."), f"{VENV_PYTHON}: PyTorch {version}, want 2.x"
    return version, os.path.dirname(init)


def load(path):
    """A trace with its numbers exact: Kineto's wall-clock ts (~10^12 us, three decimals) does
    not survive a double's 53 bits to the nanosecond."""
    with open(path) as f:
        return json.load(f, parse_float=decimal.Decimal)


@functools.lru_cache(maxsize=None)
def stitched_run():
    """gs_torch2_train.py under `record -e gpu` and its own torch.profiler, then the two traces
    stitched: (gpusnoop's, Kineto's, the stitched one, its path), made once for the module."""
    torch2_python()
    tmp = tempfile.mkdtemp()
    gs, kineto = os.path.join(tmp, "gs.json"), os.path.join(tmp, "train.pt.trace.json")
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", gs, "--", VENV_PYTHON,
                                  TRAIN_SCRIPT, HIDDEN_LIB, kineto,
                                  env=gpu_env(RANK=str(RANK), WORLD_SIZE=str(WORLD_SIZE),
                                              GPUSNOOP_CUPTI_LIBRARY=STAND_IN_CUPTI),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    os.mkdir(os.path.join(tmp, "stitched"))  # alone in its directory: HTA loads every file
    out = os.path.join(tmp, "stitched", "all.json")
    status, _, err = run_gpusnoop("stitch", gs, kineto, "-o", out, timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"stitch status; stderr:\n{err}")
    return load(gs), load(kineto), load(out), out


def x_events(trace, cats):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e.get("cat") in cats]


def expect_nothing_lost(gs, stitched):
    md = gs["metadata"]
    expect_eq(md["dropped_events"], 0, "events dropped while recording")
    expect_eq({k: v for k, v in md["lost"].items() if v}, {}, "losses while recording")
    gpu = md["gpu"]
    expect_eq((gpu["records"], gpu["linked"], gpu["not_linked"], gpu["cupti_dropped"],
               gpu["no_timestamps"], gpu["malformed"]), (LAUNCHES, LAUNCHES, 0, 0, 0, 0),
              "GPU records")
    smd = stitched["metadata"]
    expect_eq((smd["dropped_events"], smd["late_events"]), (0, 0), "stitch: dropped, late")
    expect_eq(smd["events"], sum(i["events"] for i in smd["inputs"]), "stitch: every event")


def expect_kineto_kept(kineto, stitched, shift_ns):
    """Every op and annotation of the real Kineto trace, moved by exactly one shift."""
    cats = ("cpu_op", "user_annotation")
    want = collections.Counter((e["cat"], e["name"], e["pid"], e["tid"], ns(e["ts"]) + shift_ns,
                                ns(e["dur"])) for e in x_events(kineto, cats))
    got = collections.Counter((e["cat"], e["name"], e["pid"], e["tid"], ns(e["ts"]), ns(e["dur"]))
                              for e in x_events(stitched, cats))
    expect_eq(got, want, "Kineto's ops and annotations, each shifted by shift_ns")
    names = {e["name"] for e in x_events(kineto, cats)}
    for op in ("aten::linear", "aten::mse_loss", "Optimizer.step#SGD.step"):
        assert op in names, (op, sorted(names))
    for s in range(STEPS):
        assert f"gs_step_{s}" in names and f"gs_launch_{s}" in names, (s, sorted(names))


def step_ranges(stitched, prefix):
    rows = [e for e in x_events(stitched, ("user_annotation",)) if e["name"].startswith(prefix)]
    expect_eq(sorted(e["name"] for e in rows), [f"{prefix}{s}" for s in range(STEPS)], prefix)
    return {int(e["name"][len(prefix):]): (ns(e["ts"]), ns(e["ts"] + e["dur"])) for e in rows}


def steps_holding(ranges, start, end):
    """The steps whose range holds [start, end], within the clocks' tolerance."""
    return [s for s, (lo, hi) in ranges.items()
            if lo - CLOCK_TOLERANCE_NS <= start and end <= hi + CLOCK_TOLERANCE_NS]


def expect_steps_hold_their_work(stitched, launches, kernels, prefix):
    """Each launch and its kernel lie in exactly one step's range: the step that made them."""
    ranges = step_ranges(stitched, prefix)
    by_step = collections.defaultdict(list)
    for e in sorted(launches.values(), key=lambda e: e["ts"]):
        held = steps_holding(ranges, ns(e["ts"]), ns(e["ts"] + e["dur"]))
        expect_eq(len(held), 1, f"{prefix} ranges {ranges} holding launch {e}")
        by_step[held[0]].append(e["args"]["correlation"])
    expect_eq({s: len(c) for s, c in by_step.items()}, {s: s + 1 for s in range(STEPS)},
              f"launches per {prefix} range")
    # launches run in order: step s's are the s + 1 after those of the steps before it
    order = [c for s in range(STEPS) for c in by_step[s]]
    expect_eq(order, sorted(order), "correlation ids in step order")
    for k in kernels:
        step = [s for s, c in by_step.items() if k["args"]["correlation"] in c]
        expect_eq(steps_holding(ranges, ns(k["ts"]), ns(k["ts"] + k["dur"])), step,
                  f"{prefix} range holding kernel {k}")


@test
def torch2_kineto_trace_stitched_with_a_gpu_recording():
    gs, kineto, stitched, _ = stitched_run()
    expect_nothing_lost(gs, stitched)
    assert "schemaVersion" in kineto and "baseTimeNanoseconds" in kineto, sorted(kineto)
    inputs = stitched["metadata"]["inputs"]
    expect_eq([i["format"] for i in inputs], ["gpusnoop", "kineto"], "inputs recognised")
    # Kineto's ts is wall-clock microseconds from baseTimeNanoseconds; the output's clock is
    # the recording's CLOCK_MONOTONIC: one shift, from the two traces' own numbers
    shift = inputs[1]["shift_ns"]
    expect_eq(shift, kineto["baseTimeNanoseconds"] - gs["metadata"]["monotonic_to_realtime_ns"],
              "Kineto's shift onto the recording's clock")
    expect_kineto_kept(kineto, stitched, shift)
    launches = {e["args"]["correlation"]: e for e in x_events(stitched, ("cuda_runtime",))}
    expect_eq(collections.Counter(e["name"] for e in launches.values()),
              {"cudaLaunchKernel": LAUNCHES}, "CUDA calls, one correlation id each")
    kernels = gpu_rows(stitched)
    expect_eq(sorted((e["name"], ns(e["dur"]), e["pid"], e["tid"]) for e in kernels),
              [(KERNEL, KERNEL_NS, 0, DEFAULT_STREAM)] * LAUNCHES, "kernel rows")
    expect_eq(sorted(e["args"]["correlation"] for e in kernels), sorted(launches),
              "a kernel per launch")
    pids = {e["pid"] for e in launches.values()}
    expect_eq(pids, {e["pid"] for e in x_events(kineto, ("cpu_op",))}, "one Python process")
    pid = pids.pop()
    expect_eq(expect_flows_pair_launches(stitched), {(pid, c): 1 for c in launches},
              "one ac2g flow from each launch to its kernel")
    for prefix in ("gs_step_", "gs_launch_"):
        expect_steps_hold_their_work(stitched, launches, kernels, prefix)


def hta_launch_check(trace_dir):
    """hta_launch_check.py's JSON; HTA's ns rounding is off (HTA_DISABLE_NS_ROUNDING): by
    default it rounds each start up and end down to whole us, which makes 1 us kernels 0."""
    p = subprocess.run([VENV_PYTHON, os.path.join(os.path.dirname(__file__),
                                                  "hta_launch_check.py"), trace_dir],
                       capture_output=True, timeout=LOAD_TIMEOUT,
                       env=dict(os.environ, HTA_DISABLE_NS_ROUNDING="1"))
    expect_eq(p.returncode, 0, f"hta_launch_check status; stderr:\n{p.stderr.decode()[-3000:]}")
    return json.loads(p.stdout)


@test
def torch2_stitched_trace_loads_in_holistic_trace_analysis():
    _, _, stitched, path = stitched_run()
    hta = hta_launch_check(os.path.dirname(path))
    # the recording's distributedInfo (the target's RANK), kept by stitch
    expect_eq(hta["ranks"], [RANK], "the rank HTA finds")
    expect_eq([(k["name"], k["type"], k["sum_us"], k["mean_us"]) for k in hta["kernels"]],
              [(KERNEL, "COMPUTATION", LAUNCHES * KERNEL_NS / 1000, KERNEL_NS / 1000)],
              "HTA's kernel breakdown: 10 kernels of 1 us")
    kernels = gpu_rows(stitched)
    span_ns = max(ns(k["ts"] + k["dur"]) for k in kernels) - min(ns(k["ts"]) for k in kernels)
    idle = [i for i in hta["idle"] if i["rank"] == RANK]
    expect_eq({i["stream"] for i in idle}, {DEFAULT_STREAM}, "streams with idle time")
    idle_ns = sum(i["idle_us"] for i in idle) * 1000
    # the stream's first start to last end, less its 10 us of kernels; HTA rounds to 0.01 us
    assert abs(idle_ns - (span_ns - LAUNCHES * KERNEL_NS)) <= 5, (idle, span_ns)
    launches = {e["args"]["correlation"] for e in x_events(stitched, ("cuda_runtime",))}
    expect_eq(sorted(l["correlation"] for l in hta["launches"]), sorted(launches),
              "HTA pairs each launch with its kernel")
    expect_eq({l["gpu_us"] for l in hta["launches"]}, {KERNEL_NS / 1000}, "each kernel's time")


class VenvScript(Workload):
    """A fixture script of sync.h's protocol run by the venv's interpreter (same pid: exec)."""

    def __init__(self, script):
        wrapper = os.path.join(tempfile.mkdtemp(), os.path.basename(script))
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nexec "{VENV_PYTHON}" "{script}" "$@"\n')
        os.chmod(wrapper, 0o755)
        super().__init__(os.path.basename(script), exe=wrapper)


@test
def torch2_torchrun_job_one_file_per_rank():
    """`record -e gpu -o DIR/ -- torchrun ...`: torchrun is a Python script (its "#!" line
    names the venv's python), started as a user starts it; each worker's launches and kernels
    go to its rank's file, linked, and HTA loads the directory as the job's two ranks."""
    torch2_python()
    torchrun = os.path.join(os.path.dirname(VENV_PYTHON), "torchrun")
    out = os.path.join(tempfile.mkdtemp(), "traces") + "/"
    status, stdout, err = run_gpusnoop(
        "record", "-e", "gpu", "-o", out, "--", torchrun, "--standalone",  # a free port
        "--nproc-per-node", "2", os.path.join(WORKLOADS, "gs_torchrun_rank.py"), HIDDEN_LIB,
        env=gpu_env(GPUSNOOP_CUPTI_LIBRARY=STAND_IN_CUPTI), timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    expect_eq(sorted(l for l in stdout.splitlines() if l.startswith("rank ")),
              ["rank 0 done", "rank 1 done"], "the workers ran")
    expect_eq(sorted(os.listdir(out)), ["rank-0.json", "rank-1.json"], "one file per rank")
    for rank, want in ((0, 6), (1, 9)):
        trace = load(os.path.join(out, f"rank-{rank}.json"))
        expect_eq(trace["distributedInfo"], {"rank": rank, "world_size": 2}, "distributedInfo")
        expect_eq(trace["metadata"]["dropped_events"], 0, "dropped")
        kernels = gpu_rows(trace)
        expect_eq([(e["name"], ns(e["dur"])) for e in kernels], [(KERNEL, KERNEL_NS)] * want,
                  f"rank {rank}'s kernels")
        launches = {e["args"]["correlation"] for e in x_events(trace, ("cuda_runtime",))}
        expect_eq(sorted(e["args"]["correlation"] for e in kernels), sorted(launches),
                  f"rank {rank}: a kernel per launch")
    p = subprocess.run([VENV_PYTHON, os.path.join(os.path.dirname(__file__), "hta_check.py"),
                        out], capture_output=True, timeout=LOAD_TIMEOUT,
                       env=dict(os.environ, HTA_DISABLE_NS_ROUNDING="1"))
    expect_eq(p.returncode, 0, f"hta_check status; stderr:\n{p.stderr.decode()[-3000:]}")
    hta = json.loads(p.stdout)
    expect_eq(hta["ranks"], [0, 1], "the ranks HTA finds")
    expect_eq(sorted((k["rank"], k["name"], k["sum_us"]) for k in hta["kernels"]),
              [(0, KERNEL, 6.0), (1, KERNEL, 9.0)], "HTA's kernel breakdown per rank")


@test
def torch2_cpu_tensors():
    """gs_torch_cpu.py's 3 kept tensors, as with Debian's torch 1.13 (test_torch.py)."""
    version, torch_dir = torch2_python()
    frames, t, err = leaks_of_cpu_tensors(VenvScript(CPU_SCRIPT))
    assert (f"PyTorch {version} ({torch_dir}/lib/libc10.so): CPU tensors from "
            "c10::alloc_cpu/free_cpu") in err, err
    expect_eq(t["version"], version, "version")
    expect_eq(t["devices"], [{"device": "cpu", "allocated_bytes": 3 * 493828, "tensors": 3}],
              "devices")
    expect_eq([(s["bytes"], s["allocations"], s["device"]) for s in t["stacks"]],
              [(3 * 493828, 3, "cpu")], "one stack")
    expect_eq((frames[0]["symbol"], os.path.basename(frames[0]["module"])),
              ("c10::DefaultCPUAllocator::allocate(unsigned long)", "libc10.so"),
              "the allocating frame (alloc_cpu's caller)")
    python = [(f["symbol"], os.path.basename(f["file"])) for f in frames
              if f.get("kind") == "python"]
    assert ("keep_tensors", "gs_torch_cpu.py") in python, frames
