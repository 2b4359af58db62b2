#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_python.py: Python functions, files and lines in stacks, on every CPython 3.8-3.13 here
(3.14 and 3.15: test_python314.py)."""
import glob
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (LIB, LineReader, Skip, Workload, expect_eq, process,  # noqa: E402
                     run_gpusnoop, test, run_attached)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "tests", "fixtures", "python", "gs_pycaller.py")
TORCH_CPU_SCRIPT = os.path.join(ROOT, "tests", "fixtures", "workloads", "gs_torch_cpu.py")
CUDART = os.path.join(LIB, "libcudart.so.13")
PYENV = os.path.expanduser("~root/.pyenv/versions")
MALLOC_CALLERS = ["alloc_weights", "make_layer", "build_model", "main", "<module>"]


def marked_lines(path=SCRIPT):
    """{function: line} of the "# LINE function" marks in the script."""
    out = {}
    with open(path) as f:
        for n, text in enumerate(f, 1):
            if "# LINE " in text:
                out[text.split("# LINE ")[1].strip()] = n
    return out


def interpreter(version):
    """Debian's python3.11 ("debian") or pyenv's 3.X; Skip when this machine has none."""
    if version == "debian":
        path = "/usr/bin/python3.11"
    else:
        found = sorted(glob.glob(os.path.join(PYENV, version + ".*", "bin", "python" + version)))
        path = found[-1] if found else ""
    if not os.access(path, os.X_OK):
        raise Skip(f"no CPython {version} here ({path or PYENV})")
    return path


class PyWorkload(Workload):
    """gs_pycaller.py under one interpreter, held, speaking the fixtures' protocol."""

    def __init__(self, python, mode, env=None):
        cmd = [python, SCRIPT, "--hold", CUDART, mode]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, **(env or {})))
        self.out = LineReader(self.proc.stdout)
        self.out.wait_for(lambda l: l.startswith("ready "), "workload ready")
        self.pid = self.proc.pid


def python_frames(frames):
    return [(f["symbol"], f["file"], f["line"]) for f in frames if f.get("kind") == "python"]


def expected_malloc_frames():
    lines = marked_lines()
    return [(fn, SCRIPT, lines[fn]) for fn in MALLOC_CALLERS]


def the_allocation(report, pid):
    stacks = process(report, pid)["stacks"]
    expect_eq([(s["bytes"], s["allocations"], s["api"]) for s in stacks],
              [(1 << 20, 1, "cudaMalloc")], "the one allocation")
    return stacks[0]["frames"]


def leaks_by_pid(python, *gs_args):
    w = PyWorkload(python, "malloc")
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json", *gs_args)
    return the_allocation(g.reports()[-1], w.pid)


def leaks_by_command(python):
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", python, SCRIPT, CUDART,
                                    "malloc")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    return the_allocation(report, report["processes"][0]["pid"])


def check_version(version):
    python = interpreter(version)
    want = expected_malloc_frames()
    # innermost first, each with its file and the line of the call it was in
    expect_eq(python_frames(leaks_by_pid(python)), want, f"{version} frames by -p")
    expect_eq(python_frames(leaks_by_command(python)), want, f"{version} frames by -- CMD")


