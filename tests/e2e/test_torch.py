#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_torch.py: PyTorch tensor memory, segments and OOMs, on the fixture pair and real torch."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, FIXTURES, LIB, MiB, Gpusnoop, LineReader, Skip, Workload, expect_eq,
                     process, run_gpusnoop, test, run_attached)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TORCH_CPU_SCRIPT = os.path.join(ROOT, "tests", "fixtures", "workloads", "gs_torch_cpu.py")
GiB = 1024 * MiB

# gs_torch's pattern (tests/fixtures/workloads/gs_torch.cc); blocks are rounded to 512 bytes
ACTIVATION = 100352  # 100000 requested
OOM_DEVICES = {  # at the OOM: 4 weights; segment B released by the retry
    "cuda:0": {"allocated_bytes": 12 * MiB, "reserved_bytes": 20 * MiB, "tensors": 4,
               "segments": 1, "largest_free_segment": 0},
    "cuda:1": {"allocated_bytes": 3 * ACTIVATION, "reserved_bytes": 22 * MiB, "tensors": 3,
               "segments": 2, "largest_free_segment": 20 * MiB},
    "cpu": {"allocated_bytes": 300000, "tensors": 3},
}
FINAL_DEVICES = {  # 2 weights freed; empty_cache released segment D
    "cuda:0": {"allocated_bytes": 6 * MiB, "reserved_bytes": 20 * MiB, "tensors": 2,
               "segments": 1, "largest_free_segment": 0},
    "cuda:1": {"allocated_bytes": 3 * ACTIVATION, "reserved_bytes": 2 * MiB, "tensors": 3,
               "segments": 1, "largest_free_segment": 0},
    "cpu": {"allocated_bytes": 300000, "tensors": 3},
}


def devices(torch):
    keys = ("allocated_bytes", "reserved_bytes", "tensors", "segments", "largest_free_segment")
    return {d["device"]: {k: d[k] for k in keys if k in d} for d in torch["devices"]}


def first_workload_frame(frames, module_suffix):
    """The innermost frame in the workload itself: the allocating function."""
    for f in frames:
        if f["module"] and f["module"].endswith(module_suffix):
            return f["symbol"]
    return None


def tensors_by_function(torch, module_suffix="/gs_torch"):
    out = {}
    for s in torch["stacks"]:
        fn = first_workload_frame(s["frames"], module_suffix)
        t = out.setdefault((fn, s["device"]), [0, 0])
        t[0] += s["bytes"]
        t[1] += s["allocations"]
    return {k: tuple(v) for k, v in out.items()}


def memory_lines(w):
    """The allocator's own counters, "memory DEV ALLOC RESERVED": {cuda:N: (alloc, reserved)}."""
    out = []
    for line in w.out.lines:
        if line.startswith("memory "):
            _, dev, a, r = line.split()
            out.append((f"cuda:{dev}", int(a), int(r)))
    return out


def run_variant(variant, extra_env=None, gs_args=()):
    """gs_torch under leaks --on-oom with one library variant; returns (oom, final, w, g)."""
    env = {"LD_LIBRARY_PATH": os.path.join(FIXTURES, variant, "lib")}
    env.update(extra_env or {})
    w = Workload("gs_torch", env=env)
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json", "--on-oom", *gs_args)
    out = LineReader(g.proc.stdout)
    try:
        g.wait_tracing()
        w.release()
        w.wait_line("oom CUDA out of memory")
        # written at the OOM, while the workload still holds its memory (it waits here)
        oom_line = out.wait_for(lambda l: l.startswith('{"report":"trigger"'), "the OOM report")
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(), 0, "gpusnoop status")
        lines = out.lines + g.stdout.decode().splitlines()
        reports = [json.loads(l) for l in lines if l.strip()]
        expect_eq([r["report"] for r in reports], ["trigger", "final"], "reports written")
        expect_eq(reports[0], json.loads(oom_line), "the OOM report")
        return reports[0], reports[1], w, g
    finally:
        g.kill()
        w.finish()


