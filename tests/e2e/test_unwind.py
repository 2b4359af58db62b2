#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_unwind.py: --stacks dwarf against code without frame pointers, and perf-map JIT frames."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, LIB, ROOT, MiB, LineReader, Skip, Workload, expect_eq, main,
                     process, run_gpusnoop, test, run_attached)

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}
NOFP_CHAIN = ["gs_nofp_inner", "gs_nofp_middle", "gs_nofp_outer", "main"]
NOFP_LIB = os.path.join(LIB, "libgs_nofp.so")
NOFP_EXE = os.path.join(BIN, "gs_nofp")
SNAP = os.path.join(ROOT, ".output", "tests", "gs_ustack_snap")
DEBIAN_PYTHON = "/usr/bin/python3"  # Debian's python3-torch is for Debian's interpreter

# A CPU tensor made in nn.Linear's forward, two nn.Sequential deep; stops once torch is loaded.
TORCH_SCRIPT = """
import os, signal, torch
m = torch.nn.Sequential(torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU()),
                        torch.nn.Linear(1024, 1024))
x = torch.randn(8, 1024)
def step(m, x):
    return m(x).sum()
os.kill(os.getpid(), signal.SIGSTOP)
step(m, x)
"""


def held_report(name, *gs_args, env=None):
    """Runs a held workload to 'done' under `leaks -p`; returns (pid, final report, stderr)."""
    w = Workload(name, env=dict(NO_DRIVER, **(env or {})))
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json", *gs_args)
    reports = g.reports()
    expect_eq([r["report"] for r in reports], ["final"], "reports written")
    return w.pid, reports[0], g.stderr_text()


def only_stack(report, pid, nbytes):
    proc = process(report, pid)
    expect_eq((proc["outstanding_bytes"], proc["outstanding_allocations"]), (nbytes, 1),
              "outstanding")
    expect_eq(len(proc["stacks"]), 1, "stacks")
    return proc["stacks"][0]["frames"]


def symbols(frames):
    return [f["symbol"] for f in frames]


def expect_nofp_chain(frames):
    expect_eq(symbols(frames[:4]), NOFP_CHAIN, f"innermost frames of {frames!r}")
    expect_eq([f["module"] for f in frames[:4]], [NOFP_LIB] * 3 + [NOFP_EXE], "modules")
    # below main, libc's start code and the executable's _start
    expect_eq(frames[-1]["symbol"], "_start", "outermost frame")


@test
def dwarf_unwinds_library_without_frame_pointers():
    pid, report, _ = held_report("gs_nofp", "--stacks", "dwarf")
    expect_nofp_chain(only_stack(report, pid, 3 * MiB))
    expect_eq(report["lost"]["ustack_failed"], 0, "stack slices that could not be read")
    expect_eq(report["dropped_events"], 0, "dropped events")


@test
def frame_pointer_stacks_stop_short_without_them():
    # the same process and call with the default --stacks fp: rbp holds data, not a frame
    pid, report, _ = held_report("gs_nofp")
    frames = only_stack(report, pid, 3 * MiB)
    expect_eq(frames[0]["symbol"], "gs_nofp_inner", "allocating function")
    for name in NOFP_CHAIN[1:]:
        assert name not in symbols(frames), frames
    pid, report, _ = held_report("gs_nofp", "--stacks", "fp")
    assert "gs_nofp_middle" not in symbols(only_stack(report, pid, 3 * MiB))


@test
def dwarf_stacks_in_all_processes_mode():
    # -a sees other processes too (other fixtures): only ours is checked
    w = Workload("gs_nofp", env=NO_DRIVER)
    g = run_attached(w, "leaks", "-a", "--format", "json", "--stacks", "dwarf")
    expect_nofp_chain(only_stack(g.reports()[-1], w.pid, 3 * MiB))


