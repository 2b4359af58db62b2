#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_stitch.py: `gpusnoop stitch` over real recordings of fixture processes (and Kineto)."""
import collections
import gzip
import json
import os
import re
import sys
import tempfile
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, ROOT, expect_eq, run_gpusnoop, test

GEMM = "gemm_kernel(float*, int)"
RELU = "relu_kernel(float*, int)"
SCALE = "void scale<float>(float*, float, int)"
KINETO = os.path.join(ROOT, "tests", "fixtures", "kineto", "train_step.pt.trace.json")
PID_STRIDE = 10000000
US = Decimal(1000)  # ns per microsecond

_recordings = {}


def load(path):
    """The trace with every number exact (timestamps are µs with ns decimals)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f, parse_float=Decimal)


def load_plain(path):
    """For editing: floats are exact enough to write these timestamps back unchanged."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def save(trace, path):
    with open(path, "w") as f:
        json.dump(trace, f)


def record(workload, path):
    """One `gpusnoop record -- WORKLOAD` run, made once per test session."""
    if workload not in _recordings:
        status, _, err = run_gpusnoop("record", "-o", path, "--", os.path.join(BIN, workload),
                                      timeout=120)
        expect_eq(status, 0, f"record {workload} ({err})")
        _recordings[workload] = path
    return _recordings[workload]