def check_variant(variant, source, oom_source, requested, extra_env=None):
    oom, final, w, g = run_variant(variant, extra_env)
    assert f"CUDA tensors from {source[1]}" in g.stderr_text(), g.stderr_text()
    # what the allocator said at the same moments: memory lines after the OOM, and at the end
    mem = memory_lines(w)
    expect_eq(len(mem), 6, "memory lines")
    for report, expect, lines in ((oom, OOM_DEVICES, mem[2:4]), (final, FINAL_DEVICES, mem[4:])):
        proc = process(report, w.pid)
        t = proc["torch"]
        expect_eq(devices(t), expect, f"devices ({report['report']} report)")
        for dev, alloc, reserved in lines:
            d = devices(t)[dev]
            expect_eq((d["allocated_bytes"], d["reserved_bytes"]), (alloc, reserved),
                      f"{dev} vs torch.cuda.memory_allocated/reserved ({report['report']})")
        expect_eq((t["source"], t["version"]), (source[0], "2.4.0+gs." + variant), "source")
        # the two 1 GiB cudaMalloc's that failed (expandable segments fail in cuMemCreate)
        failed = 0 if extra_env else 2
        expect_eq((t["unknown_frees"], t["failed_segments"], t["ooms"]), (0, failed, 1), "counts")
        # segments are PyTorch's reserved memory, not raw CUDA allocations
        expect_eq((proc["outstanding_bytes"], proc["failed_allocations"]), (0, 0), "raw CUDA")
    expect_eq(tensors_by_function(process(oom, w.pid)["torch"]), {
        ("keep_weights()", "cuda:0"): (12 * MiB, 4),
        ("keep_activations()", "cuda:1"): (3 * ACTIVATION, 3),
        ("keep_cpu()", "cpu"): (300000, 3),
    }, "tensors by allocating function at the OOM")
    expect_eq(tensors_by_function(process(final, w.pid)["torch"]), {
        ("keep_weights()", "cuda:0"): (6 * MiB, 2),
        ("keep_activations()", "cuda:1"): (3 * ACTIVATION, 3),
        ("keep_cpu()", "cpu"): (300000, 3),
    }, "tensors by allocating function at the end")
    o = oom["trigger"]
    expect_eq((o["kind"], o["pid"], o["source"], o["bytes_requested"], o["device"]),
              ("torch-oom", w.pid, oom_source, requested, "cuda:0"), "the OOM")
    expect_eq(first_workload_frame(o["frames"], "/gs_torch"), "oom_request()", "OOM stack")
    if oom_source == "reportOutOfMemoryToProfiler":
        expect_eq((o["pytorch_allocated_bytes"], o["pytorch_reserved_bytes"]),
                  (12 * MiB, 20 * MiB), "what PyTorch told its profiler hook")
        expect_eq(o["frames"][0]["symbol"].split("(")[0],
                  "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc",
                  "the hook's caller")


@test
def torch_usdt_source():
    check_variant("torch", ("usdt", "USDT pytorch:malloc/pytorch:free"),
                  "reportOutOfMemoryToProfiler", GiB)


@test
def torch_profiler_hook_source():
    check_variant("torch-nosdt", ("report", "c10::reportMemoryUsageToProfiler"),
                  "reportOutOfMemoryToProfiler", GiB)


@test
def torch_allocator_symbols_source():
    # no hooks in this libc10: the OOM is the c10::OutOfMemoryError throw, and the size the
    # allocator's malloc was asked for (its entry probe is still pending at the throw)
    check_variant("torch-symbols", ("symbols", "the caching allocator's malloc/free (.symtab)"),
                  "OutOfMemoryError", GiB)


@test
def torch_expandable_segments():
    # segments are pages mapped with cuMemMap (2 MiB small pool, 20 MiB large), no cudaMalloc
    check_variant("torch", ("usdt", "USDT pytorch:malloc/pytorch:free"),
                  "reportOutOfMemoryToProfiler", GiB,
                  {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})


@test
def torch_segments_are_raw_cuda_with_no_torch():
    # --no-torch: the caching allocator's cudaMalloc/cudaFree are all one sees: segments
    w = Workload("gs_torch")
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json", "--no-torch")
    try:
        g.wait_tracing()
        w.release()
        w.wait_line("oom CUDA out of memory")
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(), 0, "gpusnoop status")
        proc = process(g.reports()[-1], w.pid)
    finally:
        g.kill()
        w.finish()
    assert "torch" not in proc, proc
    segs = sorted((s["bytes"], s["allocations"], s["api"]) for s in proc["stacks"])
    # A (20 MiB, cuda:0) and C (2 MiB, cuda:1) stay; B and D were given back
    expect_eq(segs, [(2 * MiB, 1, "cudaMalloc"), (20 * MiB, 1, "cudaMalloc")], "segments")
    for s in proc["stacks"]:
        assert s["frames"][0]["module"].endswith("/torch/lib/libc10_cuda.so"), s["frames"][0]
    f = proc["failures"]
    # the first try and the retry after freeing the cache: two call sites, two stacks
    expect_eq([(x["api"], x["error"], x["count"], x["bytes_requested"]) for x in f],
              [("cudaMalloc", 2, 1, GiB)] * 2, "the two 1 GiB segment requests that failed")
    expect_eq((proc["unknown_frees"], proc["failed_frees"]), (0, 0), "frees")


