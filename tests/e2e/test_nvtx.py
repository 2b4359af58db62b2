#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_nvtx.py: `record -e nvtx`: NVTX ranges, marks and names from C (NVTX3 headers), PyPI's
nvtx and torch.cuda.nvtx, around the launches they made on the stand-in GPU."""
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, LIB, ROOT, Gpusnoop, Skip, Workload, expect_eq, main, run_gpusnoop,
                     test)
from test_gpu import GEMM, INJECTION, LOAD_TIMEOUT, RELU, gpu_env, hta_check

NVTX_BIN = os.path.join(BIN, "gs_nvtx")
PY_WORKLOAD = os.path.join(ROOT, "tests", "fixtures", "workloads", "gs_nvtx_py.py")
HIDDEN_LIB = os.path.join(LIB, "libgs_hidden.so")
HIDDEN = "hidden_kernel(int*)"
VENV_PYTHON = os.environ.get("GS_TORCH2_PYTHON", "/var/cache/gpusnoop-tests/venv/bin/python")
BACKWARD = "backward \u00e9"  # pushed as a wide string: UTF-8 in the trace
UNNAMED = "[unnamed range]"
# what gs_nvtx.cc does with GS_NVTX_STEPS=2
C_RANGES = {"step": 2, "forward": 2, BACKWARD: 2, "registered range": 1}
C_LAUNCHES = {(GEMM, "forward"): 4, (RELU, BACKWARD): 2, (RELU, "registered range"): 1,
              (GEMM, None): 1}


def need_fixture():
    if not os.path.exists(INJECTION):
        raise Skip(f"{INJECTION} not built (no CUPTI headers at build time)")
    if not os.path.exists(NVTX_BIN):
        raise Skip(f"{NVTX_BIN} not built (no NVTX3 headers, /usr/local/cuda/include/nvtx3)")


def ns(us):
    return round(us * 1000)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main_pid(trace):
    return next(e["pid"] for e in trace["traceEvents"]
                if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] > 0)


def nvtx_rows(trace, ph):
    return [e for e in trace["traceEvents"] if e.get("cat") == "nvtx" and e["ph"] == ph]


def launches(trace):
    return [e for e in trace["traceEvents"]
            if e["ph"] == "X" and e.get("cat") == "cuda_runtime" and e["name"] == "cudaLaunchKernel"]


def inside(e, r):
    """e (a slice or instant) lies within the X range r, on r's thread."""
    end = ns(e["ts"]) + ns(e.get("dur", 0))
    return ((e["pid"], e["tid"]) == (r["pid"], r["tid"]) and ns(r["ts"]) <= ns(e["ts"])
            and end <= ns(r["ts"]) + ns(r["dur"]))


def innermost(e, ranges):
    """The name of the shortest range e lies in, None when in none."""
    around = [r for r in ranges if r is not e and inside(e, r)]
    return min(around, key=lambda r: ns(r["dur"]))["name"] if around else None


def async_pairs(trace):
    """{name: (b, e)} of the start/end ranges, each id begun and ended once."""
    begins = {e["id"]: e for e in nvtx_rows(trace, "b")}
    ends = {e["id"]: e for e in nvtx_rows(trace, "e")}
    expect_eq(sorted(begins), sorted(ends), "async ids begun and ended")
    expect_eq(len(begins), len(nvtx_rows(trace, "b")), "each async id begun once")
    return {b["name"]: (b, ends[i]) for i, b in begins.items()}