def register_versions():
    for version in ("debian", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13"):
        def run(version=version):
            check_version(version)
        run.__name__ = "leaks_names_python_callers_" + version.replace(".", "_")
        run.__module__ = __name__
        test(run)


register_versions()


@test
def no_python_keeps_native_frames():
    frames = leaks_by_pid(interpreter("3.12"), "--no-python")
    expect_eq(python_frames(frames), [], "Python frames with --no-python")
    assert all(f.get("kind") is None for f in frames), frames


@test
def text_report_names_python_frames():
    python = interpreter("3.11")
    status, out, err = run_gpusnoop("leaks", "--", python, SCRIPT, CUDART, "malloc")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    line = marked_lines()["alloc_weights"]
    assert f"alloc_weights ({SCRIPT}:{line})" in out, out


@test
def gil_released_thread_keeps_python_frames():
    # cudaDeviceSynchronize from a thread: ctypes released the GIL around the call, so
    # the thread's state is detached while the probe reads it; the TSS binding is not
    python = interpreter("3.12")
    trace_path = os.path.join(harness.tempfile.mkdtemp(), "sync.json")
    status, _, err = run_gpusnoop("record", "-e", "cuda-sync", "-o", trace_path, "--", python,
                                  SCRIPT, CUDART, "sync")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    with open(trace_path) as f:
        trace = json.load(f)
    syncs = [e for e in trace["traceEvents"]
             if e["ph"] == "X" and e["name"] == "cudaDeviceSynchronize"]
    expect_eq(len(syncs), 1, "device synchronizations")
    stack = syncs[0]["args"]["stack"]
    lines = marked_lines()
    want = f"wait_for_gpu ({SCRIPT}:{lines['wait_for_gpu']})"
    assert want in stack, stack
    # the thread's own Python frames, up to the threading module's bootstrap
    i = stack.index(want)
    assert stack[i + 1].startswith("Thread.run ("), stack


@test
def cpu_samples_name_the_busy_python_function():
    python = interpreter("3.11")
    trace_path = os.path.join(harness.tempfile.mkdtemp(), "cpu.json.gz")
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "199", "-o", trace_path, "--",
                                  python, SCRIPT, CUDART, "busy",
                                  env={"GS_SPIN_SECONDS": "1"})
    expect_eq(status, 0, f"gpusnoop status ({err})")
    with gzip.open(trace_path, "rt") as f:
        trace = json.load(f)
    samples = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    line = marked_lines()["spin"]
    spinning = [e for e in samples
                if any(s.startswith(f"spin ({SCRIPT}:") for s in e["args"]["stack"])]
    assert len(spinning) > 0, [e["args"]["stack"] for e in samples[:5]]
    # the loop's condition and body share its first line
    at_loop = [e for e in spinning if f"spin ({SCRIPT}:{line})" in e["args"]["stack"]
               or f"spin ({SCRIPT}:{line + 1})" in e["args"]["stack"]]
    assert len(at_loop) >= len(spinning) // 2, [e["args"]["stack"] for e in spinning[:5]]


@test
def system_torch_tensor_names_its_python_function():
    python = "/usr/bin/python3"
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode:
        raise Skip("Debian's python3-torch is not installed")
    w = Workload("gs_torch_cpu", exe=TORCH_CPU_SCRIPT)
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json")
    t = process(g.reports()[-1], w.pid)["torch"]
    expect_eq(len(t["stacks"]), 1, "one stack for the kept tensors")
    py = python_frames(t["stacks"][0]["frames"])
    with open(TORCH_CPU_SCRIPT) as f:
        src = f.read().splitlines()
    line = next(n for n, text in enumerate(src, 1) if "def keep_tensors" in text) + 1
    names = [fn for fn, _, _ in py]
    # 3.11 runs the list comprehension as its own code object, inside keep_tensors
    expect_eq(names[:2], ["keep_tensors.<locals>.<listcomp>", "keep_tensors"], f"frames {py}")
    expect_eq([(file, n) for _, file, n in py[:2]], [(TORCH_CPU_SCRIPT, line)] * 2, "lines")


@test
def dwarf_stacks_merge_python_frames_in_place():
    # with the interpreter's own frames unwound, each evaluation loop gives way to the
    # Python frames it ran, and the native frames around them stay
    python = interpreter("debian")
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--stacks", "dwarf", "--",
                                    python, SCRIPT, CUDART, "malloc")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    frames = the_allocation(report, report["processes"][0]["pid"])
    expect_eq(python_frames(frames), expected_malloc_frames(), "Python frames")
    symbols = [f["symbol"] or "" for f in frames]
    assert not any(s.startswith("_PyEval_EvalFrameDefault") for s in symbols), symbols
    assert not any(f.get("kind") == "marker" for f in frames), symbols
    assert symbols.index("<module>") < symbols.index("Py_BytesMain"), symbols
    assert symbols.index("alloc_weights") > 0, symbols  # ctypes' native frames come first


