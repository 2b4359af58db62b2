#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_memory_snapshot.py: PyTorch's memory snapshot made from outside (leaks --format
memory-snapshot, record --memory-snapshot, the daemon's OOM report), read back by each tested
PyTorch's own torch.cuda._memory_viz."""
import glob
import os
import pickle
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, FIXTURES, MiB, Gpusnoop, Skip, Workload, expect_eq, run_gpusnoop,
                     test, run_attached)
from test_torch import ACTIVATION, GiB, TORCH_CPU_SCRIPT

VENVS = {  # scripts/setup.sh test installs them
    "2.5.1": os.environ.get("GS_TORCH2_PYTHON", "/var/cache/gpusnoop-tests/venv/bin/python"),
    "2.15.0": os.environ.get("GS_TORCH215_PYTHON",
                             "/var/cache/gpusnoop-tests/venv-torch2.15/bin/python"),
}
VIZ_TIMEOUT = 180  # importing torch on a loaded 2-CPU machine
TORCH_ENV = {"LD_LIBRARY_PATH": os.path.join(FIXTURES, "torch", "lib")}


class NoGlobals(pickle.Unpickler):
    """What a careful reader allows: data only, no class or function by name."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def load(path):
    with open(path, "rb") as f:
        return NoGlobals(f).load()


def venv_python(version):
    python = VENVS[version]
    if not os.access(python, os.X_OK):
        raise Skip(f"{python} missing: `make setup-test` (scripts/setup.sh test) installs "
                   f"torch=={version} there")
    return python


# `python -m torch.cuda._memory_viz CMD ...` for each CMD, in one interpreter: PyTorch is
# imported once (seconds on a loaded machine), each command runs as -m runs it
VIZ_DRIVER = """
import runpy, sys, warnings
warnings.simplefilter("ignore")
path, cmds = sys.argv[1], sys.argv[2:]
for cmd in cmds:
    out = [] if cmd == "stats" else ["-o", f"{path}.{cmd}.html"]
    sys.argv = ["_memory_viz.py", cmd, path] + out
    print(f"== {cmd}", flush=True)
    runpy.run_module("torch.cuda._memory_viz", run_name="__main__", alter_sys=True)