def expect_c_trace(trace, err, domains=1):
    """gs_nvtx's ranges, nested as called, each launch under the range that made it; domains:
    those created while recorded."""
    pid = main_pid(trace)
    ranges = nvtx_rows(trace, "X")
    expect_eq(dict(collections.Counter(r["name"] for r in ranges)), C_RANGES, "push/pop ranges")
    expect_eq({(r["pid"], r["tid"]) for r in ranges}, {(pid, pid)}, "ranges on the main thread")
    for r in ranges:
        want = "step" if r["name"] in ("forward", BACKWARD) else None
        expect_eq(innermost(r, ranges), want, f"range around {r['name']}")
    marks = nvtx_rows(trace, "i")
    expect_eq([(m["name"], m["s"], innermost(m, ranges)) for m in marks],
              [("checkpoint", "t", "step")] * 2, "marks, inside their steps")
    got = collections.Counter((l["args"]["kernel"], innermost(l, ranges))
                              for l in launches(trace))
    expect_eq(dict(got), C_LAUNCHES, "launches by the innermost range around them")
    reg = next(r for r in ranges if r["name"] == "registered range")
    expect_eq(reg["args"], {"domain": "gs_domain", "category": "io", "color": "#00ff00",
                            "payload": 42}, "a domain range's args")
    expect_eq(next(r for r in ranges if r["name"] == "step")["args"], {}, "a core range's args")
    pairs = async_pairs(trace)
    expect_eq(sorted(pairs), ["load"], "start/end ranges")
    b, e = pairs["load"]
    worker = [l for l in launches(trace) if l["tid"] != pid]
    expect_eq(len(worker), 1, "the worker's launch")
    expect_eq((b["pid"], b["tid"], e["pid"], e["tid"]), (pid, pid, pid, worker[0]["tid"]),
              "started on the main thread, ended on the worker")
    assert ns(b["ts"]) <= ns(worker[0]["ts"]) <= ns(e["ts"]), (b, worker[0], e)
    names = {e["tid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == pid}
    expect_eq(names.get(worker[0]["tid"]), "nvtx worker", "nvtxNameOsThreadA's name")
    md = trace["metadata"]["nvtx"]
    expect_eq({k: md[k] for k in ("ranges", "async_ranges", "marks", "domains", "thread_names",
                                  "unfinished", "unmatched_pops", "unmatched_ends",
                                  "names_truncated", "malformed")},
              {"ranges": 7, "async_ranges": 1, "marks": 2, "domains": domains, "thread_names": 1,
               "unfinished": 0, "unmatched_pops": 0, "unmatched_ends": 0,
               "names_truncated": 0, "malformed": 0}, "nvtx metadata")
    assert "NVTX: 7 push/pop ranges, 1 start/end ranges, 2 marks" in err, err


_c_trace = {}


def c_recording():
    """`record -e gpu -- gs_nvtx` once per run (test_nvtx_stitch reuses it)."""
    need_fixture()
    if "path" not in _c_trace:
        out = os.path.join(tempfile.mkdtemp(), "nvtx.json")
        status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--", NVTX_BIN,
                                      env=gpu_env(), timeout=LOAD_TIMEOUT)
        expect_eq(status, 0, f"record status; stderr:\n{err}")
        _c_trace.update(path=out, err=err)
    return _c_trace["path"], _c_trace["err"]


@test
def nvtx_c_ranges_nest_around_their_launches_and_gpu_work():
    """-e gpu turns NVTX on: NVTX_INJECTION64_PATH names the library for the command."""
    path, err = c_recording()
    trace = load(path)
    expect_c_trace(trace, err)
    gpu = trace["metadata"]["gpu"]
    expect_eq((gpu["records"], gpu["linked"]), (8, 8), "GPU kernels, linked to the launches")


@test
def nvtx_attach_by_pid_to_a_process_started_with_the_variable():
    """Domains, categories and strings registered while nobody traced (the library dormant)
    still name what is recorded once gpusnoop attaches by pid."""
    need_fixture()
    env = dict(os.environ, NVTX_INJECTION64_PATH=INJECTION, LD_LIBRARY_PATH=LIB)
    p = subprocess.run([NVTX_BIN], capture_output=True, env=env, timeout=30)
    expect_eq((p.returncode, p.stdout.decode().split("\n")[1:]), (0, ["done", ""]),
              f"untraced run; stderr {p.stderr!r}")
    w = Workload("gs_nvtx", env={"NVTX_INJECTION64_PATH": INJECTION, "LD_LIBRARY_PATH": LIB})
    out = os.path.join(tempfile.mkdtemp(), "nvtx.json")
    g = Gpusnoop("record", "-e", "nvtx,cuda-launch", "-p", str(w.pid), "-o", out)
    try:
        g.wait_stderr("Ctrl-C to stop", LOAD_TIMEOUT)
        w.release()
        w.wait_line("done")
        expect_eq(w.finish(), 0, "workload status")
        expect_eq(g.wait(), 0, f"record status; stderr:\n{g.stderr_text()}")
    finally:
        w.kill()
        g.kill()
    trace = load(out)
    expect_c_trace(trace, g.stderr_text(), domains=0)  # gs_domain came before gpusnoop
    assert "gpu" not in trace["metadata"], "no -e gpu: no GPU part"


@test
def nvtx_hostile_names_bounded_and_escaped():
    """A 400-byte name with quotes, control bytes and invalid UTF-8 is cut at 255 bytes and
    escaped; a pop with nothing pushed is counted; made-up handles name nothing (the third
    range is gs_nvtx's "registered range", always run)."""
    need_fixture()
    out = os.path.join(tempfile.mkdtemp(), "nvtx.json")
    status, _, err = run_gpusnoop("record", "-e", "nvtx", "-o", out, "--", NVTX_BIN,
                                  env={"GS_NVTX_HOSTILE": "1", "GS_NVTX_STEPS": "0",
                                       "LD_LIBRARY_PATH": LIB}, timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    with open(out, "rb") as f:
        raw = f.read()
    trace = json.loads(raw.decode("utf-8"))  # valid JSON, valid UTF-8
    ranges = nvtx_rows(trace, "X")
    hostile = [r for r in ranges if r["name"].startswith('"\\\n\x01')]
    expect_eq(len(hostile), 1, f"the long name's range in {[r['name'][:8] for r in ranges]}")
    name = hostile[0]["name"]
    expect_eq(name[:6], '"\\\n\x01\ufffdx', "its first bytes, invalid UTF-8 replaced")
    expect_eq(len(name), 255, "cut at 255 characters (one byte each)")
    made_up = [r for r in ranges if r["name"] == UNNAMED]
    expect_eq([r["args"] for r in made_up], [{}], "a made-up string and domain name nothing")
    md = trace["metadata"]["nvtx"]
    expect_eq((md["ranges"], md["unmatched_pops"], md["names_truncated"]), (3, 1, 1),
              "ranges, the pop with nothing pushed, the cut name")


def venv_module(module):
    how = "`make setup-test` (scripts/setup.sh test) installs it"
    if not os.access(VENV_PYTHON, os.X_OK):
        raise Skip(f"{VENV_PYTHON} missing: {how}")
    p = subprocess.run([VENV_PYTHON, "-c", f"import {module}"], capture_output=True,
                       timeout=120)
    if p.returncode:
        raise Skip(f"no {module} in {VENV_PYTHON}: {how}")


def python_recording(api):
    if not os.path.exists(INJECTION):
        raise Skip(f"{INJECTION} not built (no CUPTI headers at build time)")
    venv_module({"torch": "torch.cuda.nvtx"}.get(api, api))
    out = os.path.join(tempfile.mkdtemp(), "nvtx.json")
    status, _, err = run_gpusnoop("record", "-e", "nvtx,cuda-launch", "-o", out, "--",
                                  VENV_PYTHON, PY_WORKLOAD, api, HIDDEN_LIB,
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace = load(out)
    ranges = nvtx_rows(trace, "X")
    expect_eq(dict(collections.Counter(r["name"] for r in ranges)),
              {"step 0": 1, "step 1": 1, "launch": 2}, "push/pop ranges")
    expect_eq(sorted((r["name"], innermost(r, ranges)) for r in ranges),
              [("launch", "step 0"), ("launch", "step 1"), ("step 0", None), ("step 1", None)],
              "each launch range inside its step")
    expect_eq([(m["name"], innermost(m, ranges)) for m in nvtx_rows(trace, "i")],
              [("after launch", "step 0"), ("after launch", "step 1")], "marks")
    return trace, ranges, err


@test
def nvtx_python_package_ranges_domains_and_launches():
    trace, ranges, _ = python_recording("nvtx")
    got = collections.Counter((l["args"]["kernel"], innermost(l, ranges))
                              for l in launches(trace))
    expect_eq(dict(got), {(HIDDEN, "launch"): 4, (HIDDEN, None): 1}, "launches by range")
    steps = sorted((r for r in ranges if r["name"].startswith("step")), key=lambda r: r["ts"])
    expect_eq([r["args"] for r in steps],
              [{"domain": "py_domain", "category": "train", "color": "#008000", "payload": p}
               for p in (0, 1)], "the steps' domain, category, color and payload")
    b, e = async_pairs(trace)["async"]
    last = max(launches(trace), key=lambda l: l["ts"])
    assert ns(b["ts"]) <= ns(last["ts"]) <= ns(e["ts"]), (b, last, e)
    expect_eq(b["args"]["domain"], "py_domain", "the start/end range's domain")


@test
def nvtx_torch_cuda_nvtx_ranges_and_launches():
    """torch.cuda.nvtx calls libnvToolsExt of the CUDA wheels, without a GPU: the same hook."""
    trace, ranges, _ = python_recording("torch")
    got = collections.Counter((l["args"]["kernel"], innermost(l, ranges))
                              for l in launches(trace))
    expect_eq(dict(got), {(HIDDEN, "launch"): 4}, "launches by range")
    expect_eq({json.dumps(r["args"]) for r in ranges}, {"{}"}, "core ranges: no args")


@test
def nvtx_variable_naming_another_library():
    """-e nvtx refuses a command whose NVTX_INJECTION64_PATH names another tool's library (as
    -e gpu does for CUDA's); -e gpu, which asked for NVTX only implicitly, says so in one
    line and records its GPU rows."""
    need_fixture()
    other = {"NVTX_INJECTION64_PATH": "/opt/other/libToolsInjection64.so"}
    out = os.path.join(tempfile.mkdtemp(), "nvtx.json")
    status, _, err = run_gpusnoop("record", "-e", "nvtx", "-o", out, "--", NVTX_BIN,
                                  env=dict(other, LD_LIBRARY_PATH=LIB), timeout=LOAD_TIMEOUT)
    expect_eq((status, os.path.exists(out)), (1, False), f"-e nvtx status; stderr:\n{err}")
    assert "NVTX_INJECTION64_PATH already names /opt/other/libToolsInjection64.so" in err, err
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--", NVTX_BIN,
                                  env=gpu_env(**other), timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"-e gpu status; stderr:\n{err}")
    assert "NVTX_INJECTION64_PATH names /opt/other/libToolsInjection64.so: no NVTX ranges" \
        in err, err
    trace = load(out)
    expect_eq((trace["metadata"]["gpu"]["linked"], trace["metadata"]["nvtx"]["events"]), (8, 0),
              "GPU rows, no NVTX")


@test
def nvtx_rows_leave_holistic_trace_analysis_reading_the_gpu_work():
    path, _ = c_recording()
    expect_eq(len(nvtx_rows(load(path), "X")), 7, "the NVTX ranges HTA is given")
    trace_dir = tempfile.mkdtemp()
    shutil.copy(path, os.path.join(trace_dir, "rank0.json"))
    kernels = hta_check(trace_dir)["kernels"]
    # 5 gemm, 3 relu: HTA's sums over its means (HTA's durations are its own)
    expect_eq(sorted((k["name"], round(k["sum_us"] / k["mean_us"])) for k in kernels),
              [(GEMM, 5), (RELU, 3)], "HTA's kernels and their counts")


@test
def nvtx_stitch_keeps_ranges_and_async_pairs():
    path, _ = c_recording()
    out = os.path.join(tempfile.mkdtemp(), "stitched.json")
    status, _, err = run_gpusnoop("stitch", path, "-o", out, timeout=120)
    expect_eq(status, 0, f"stitch status; stderr:\n{err}")
    before, after = load(path), load(out)
    key = lambda t: sorted((e["ph"], e["name"], e["tid"] == e["pid"], e.get("dur"))
                           for e in t["traceEvents"] if e.get("cat") == "nvtx")
    expect_eq(key(after), key(before), "every NVTX row, with its duration")
    b, e = async_pairs(after)["load"]
    expect_eq(b["id"], e["id"], "the start/end pair keeps one id")


if __name__ == "__main__":
    sys.exit(main())