@test
def dwarf_stacks_under_a_pending_return_probe():
    # another tool's uretprobe on gs_nofp_outer (as PyTorch's allocator probes sit around
    # cudaMalloc) puts the [uprobes] trampoline where outer's return address was
    if not shutil.which("bpftrace"):
        raise Skip("bpftrace is not installed")
    bt = subprocess.Popen(["bpftrace", "-e",
                           f'uretprobe:{NOFP_LIB}:gs_nofp_outer {{ printf("outer returned\\n"); }}'],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out = LineReader(bt.stdout)
        out.wait_for(lambda l: l.startswith("Attaching"), "bpftrace attached")
        pid, report, _ = held_report("gs_nofp", "--stacks", "dwarf")
        expect_nofp_chain(only_stack(report, pid, 3 * MiB))
        out.wait_for(lambda l: l == "outer returned", "the return probe fired")
    finally:
        bt.send_signal(signal.SIGINT)
        bt.communicate(timeout=30)


@test
def dwarf_stacks_of_a_command_that_already_exited():
    # the records are read after the process is gone: unwinding uses the kept maps snapshot
    status, out, err = run_gpusnoop("leaks", "--stacks", "dwarf", "--format", "json", "--",
                                    NOFP_EXE, env=NO_DRIVER)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    expect_eq([r["report"] for r in reports], ["exit", "final"], "reports written")
    proc = reports[0]["processes"][0]
    expect_eq(proc["exited"], True, "marked exited")
    expect_nofp_chain(only_stack(reports[0], proc["pid"], 3 * MiB))


def remove_perf_map(pid):
    try:
        os.unlink(f"/tmp/perf-{pid}.map")
    except FileNotFoundError:
        pass


def expect_jit_frames(frames, pid, what):
    expect_eq(symbols(frames[:3]), ["jit_alloc", "gs_jit_trampoline", "main"],
              f"{what}: frames {frames!r}")
    expect_eq(frames[1]["module"], f"/tmp/perf-{pid}.map", "module of the JIT frame")
    # the return address is 6 bytes into the trampoline, after its call
    expect_eq(frames[1]["offset"], 6, "offset in the JIT symbol")


@test
def perf_map_names_jit_code():
    for mode in ("fp", "dwarf"):
        pid = None
        try:
            pid, report, _ = held_report("gs_jit", "--stacks", mode)
            expect_jit_frames(only_stack(report, pid, 5 * MiB), pid, f"--stacks {mode}")
        finally:
            if pid:
                remove_perf_map(pid)


@test
def python_perf_trampolines_unwind_with_dwarf():
    # CPython 3.12+'s -X perf trampolines (GS_JIT_PYTHON: the same code and name) keep no
    # frame pointer and have no CFI; their known layout takes the DWARF stack past them
    python = {"GS_JIT_PYTHON": "1"}
    name = "py::jit_step:/fixtures/gs_jit.py"
    pid = None
    try:
        pid, report, _ = held_report("gs_jit", "--stacks", "dwarf", env=python)
        frames = only_stack(report, pid, 5 * MiB)
        expect_eq(symbols(frames[:3]), ["jit_alloc", name, "main"], f"frames {frames!r}")
        expect_eq(frames[1]["offset"], 6, "return address in the trampoline")
        expect_eq(frames[-1]["symbol"], "_start", "outermost frame")
        remove_perf_map(pid)
        # frame pointers skip the frame above the trampoline (main here)
        pid, report, _ = held_report("gs_jit", "--stacks", "fp", env=python)
        frames = only_stack(report, pid, 5 * MiB)
        expect_eq(symbols(frames[:2]), ["jit_alloc", name], f"frames {frames!r}")
        assert "main" not in symbols(frames), frames
    finally:
        if pid:
            remove_perf_map(pid)


@test
def perf_map_left_by_an_exited_command():
    # the records are read after gs_jit exited; like Python's -X perf it left its perf map
    status, out, err = run_gpusnoop("leaks", "--stacks", "dwarf", "--format", "json", "--",
                                    os.path.join(BIN, "gs_jit"), env=NO_DRIVER)
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    pid = reports[0]["processes"][0]["pid"] if reports and reports[0]["processes"] else None
    try:
        expect_eq(status, 0, f"gpusnoop status ({err})")
        expect_eq([r["report"] for r in reports], ["exit", "final"], "reports written")
        expect_jit_frames(only_stack(reports[0], pid, 5 * MiB), pid, "exited")
    finally:
        if pid:
            remove_perf_map(pid)


@test
def record_draws_dwarf_stacks():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json")
    status, out, err = run_gpusnoop("record", "-e", "cuda-mem", "--stacks", "dwarf", "-o", path,
                                    "--", NOFP_EXE, env=NO_DRIVER)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    with open(path) as f:
        trace = json.load(f)
    mallocs = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == "cudaMalloc"]
    expect_eq(len(mallocs), 1, "cudaMalloc slices")
    stack = mallocs[0]["args"]["stack"]
    expect_eq([s.split("+")[0] for s in stack[:4]], NOFP_CHAIN, f"stack {stack!r}")
    expect_eq(trace["metadata"]["lost"]["ustack_failed"], 0, "unreadable stack slices")


@test
def dwarf_unwinds_debian_libtorch_to_python():
    # no probe of ours exists in libc10 (that is the torch allocator events' job): the test
    # breaks at c10::alloc_cpu with ptrace and unwinds what a uprobe there would capture
    if subprocess.run([DEBIAN_PYTHON, "-c", "import torch"], capture_output=True).returncode:
        raise Skip("Debian's python3-torch is not installed")
    out = subprocess.run([SNAP, "libc10.so", "_ZN3c109alloc_cpuEm", str(32 * 1024), "--",
                          DEBIAN_PYTHON, "-c", TORCH_SCRIPT],
                         capture_output=True, timeout=120)
    expect_eq(out.returncode, 0, f"gs_ustack_snap ({out.stderr.decode()})")
    slices = [json.loads(l) for l in out.stdout.decode().splitlines()]
    frames = slices[-1]["frames"]  # the whole captured slice, as BPF would send it
    names = [f["symbol"] or "" for f in frames]
    modules = [os.path.basename(f["module"] or "") for f in frames]
    expect_eq(names[0], "c10::alloc_cpu(unsigned long)", f"probed function in {names!r}")
    assert modules[0].startswith("libc10.so"), modules
    for want in ("at::detail::empty_cpu(", "at::native::linear(", "at::_ops::linear::call(",
                 "_PyEval_EvalFrameDefault"):
        assert any(n.startswith(want) for n in names), (want, names)
    assert any(m.startswith("libtorch_python.so") for m in modules), modules
    # one Python-level call per module: step, Sequential, Sequential, Linear
    assert names.count("_PyEval_EvalFrameDefault") >= 4, names
    expect_eq(names[-1], "_start", f"outermost frame of {names!r}")
    # a shorter slice ends the stack early, never with other frames
    for s in slices[:-1]:
        got = [f["address"] for f in s["frames"]]
        expect_eq(got, [f["address"] for f in frames[:len(got)]], f"{s['slice']}-byte slice")


@test
def bad_stacks_option_is_one_clear_error():
    status, out, err = run_gpusnoop("leaks", "--stacks", "lbr", "--", NOFP_EXE)
    assert status != 0, (status, err)
    assert "unknown --stacks 'lbr' (fp, dwarf or none)" in err, err
    expect_eq(out, "", "stdout")


if __name__ == "__main__":
    sys.exit(main())