@test
def raw_cuda_oom_report():
    w = Workload("gs_oom", env={"GS_FAKE_CUDA_MEM_LIMIT": str(200 * MiB)})
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json", "--on-oom")
    reports = g.reports()
    expect_eq([r["report"] for r in reports], ["trigger", "final"], "reports written")
    o = reports[0]["trigger"]
    expect_eq((o["kind"], o["pid"], o["api"], o["error"], o["error_name"], o["bytes_requested"]),
              ("cuda-oom", w.pid, "cudaMalloc", 2, "cudaErrorMemoryAllocation", GiB), "the OOM")
    expect_eq(o["frames"][0]["symbol"], "oom_request", "the failing call's stack")
    proc = process(reports[0], w.pid)
    expect_eq((proc["outstanding_bytes"], proc["outstanding_allocations"]), (96 * MiB, 3),
              "what the process held at the OOM")


@test
def torch_record_counter_tracks():
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        status, out, err = run_gpusnoop("record", "-e", "torch-mem", "-o", path, "--",
                                        os.path.join(BIN, "gs_torch"))
        expect_eq(status, 0, f"gpusnoop status ({err})")
        with open(path) as f:
            trace = json.load(f)
    ev = trace["traceEvents"]
    pid = next(e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name")
    last, peak = {}, {}
    for e in ev:
        if e["ph"] == "C":
            expect_eq(e["pid"], pid, "counter pid")
            last[e["name"]] = e["args"]["bytes"]
            peak[e["name"]] = max(peak.get(e["name"], 0), e["args"]["bytes"])
    expect_eq(last, {
        "PyTorch cuda:0 allocated": 6 * MiB, "PyTorch cuda:0 reserved": 20 * MiB,
        "PyTorch cuda:1 allocated": 3 * ACTIVATION, "PyTorch cuda:1 reserved": 2 * MiB,
        "PyTorch cpu allocated": 300000,
    }, "counter tracks at the end")
    expect_eq((peak["PyTorch cuda:0 reserved"], peak["PyTorch cuda:1 reserved"]),
              (22 * MiB, 22 * MiB), "reserved peaks (before the OOM retry and empty_cache)")
    ooms = [e for e in ev if e["ph"] == "i"]
    expect_eq([(e["name"], e["args"]["requested"], e["args"]["device"]) for e in ooms],
              [("PyTorch out of memory", GiB, "cuda:0")], "OOM instant events")
    # -e torch-mem alone draws no CUDA call slices
    expect_eq([e for e in ev if e["ph"] == "X"], [], "slices")


@test
def torch_record_segments_are_not_cuda_memory():
    """With cuda-mem and torch-mem, a segment is PyTorch's reserved memory, as in leaks."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.json")
        status, out, err = run_gpusnoop("record", "-e", "cuda-mem,torch-mem", "-o", path, "--",
                                        os.path.join(BIN, "gs_torch"))
        expect_eq(status, 0, f"gpusnoop status ({err})")
        with open(path) as f:
            ev = json.load(f)["traceEvents"]
    calls = [e for e in ev if e["ph"] == "X" and e["name"] == "cudaMalloc"]
    # A, B, C, D, then the 1 GiB request and its retry, both failing
    expect_eq(len(calls), 6, "the caching allocator's cudaMalloc calls, as slices")
    # gs_torch makes no raw CUDA allocation: its process has no CUDA memory track at all
    expect_eq([e["args"] for e in ev if e["ph"] == "C" and e["name"] == "CUDA memory"], [],
              "CUDA memory counter")
    last = {e["name"]: e["args"]["bytes"] for e in ev if e["ph"] == "C"}
    expect_eq((last["PyTorch cuda:0 reserved"], last["PyTorch cuda:1 reserved"]),
              (20 * MiB, 2 * MiB), "reserved at the end")


def have_system_torch():
    try:
        subprocess.run(["/usr/bin/python3", "-c", "import torch"], check=True, timeout=60,
                       capture_output=True)
    except (OSError, subprocess.SubprocessError):
        raise Skip("Debian's python3-torch is not installed (apt-get install python3-torch)")


def run_system_torch(*gs_args):
    have_system_torch()
    return leaks_of_cpu_tensors(Workload("gs_torch_cpu", exe=TORCH_CPU_SCRIPT), *gs_args)[0]


def leaks_of_cpu_tensors(w, *gs_args):
    """`leaks -p` of a held gs_torch_cpu.py (w, under any PyTorch), released and run to its
    "done": its 3 kept tensors, exactly. The report's torch part and gpusnoop's stderr."""
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json", *gs_args)
    proc = process(g.reports()[-1], w.pid)
    assert "CPU tensors from c10::alloc_cpu/free_cpu" in g.stderr_text(), g.stderr_text()
    t = proc["torch"]
    # alloc_cpu gets exactly numel * itemsize (posix_memalign aligns, it does not pad)
    expect_eq(devices(t), {"cpu": {"allocated_bytes": 3 * 493828, "tensors": 3}}, "devices")
    expect_eq((t["tensor_bytes"], t["tensor_allocations"], t["unknown_frees"]),
              (3 * 493828, 3, 0), "kept tensors; churn's 4 MiB all freed")
    expect_eq(sorted((s["bytes"], s["allocations"]) for s in t["stacks"]), [(3 * 493828, 3)],
              "one stack")
    return t["stacks"][0]["frames"], t, g.stderr_text()


@test
def system_torch_cpu_tensors():
    frames = run_system_torch()
    # frame pointers: Debian's libc10 has none, the stack stops early but reaches libtorch
    assert any((f["symbol"] or "").startswith("at::detail::empty_cpu") for f in frames), frames


@test
def system_torch_dwarf_stacks():
    frames = run_system_torch("--stacks", "dwarf")
    symbols = [f["symbol"] or "" for f in frames]
    # past c10::alloc_cpu's caller into libtorch's dispatcher, and on into the Python function
    # that made the tensor, named where the interpreter's eval loop was (test_python.py)
    assert frames[0]["module"].split("/")[-1].startswith("libc10.so"), frames[0]
    for want in ("at::detail::empty_generic(", "at::detail::empty_cpu(",
                 "at::_ops::empty_memory_format::call(", "keep_tensors"):
        assert any(s.startswith(want) for s in symbols), (want, symbols)
    assert any((f["module"] or "").split("/")[-1].startswith("libtorch_python.so")
               for f in frames), frames


@test
def torch_all_processes_text_report():
    # -a: found when it starts; other processes on the host may appear too, so read ours only
    g = Gpusnoop("leaks", "-a")
    w = None
    try:
        g.wait_tracing()
        w = Workload("gs_torch")
        g.wait_stderr("all processes: PyTorch 2.4.0+gs.torch (" +
                      os.path.join(FIXTURES, "torch", "lib", "libc10_cuda.so") +
                      "): CUDA tensors from USDT pytorch:malloc/pytorch:free")
        # the CUDA libraries' probes are logged apart, in either order: the segments come
        # from cudaMalloc (runtime) over cuMemAlloc (driver)
        for lib in ("libcudart.so.13", "libcuda.so.1"):
            g.wait_stderr("CUDA functions in " + os.path.join(LIB, lib))
        w.release()
        w.wait_line("oom CUDA out of memory")
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(), 0, "gpusnoop status")
    finally:
        g.kill()
        if w:
            w.finish()
    lines = g.stdout.decode().splitlines()
    start = lines.index(f"pid {w.pid} (gs_torch): 0 B outstanding in 0 allocations")
    ours = []
    for line in lines[start + 1:]:
        if line.startswith("pid ") or not line:
            break
        ours.append(line)
    for want in ("  PyTorch 2.4.0+gs.torch: 6.6 MiB in 8 tensors (CUDA tensors from usdt)",
                 "    cpu     allocated 293.0 KiB",
                 "    cuda:0  allocated 6.0 MiB, reserved 20.0 MiB (cached 14.0 MiB)",
                 "    cuda:1  allocated 294.0 KiB, reserved 2.0 MiB (cached 1.7 MiB)",
                 "         BYTES  TENSORS    OLDEST  DEVICE"):
        assert want in ours, (want, ours)
    assert any(l.startswith("       6.0 MiB        2 ") and l.endswith("  cuda:0") for l in ours), ours
    assert any("keep_weights()+0x" in l for l in ours), ours