def workload_pid(trace, name):
    procs = [e["pid"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name" and
             e["args"]["name"].startswith(name)]
    expect_eq(len(procs), 1, f"processes named {name}")
    return procs[0]


def launches(trace, pid):
    return dict(collections.Counter(e["args"]["kernel"] for e in trace["traceEvents"]
                                    if e["ph"] == "X" and e["pid"] == pid and
                                    "kernel" in e.get("args", {})))


def timed(trace, pid=None):
    """(pid, tid, name, ts, dur) of every timed event: what must survive the merge."""
    return sorted((e["pid"], e["tid"], e["name"], e["ts"], e.get("dur"))
                  for e in trace["traceEvents"] if e["ph"] != "M" and
                  (pid is None or e["pid"] == pid))


def expect_sorted(trace):
    ts = [e["ts"] for e in trace["traceEvents"] if e["ph"] != "M"]
    bad = [(a, b) for a, b in zip(ts, ts[1:]) if b < a]
    expect_eq(bad[:3], [], "timestamps out of order")


def stitch(*args):
    status, out, err = run_gpusnoop("stitch", *args, timeout=120)
    return status, out, err


def two_recordings(tmp):
    a = record("gs_kernels", os.path.join(tmp, "kernels.json.gz"))
    b = record("gs_gemm_loop", os.path.join(tmp, "gemm_loop.json"))
    return a, b


@test
def stitch_two_recorded_processes():
    tmp = tempfile.mkdtemp()
    a, b = two_recordings(tmp)
    out = os.path.join(tmp, "both.json.gz")
    status, _, err = stitch(a, b, "-o", out)
    expect_eq(status, 0, f"stitch status ({err})")
    ta, tb, t = load(a), load(b), load(out)
    pa, pb = workload_pid(ta, "gs_kernels"), workload_pid(tb, "gs_gemm_loop")
    # one host: pids, names and timestamps exactly as recorded
    expect_eq(workload_pid(t, "gs_kernels"), pa, "gs_kernels pid")
    expect_eq(workload_pid(t, "gs_gemm_loop"), pb, "gs_gemm_loop pid")
    expect_eq(launches(t, pa), {GEMM: 3000, RELU: 1000, SCALE: 10}, "gs_kernels launches")
    expect_eq(launches(t, pb), {GEMM: 3000, RELU: 1000}, "gs_gemm_loop launches")
    expect_eq(timed(t), sorted(timed(ta) + timed(tb)), "every timed event, unchanged")
    expect_sorted(t)
    md = t["metadata"]
    expect_eq(md["tool"], "gpusnoop", "tool")
    expect_eq([i["file"] for i in md["inputs"]], [a, b], "inputs listed")
    expect_eq([i["format"] for i in md["inputs"]], ["gpusnoop", "gpusnoop"], "formats")
    expect_eq([i["shift_ns"] for i in md["inputs"]], [0, 0], "one host: no shift")
    expect_eq(md["dropped_events"], ta["metadata"]["dropped_events"] +
              tb["metadata"]["dropped_events"], "dropped events summed")
    expect_eq(md["late_events"], 0, "late events")
    expect_eq(md["monotonic_to_realtime_ns"], ta["metadata"]["monotonic_to_realtime_ns"],
              "output clock: the first input's")
    expect_eq(len(md["hosts"]), 1, "hosts")
    expect_eq(md["inputs"][1]["metadata"]["command_line"],
              tb["metadata"]["command_line"], "input metadata carried over")
    assert "stitched 2 inputs from 1 host" in err, err


@test
def stitch_same_pid_on_two_hosts():
    """A copy of a recording claiming another host, booted 1 ms later: two processes."""
    tmp = tempfile.mkdtemp()
    a, _ = two_recordings(tmp)
    ta = load(a)
    fake = load_plain(a)
    fake["metadata"]["host"] = "otherhost"
    fake["metadata"]["monotonic_to_realtime_ns"] += 1000000
    other = os.path.join(tmp, "other.json")
    save(fake, other)
    out = os.path.join(tmp, "hosts.json")
    status, _, err = stitch(a, other, "-o", out)
    expect_eq(status, 0, f"stitch status ({err})")
    t = load(out)
    pid = workload_pid(ta, "gs_kernels")
    host = ta["metadata"]["host"]
    names = {e["pid"]: e["args"]["name"] for e in t["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    expect_eq(names, {pid: f"gs_kernels (pid {pid} on {host})",
                      pid + PID_STRIDE: f"gs_kernels (pid {pid} on otherhost)"},
              "process per host, named with it")
    expect_eq(launches(t, pid), {GEMM: 3000, RELU: 1000, SCALE: 10}, "first host's launches")
    expect_eq(launches(t, pid + PID_STRIDE), {GEMM: 3000, RELU: 1000, SCALE: 10},
              "second host's launches")
    expect_eq(timed(t, pid), timed(ta), "first host unchanged")
    shifted = [(p + PID_STRIDE, tid, n, ts + 1000, d) for p, tid, n, ts, d in timed(ta)]
    expect_eq(timed(t, pid + PID_STRIDE), shifted, "second host 1 ms later, exactly")
    expect_sorted(t)
    expect_eq([h["host"] for h in t["metadata"]["hosts"]], [host, "otherhost"], "hosts")


@test
def stitch_kineto_trace_lands_at_its_wall_clock_times():
    tmp = tempfile.mkdtemp()
    a, _ = two_recordings(tmp)
    ta = load(a)
    k = load_plain(KINETO)
    md = ta["metadata"]
    # the fixture's events, placed 5 ms after the recording started: by the option...
    base = k["baseTimeNanoseconds"]
    offset = md["start_realtime_ns"] + 5000000 - base
    out = os.path.join(tmp, "with_kineto.json")
    status, _, err = stitch(a, KINETO, "--kineto-offset", str(offset), "-o", out)
    expect_eq(status, 0, f"stitch status ({err})")
    t1 = load(out)
    # ...and by its own clock: the same fixture with that base time
    k["baseTimeNanoseconds"] = base + offset
    moved = os.path.join(tmp, "moved.pt.trace.json")
    save(k, moved)
    out2 = os.path.join(tmp, "with_kineto2.json.gz")
    status, _, err = stitch(a, moved, "-o", out2)
    expect_eq(status, 0, f"stitch status ({err})")
    t2 = load(out2)

    start_mono_us = Decimal(md["start_monotonic_ns"]) / US
    for t in (t1, t2):
        got = {(e["name"], e["pid"], e["tid"]): e["ts"] for e in t["traceEvents"]
               if e["ph"] == "X" and e["pid"] in (0, 4242)}
        want = {(e["name"], e["pid"], e["tid"]): start_mono_us + 5000 + e["ts"]
                for e in load(KINETO)["traceEvents"]
                if e["ph"] == "X" and e.get("cat") != "Trace"}
        expect_eq(got, want, "Kineto events on the recording's clock")
        pid = workload_pid(t, "gs_kernels")
        expect_eq(launches(t, pid), {GEMM: 3000, RELU: 1000, SCALE: 10}, "gpusnoop launches")
        expect_eq(timed(t, pid), timed(ta), "gpusnoop events unchanged")
        flows = sorted((e["ph"], e["pid"], e["ts"]) for e in t["traceEvents"]
                       if e.get("cat") == "ac2g")
        expect_eq(flows, [("f", 0, start_mono_us + Decimal("6030.125")),
                          ("s", 4242, start_mono_us + Decimal("6010.250"))], "ac2g flow")
        expect_eq({e["id"] for e in t["traceEvents"] if e.get("cat") == "ac2g"},
                  {1}, "Kineto's flow id 218, renumbered: the first id of any input")
        expect_sorted(t)
        kin = t["metadata"]["inputs"][1]
        expect_eq(kin["format"], "kineto", "format")
        expect_eq(kin["metadata"]["distributedInfo"]["rank"], 0, "Kineto metadata kept")
    expect_eq(t1["metadata"]["inputs"][1]["offset_ns"], offset, "offset recorded")


@test
def stitch_malformed_input_one_line_and_no_output():
    tmp = tempfile.mkdtemp()
    a, b = two_recordings(tmp)
    with open(b, "rb") as f:
        text = f.read()
    cut = os.path.join(tmp, "cut.json")
    with open(cut, "wb") as f:
        f.write(text[:len(text) // 2])
    out = os.path.join(tmp, "never.json.gz")
    status, stdout, err = stitch(a, cut, "-o", out)
    expect_eq(status, 1, "status")
    expect_eq(err, f"gpusnoop: error: {cut}: offset {len(text) // 2}: premature EOF\n",
              "one error line")
    expect_eq(stdout, "", "stdout")
    expect_eq([f for f in os.listdir(tmp) if f.startswith("never")], [],
              "no output, no temporary left")
    # a bad value in the last event: found before anything is written
    m = list(re.finditer(rb'"ts":[0-9.]+', text))[-1]
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "wb") as f:
        f.write(text[:m.start()] + b'"ts":"later"' + text[m.end():])
    status, _, err = stitch(a, bad, "-o", out)
    expect_eq(status, 1, "status")
    assert re.fullmatch(rf'gpusnoop: error: {re.escape(bad)}: offset \d+: traceEvents\[\d+\]: '
                        r'"ts" is not a number\n', err), err
    expect_eq([f for f in os.listdir(tmp) if f.startswith("never")], [],
              "no output, no temporary left")