@test
def unsupported_interpreter_is_logged_once_and_stays_native():
    python = interpreter("3.7")  # pyenv's: older than the layouts gpusnoop knows
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", python, SCRIPT, CUDART,
                                    "malloc")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    said = [l for l in err.splitlines() if "CPython 3.7" in l]
    expect_eq(len(said), 1, f"messages about the interpreter ({err})")
    assert "is not supported: its stacks stay native" in said[0], said
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    frames = the_allocation(report, report["processes"][0]["pid"])
    expect_eq(python_frames(frames), [], "Python frames")
    assert frames, "native frames kept"


def profile_busy(fmt, path):
    python = interpreter("3.12")
    status, _, err = run_gpusnoop("profile", "-F", "199", "--format", fmt, "-o", path, "--",
                                  python, SCRIPT, CUDART, "busy", env={"GS_SPIN_SECONDS": "1"})
    expect_eq(status, 0, f"gpusnoop status ({err})")


@test
def profile_folded_names_python_frames_like_py_spy():
    path = os.path.join(harness.tempfile.mkdtemp(), "p.folded")
    profile_busy("folded", path)
    with open(path) as f:
        lines = f.read().splitlines()
    lines_of = marked_lines()
    want = f"<module> ({SCRIPT}:{lines_of['<module>']});main ({SCRIPT}:{lines_of['main.busy']})"
    spin = f";spin ({SCRIPT}:"
    busy = [l for l in lines if want + spin in l]
    # most samples land in spin(), under main() under the module, outermost first
    total = sum(int(l.rsplit(" ", 1)[1]) for l in lines)
    in_spin = sum(int(l.rsplit(" ", 1)[1]) for l in busy)
    assert in_spin * 2 > total, (in_spin, total, lines[:5])


@test
def profile_pprof_has_python_functions_and_lines():
    import test_profile  # noqa: E402  (its protobuf reader)
    path = os.path.join(harness.tempfile.mkdtemp(), "p.pb.gz")
    profile_busy("pprof", path)
    p = test_profile.read_pprof(path)
    s = p["strings"]
    # one function per (qualified name, file), one line per location
    funcs = {(s[f[2]], s[f.get(4, 0)]): f[1] for f in p["functions"].values()}
    assert ("spin", SCRIPT) in funcs and ("main", SCRIPT) in funcs, sorted(funcs)[:20]
    spin_lines = {line.get(2) for loc in p["locations"].values() for line in loc["lines"]
                  if line[1] == funcs[("spin", SCRIPT)]}
    assert marked_lines()["spin"] in spin_lines, spin_lines
    # in every sample inside spin(), main() is at its call to spin(); a sample may also
    # land in main() elsewhere (its ctypes.CDLL of the runtime, as gpusnoop probes it)
    def lines_of(sample, func):
        return {line.get(2) for loc in sample["loc"] for line in p["locations"][loc]["lines"]
                if line[1] == funcs[func]}

    in_spin = [x for x in p["samples"] if lines_of(x, ("spin", SCRIPT))]
    assert in_spin, p["samples"][:5]
    main_lines = set().union(*(lines_of(x, ("main", SCRIPT)) for x in in_spin))
    expect_eq(main_lines, {marked_lines()["main.busy"]}, "main()'s line: the call to spin()")


@test
def deep_python_stacks_are_kept_whole_below_the_limit():
    # 100 recursive calls: 104 Python frames, under GS_PY_MAX_FRAMES (128): all kept, no cut
    # (test_truncation.py: deeper ones)
    python = interpreter("3.12")
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", python, SCRIPT, CUDART,
                                    "deep")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    expect_eq(report["lost"]["python_stack_truncated"], 0, "truncated Python stacks")
    frames = the_allocation(report, report["processes"][0]["pid"])
    py = python_frames(frames)
    lines = marked_lines()
    expect_eq(py[0], ("alloc_weights", SCRIPT, lines["alloc_weights"]), "innermost frame")
    expect_eq(py[1], ("deep", SCRIPT, lines["deep.bottom"]), "the call that allocated")
    expect_eq(set(py[2:-2]), {("deep", SCRIPT, lines["deep"])}, "the recursion")
    expect_eq(py[-1][0], "<module>", "outermost frame")
    expect_eq(len(py), 104, "Python frames")
    assert not any(f["symbol"].startswith("[truncated") for f in frames if f["symbol"]), frames