"""


def memory_viz(versions, path, cmds=("stats", "trace_plot", "segment_plot")):
    """torch.cuda._memory_viz's stats, trace_plot and segment_plot of the snapshot with each
    version's interpreter, the versions at once; every one must succeed and say something."""
    procs = []
    for version in versions:
        copy = f"{path}.{version}"
        shutil.copy(path, copy)
        procs.append((version, copy, subprocess.Popen(
            [venv_python(version), "-c", VIZ_DRIVER, copy] + list(cmds),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    for version, copy, p in procs:
        out, err = p.communicate(timeout=VIZ_TIMEOUT)
        expect_eq(p.returncode, 0, f"_memory_viz of {version}: {err.decode(errors='replace')}")
        out = out.decode()
        expect_eq([l[3:] for l in out.splitlines() if l.startswith("== ")], list(cmds),
                  f"_memory_viz commands of {version}")
        if "stats" in cmds:
            assert "segments: " in out, (version, out)
        for cmd in cmds:
            if cmd != "stats":
                with open(f"{copy}.{cmd}.html") as f:
                    html = f.read()
                assert "add_local_files" in html and "snapshot.pickle" in html, (version, cmd)


def tensor_lines(w):
    """gs_torch's "tensor DEV PTR SIZE" lines: {ptr: (dev, requested size)}."""
    out = {}
    for line in w.out.lines:
        if line.startswith("tensor "):
            _, dev, ptr, size = line.split()
            out[int(ptr, 16)] = (dev, int(size))
    return out


def device_names(snap):
    return snap["gpusnoop"]["devices"]


def layout(snap):
    """{(device name, segment address, total size): [(offset, size, state), ...]}"""
    names = device_names(snap)
    return {(names[s["device"]], s["address"], s["total_size"]):
            [(b["address"] - s["address"], b["size"], b["state"]) for b in s["blocks"]]
            for s in snap["segments"]}


def first_frame(frames, suffix):
    """The first frame of the workload's own code: (name, line)."""
    for f in frames:
        if f["filename"].endswith(suffix):
            return f["name"], f["line"]
    raise AssertionError(f"no frame of {suffix}: {frames}")


def check_segments_blocks(snap, tensors, at_oom):
    """gs_torch's segments with its kept tensors in them, exactly, as the snapshot has them."""
    by_ptr = {b["address"]: (b, s) for s in snap["segments"] for b in s["blocks"]}
    names = device_names(snap)
    weights = sorted(p for p, (d, _) in tensors.items() if d == "cuda:0")
    acts = sorted(p for p, (d, _) in tensors.items() if d == "cuda:1")
    cpu = sorted(p for p, (d, _) in tensors.items() if d == "cpu")
    expect_eq((len(weights), len(acts), len(cpu)), (4, 3, 3), "tensor lines")
    kept = weights if at_oom else weights[:2]
    got = layout(snap)
    want = {
        # A: the 4 (then 2) weights packed from its start, the rest cached
        ("cuda:0", weights[0], 20 * MiB):
            [(i * 3 * MiB, 3 * MiB, "active_allocated") for i in range(len(kept))] +
            [(len(kept) * 3 * MiB, (20 - 3 * len(kept)) * MiB, "inactive")],
        # C: the three activations (100000 B -> 100352 B blocks)
        ("cuda:1", acts[0], 2 * MiB):
            [(i * ACTIVATION, ACTIVATION, "active_allocated") for i in range(3)] +
            [(3 * ACTIVATION, 2 * MiB - 3 * ACTIVATION, "inactive")],
    }
    for p in cpu:  # c10::alloc_cpu has no cache: a segment per tensor
        want[("cpu", p, 100000)] = [(0, 100000, "active_allocated")]
    d = [k for k in got if k[0] == "cuda:1" and k[2] == 20 * MiB]
    if at_oom:  # D: scratch's segment, cached until empty_cache
        expect_eq(len(d), 1, "segment D at the OOM")
        want[d[0]] = [(0, 20 * MiB, "inactive")]
    expect_eq(got, want, "segments and blocks")
    for p in weights[:len(kept)] + acts + cpu:
        b, s = by_ptr[p]
        fn = {"cuda:0": "keep_weights()", "cuda:1": "keep_activations()", "cpu": "keep_cpu()"}
        expect_eq(first_frame(b["frames"], "/gs_torch")[0], fn[names[s["device"]]],
                  f"allocating function of {p:#x}")
        expect_eq(b["requested_size"], tensors[p][1], f"requested size of {p:#x}")


def actions(trace):
    return [e["action"] for e in trace]


def snapshots_at_oom_and_end(env):
    """gs_torch under leaks --format memory-snapshot --on-oom: the snapshots of the OOM and of
    the end, each checked against the tensors it reported; (oom, final, tensors, path)."""
    out = os.path.join(tempfile.mkdtemp(), "snap.pickle")
    w = Workload("gs_torch", env=env)
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "memory-snapshot", "-o", out,
                 "--on-oom")
    try:
        g.wait_tracing()
        w.release()
        w.wait_line("oom CUDA out of memory")
        # written at the OOM, while the workload still holds its memory (it waits here)
        g.wait_stderr(f"memory snapshot (trigger) written to {out[:-7]}.1.pickle")
        oom = load(out[:-7] + ".1.pickle")
        w.release()
        w.wait_line("done")
        expect_eq(w.finish(), 0, "workload status")
        g.wait_stderr(f"memory snapshot (exit) written to {out}")
        expect_eq(g.wait(), 0, "gpusnoop status")
    finally:
        g.kill()
        w.kill()
    tensors = tensor_lines(w)
    check_segments_blocks(oom, tensors, at_oom=True)
    final = load(out)
    check_segments_blocks(final, tensors, at_oom=False)
    return oom, final, tensors, out


@test
def memory_snapshot_at_oom_and_end():
    """leaks --format memory-snapshot --on-oom on gs_torch (the stand-in caching allocator):
    the OOM's file has the segments and blocks of that moment and the `oom` entry; the end's
    file the final ones; both load in PyTorch 2.5.1's and 2.15's _memory_viz."""
    oom, final, tensors, out = snapshots_at_oom_and_end(TORCH_ENV)
    expect_eq(device_names(oom), ["cuda:0", "cuda:1", "cpu"], "device_traces' devices")
    t0 = oom["device_traces"][0]
    ooms = [e for e in t0 if e["action"] == "oom"]
    expect_eq([(e["size"], first_frame(e["frames"], "/gs_torch")[0]) for e in ooms],
              [(GiB, "oom_request()")], "the oom entry")
    # cuda:0: segment A, 4 weights, segment B, 10 x (alloc, free) of 1000 B, B given back by
    # the retry, the OOM, this snapshot
    expect_eq(actions(t0), ["segment_alloc"] + ["alloc"] * 4 + ["segment_alloc"] +
              ["alloc", "free_requested", "free_completed"] * 10 +
              ["segment_free", "oom", "snapshot"], "cuda:0 trace at the OOM")
    expect_eq([(e["action"], e["size"]) for e in oom["device_traces"][1]],
              [("segment_alloc", 2 * MiB)] + [("alloc", ACTIVATION)] * 3 +
              [("segment_alloc", 20 * MiB), ("alloc", 5 * MiB), ("free_requested", 5 * MiB),
               ("free_completed", 5 * MiB), ("snapshot", 0)], "cuda:1 trace at the OOM")
    allocs = {e["addr"]: e for e in t0 + oom["device_traces"][1] if e["action"] == "alloc"}
    for p, (dev, size) in tensors.items():
        if dev != "cpu":
            expect_eq(allocs[p]["size"], 3 * MiB if dev == "cuda:0" else ACTIVATION,
                      f"alloc entry of {p:#x}")
    # the end: 2 weights freed, D released by empty_cache, then the process exited
    t1 = final["device_traces"][1]
    assert ("segment_free", 20 * MiB) in [(e["action"], e["size"]) for e in t1], t1
    memory_viz(VENVS, out[:-7] + ".1.pickle")


@test
def memory_snapshot_of_expandable_segments():
    """PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the pages cuMemMap maps are the
    segments, their trace entries segment_map/segment_unmap as PyTorch writes them."""
    oom, _, _, out = snapshots_at_oom_and_end(
        dict(TORCH_ENV, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"))
    t0 = actions(oom["device_traces"][0])
    expect_eq(sorted(set(t0)), ["alloc", "free_completed", "free_requested", "oom",
                                "segment_map", "segment_unmap", "snapshot"], "cuda:0 actions")
    expect_eq(t0.count("segment_map") - t0.count("segment_unmap"), 1,
              "pages still mapped on cuda:0 at the OOM (segment A)")
    memory_viz(["2.15.0"], out[:-7] + ".1.pickle", ("stats", "trace_plot"))


@test
def memory_snapshot_interval_files():
    """-i: numbered files (snap.1.pickle, snap.2.pickle, ...) while the target runs."""
    out = os.path.join(tempfile.mkdtemp(), "snap.pickle")
    w = Workload("gs_torch", env=TORCH_ENV)
    g = Gpusnoop("leaks", "-p", str(w.pid), "-f", "memory-snapshot", "-o", out, "-i", "0.2")
    try:
        g.wait_tracing()
        g.wait_stderr(f"memory snapshot (interval) written to {out[:-7]}.2.pickle")
        expect_eq(g.stop(), 0, "gpusnoop status")
    finally:
        g.kill()
        w.kill()
    files = sorted(glob.glob(out[:-7] + ".*.pickle"))
    assert len(files) >= 2, files
    for f in files + [out]:
        snap = load(f)
        expect_eq((snap["gpusnoop"]["pid"], snap["segments"]), (w.pid, []),
                  f"{f}: nothing allocated yet (held at the start)")


def torch_cpu_snapshot(version):
    """gs_torch_cpu.py under a PyPI PyTorch: its 3 kept tensors, a segment each, allocated by
    keep_tensors() at the torch.empty line."""
    python = venv_python(version)
    out = os.path.join(tempfile.mkdtemp(), "cpu.pickle")
    wrapper = os.path.join(os.path.dirname(out), "gs_torch_cpu.py")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec "{python}" "{TORCH_CPU_SCRIPT}" "$@"\n')
    os.chmod(wrapper, 0o755)
    w = Workload("gs_torch_cpu.py", exe=wrapper)
    g = run_attached(w, "leaks", "-p", str(w.pid), "-f", "memory-snapshot", "-o", out)
    snap = load(out)
    expect_eq(device_names(snap), ["cuda:0", "cpu"], "devices")
    segs = [s for s in snap["segments"] if s["total_size"] == 493828]
    expect_eq([(s["device"], [(b["size"], b["state"]) for b in s["blocks"]]) for s in segs],
              [(1, [(493828, "active_allocated")])] * 3, "the 3 kept tensors")
    with open(TORCH_CPU_SCRIPT) as f:
        line = 1 + [i for i, l in enumerate(f) if "torch.empty(123457" in l][0]
    for s in segs:
        assert {"filename": TORCH_CPU_SCRIPT, "line": line, "name": "keep_tensors"} in \
            s["blocks"][0]["frames"], s["blocks"][0]["frames"]
    # churn's 4 x 1 MiB, made and dropped, in the cpu trace
    trace = [(e["action"], e["size"]) for e in snap["device_traces"][1]]
    expect_eq(trace.count(("alloc", MiB)), 4, "churn's allocations")
    expect_eq(trace.count(("free_completed", MiB)), 4, "churn's frees")
    # (all three viewers read the stand-in's snapshot: memory_snapshot_at_oom_and_end)
    memory_viz([version], out, ("stats",))


@test
def memory_snapshot_torch251_cpu():
    torch_cpu_snapshot("2.5.1")


@test
def memory_snapshot_torch215_cpu():
    torch_cpu_snapshot("2.15.0")


class Lines:
    """Stand-in for a Workload's output when the workload ran under gpusnoop (-- CMD)."""

    def __init__(self, text):
        self.out = type("Out", (), {"lines": text.splitlines()})()


@test
def memory_snapshot_beside_a_recording():
    """record -e torch-mem --memory-snapshot FILE -- gs_torch: the trace, and beside it the
    snapshot of the process's last state, written at its exit."""
    tmp = tempfile.mkdtemp()
    trace, snap = os.path.join(tmp, "t.json"), os.path.join(tmp, "snap.pickle")
    status, out, err = run_gpusnoop("record", "-e", "torch-mem", "-o", trace,
                                    "--memory-snapshot", snap, "--",
                                    os.path.join(BIN, "gs_torch"))
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    assert f"memory snapshot (exit) written to {snap}" in err, err
    assert os.path.getsize(trace) > 0, trace
    final = load(snap)
    check_segments_blocks(final, tensor_lines(Lines(out)), at_oom=False)
    ooms = [e for e in final["device_traces"][0] if e["action"] == "oom"]
    expect_eq([e["size"] for e in ooms], [GiB], "the oom entry")
    status, _, err = run_gpusnoop("record", "-e", "cuda-mem", "-o", trace,
                                  "--memory-snapshot", snap, "--", "true")
    expect_eq(status, 64, "--memory-snapshot without torch-mem: a usage error")
    assert "--memory-snapshot: it needs -e torch-mem" in err, err


@test
def memory_snapshot_in_the_daemons_oom_report():
    """The daemon's report of a PyTorch OOM: KIND-PID-TIME.memory_snapshot.pickle beside its
    JSON, the moment of the OOM with its `oom` entry."""
    from test_daemon import Daemon
    d = Daemon()
    w = None
    try:
        w = Workload("gs_torch", env=TORCH_ENV)
        d.g.wait_stderr(f"{os.path.join(FIXTURES, 'torch', 'lib')}/libc10_cuda.so): CUDA tensors "
                        "from USDT")
        d.wait_probed()
        w.release()
        w.wait_line("oom CUDA out of memory")  # it waits here, holding its memory
        d.g.wait_stderr(f"pid {w.pid} (gs_torch): torch-oom: report")
        files = glob.glob(os.path.join(d.out, f"gpusnoop-torch-oom-{w.pid}-*"))
        snaps = [f for f in files if f.endswith(".memory_snapshot.pickle")]
        expect_eq(len(snaps), 1, "snapshots")
        expect_eq(snaps[0][:-len(".memory_snapshot.pickle")] + ".json" in files, True,
                  "snapshot beside the JSON")
        snap = load(snaps[0])
        check_segments_blocks(snap, tensor_lines(w), at_oom=True)
        expect_eq([e["size"] for e in snap["device_traces"][0] if e["action"] == "oom"],
                  [GiB], "the oom entry")
        w.release()
        w.wait_line("done")
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def memory_snapshot_of_tensors_from_before_the_attach():
    """Attached after gs_torch's OOM: the 2 weights it frees next were allocated before, so
    their frees are the trace's only entries, marked as such, which memory_viz draws as memory
    held since the trace began."""
    out = os.path.join(tempfile.mkdtemp(), "snap.pickle")
    w = Workload("gs_torch", env=TORCH_ENV)
    g = None
    try:
        w.release()
        w.wait_line("oom CUDA out of memory")  # held here
        g = Gpusnoop("leaks", "-p", str(w.pid), "-f", "memory-snapshot", "-o", out)
        g.wait_tracing()
        w.release()
        w.wait_line("done")
        expect_eq(w.finish(), 0, "workload status")
        g.wait_stderr(f"memory snapshot (exit) written to {out}")
        expect_eq(g.wait(), 0, "gpusnoop status")
    finally:
        if g:
            g.kill()
        w.kill()
    weights = sorted(p for p, (d, _) in tensor_lines(w).items() if d == "cuda:0")
    snap = load(out)
    expect_eq(snap["segments"], [], "no segment or tensor seen made")
    marker = [{"filename": "??", "line": 0, "name": "<allocated before gpusnoop attached>"}]
    expect_eq([(e["action"], e["addr"], e["frames"]) for e in snap["device_traces"][0]],
              [(a, p, marker) for p in weights[2:] for a in ("free_requested", "free_completed")]
              + [("snapshot", 0, [])], "the frees of tensors from before the attach")
    memory_viz(["2.5.1"], out, ("stats",))


@test
def memory_snapshot_option_errors():
    """A pickle is binary: never to stdout; --max-entries belongs to the snapshot format."""
    for args, msg in (
            (("-f", "memory-snapshot", "-p", "1"), "give one with -o FILE"),
            (("-f", "memory-snapshot", "-o", "-", "-p", "1"), "give one with -o FILE"),
            (("--max-entries", "10", "-p", "1"),
             "--max-entries: it needs --format memory-snapshot"),
            (("-f", "memory-snapshot", "-o", "x", "--max-entries", "0", "-p", "1"),
             "invalid --max-entries '0'")):
        status, out, err = run_gpusnoop("leaks", *args)
        expect_eq((status, out), (64, ""), f"leaks {args}: a usage error")
        assert msg in err, (args, err)
