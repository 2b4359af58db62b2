#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_memory_kinds.py: memory a report must not miss: pinned host memory apart from device
memory, VMM mappings made through driver entry points, and torch-mem recordings counted."""
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, FIXTURES, LIB, ROOT, MiB, Skip, Workload, expect_eq, main,
                     process, run_gpusnoop, stacks_by_function, test, run_attached)
from test_record import expect_valid_trace, load_trace, slices
from test_daemon import Daemon, metric
from test_torch import tensors_by_function

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}
GPU_TEST_DIR = os.path.join(ROOT, "tests", "gpu")
SHM_SCRIPT = os.path.join(ROOT, "tests", "fixtures", "workloads", "gs_torch_shm.py")
# PyTorch from PyPI: 2.5.1 (scripts/setup.sh test) and 2.15, whose pinned memory and shared
# memory paths this module is about
TORCH_VENVS = {
    "2.5": os.environ.get("GS_TORCH2_PYTHON", "/var/cache/gpusnoop-tests/venv/bin/python"),
    "2.15": os.environ.get("GS_TORCH215_PYTHON",
                           "/var/cache/gpusnoop-tests/venv-torch2.15/bin/python"),
}

# gs_pinned: 4 MiB cudaMallocHost, 2 MiB cudaHostAlloc, 3 MiB cudaHostRegister kept; 1 MiB
# registered and unregistered; 8 MiB cudaMalloc kept; one unregister of memory not pinned
PINNED = {
    "pin_malloc_host": ("cudaMallocHost", 4 * MiB, 1, "host"),
    "pin_host_alloc": ("cudaHostAlloc", 2 * MiB, 1, "host"),
    "pin_register": ("cudaHostRegister", 3 * MiB, 1, "host"),
    "device_weights": ("cudaMalloc", 8 * MiB, 1, "device"),
}


def attach(name, gs_args=(), env=None):
    """Held workload, `leaks -p`, run to 'done'; returns (workload, final report, gpusnoop)."""
    w = Workload(name, env=env)
    g = run_attached(w, "leaks", "-p", str(w.pid), *gs_args)
    return w, g


def by_function(proc):
    return {fn: (s["api"], s["bytes"], s["allocations"], s["memory"])
            for fn, s in stacks_by_function(proc).items()}


@test
def pinned_host_memory_apart_from_device():
    w, g = attach("gs_pinned", ("--format", "json"), env=NO_DRIVER)
    reports = g.reports()
    expect_eq([r["report"] for r in reports], ["final"], "reports written")
    proc = process(reports[0], w.pid)
    expect_eq(by_function(proc), PINNED, "outstanding allocations (pin_and_unpin gave its back)")
    expect_eq((proc["outstanding_bytes"], proc["outstanding_allocations"]), (17 * MiB, 4),
              "outstanding, all kinds")
    expect_eq((proc["device_bytes"], proc["pinned_host_bytes"],
               proc["pinned_host_allocations"]), (8 * MiB, 9 * MiB, 3),
              "device memory, pinned host memory")
    # bad_unregister: a pointer not pinned (any more) is an unknown free, and its call fails
    expect_eq((proc["unknown_frees"], proc["failed_frees"]), (1, 1), "bad_unregister")


@test
def pinned_host_memory_in_the_text_report():
    status, out, err = run_gpusnoop("leaks", "--", os.path.join(BIN, "gs_pinned"),
                                    env=NO_DRIVER)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    heads = [l for l in out.splitlines() if l.startswith("pid ")]
    expect_eq(len(heads), 2, f"exit and final reports:\n{out}")
    for h in heads:
        assert h.endswith("17.0 MiB outstanding in 4 allocations (device 8.0 MiB, pinned host "
                          "9.0 MiB), 1 failed free"), h


@test
def pinned_host_memory_in_a_recording():
    path = os.path.join(tempfile.mkdtemp(), "t.json")
    status, _, err = run_gpusnoop("record", "-e", "cuda-mem", "-o", path, "--",
                                  os.path.join(BIN, "gs_pinned"), env=NO_DRIVER)
    expect_eq(status, 0, f"record status ({err})")
    trace = load_trace(path)
    pid = next(e["pid"] for e in trace["traceEvents"] if e["ph"] == "X")
    expect_valid_trace(trace, pid)
    reg = slices(trace, pid, "cudaHostRegister")
    expect_eq(sorted(e["args"]["bytes"] for e in reg), [1 * MiB, 3 * MiB], "registrations")
    unreg = slices(trace, pid, "cudaHostUnregister")
    expect_eq(sorted(e["args"].get("error", 0) for e in unreg), [0, 713], "unregistrations")
    counters = {}
    for e in trace["traceEvents"]:
        if e["ph"] == "C" and e["pid"] == pid:
            counters.setdefault(e["name"], []).append(e["args"]["bytes"])
    # pinned: 4, 6, 9, 10, back to 9 MiB; device: 8 MiB
    expect_eq(counters["CUDA pinned host memory"][-1], 9 * MiB, "pinned host memory at the end")
    expect_eq(max(counters["CUDA pinned host memory"]), 10 * MiB, "pinned host memory at most")
    expect_eq(counters["CUDA memory"][-1], 8 * MiB, "device memory at the end")
    expect_eq(max(counters["CUDA memory"]), 8 * MiB, "device memory never counts pinned")
    events = [e for e in trace["traceEvents"] if e["ph"] != "M"]
    expect_eq(trace["metadata"]["events"], len(events), "metadata.events: slices and counters")


@test
def pinned_host_memory_in_the_daemons_oom_report_and_metrics():
    d = Daemon()
    w = None
    try:
        w = Workload("gs_pinned", env=dict(NO_DRIVER, GS_PINNED_OOM="1",
                                           GS_FAKE_CUDA_MEM_LIMIT=str(256 * MiB)))
        d.wait_probed()  # a runtime mapped by a process: probed by file, for every process
        w.release()
        w.wait_line("done")
        deadline = time.monotonic() + 10
        while not d.reports("cuda-oom-*.json") and time.monotonic() < deadline:
            time.sleep(0.1)
        files = d.reports("cuda-oom-*.json")
        expect_eq(len(files), 1, "OOM reports")
        with open(files[0]) as f:
            p = json.load(f)["processes"][0]
        expect_eq((p["pid"], p["outstanding_bytes"], p["device_bytes"], p["pinned_host_bytes"],
                   p["pinned_host_allocations"]), (w.pid, 17 * MiB, 8 * MiB, 9 * MiB, 3),
                  "what the process held at the OOM")
        with open(files[0][:-5] + ".txt") as f:
            text = f.read()
        assert "(device 8.0 MiB, pinned host 9.0 MiB)" in text, text
        with open(files[0][:-5] + ".trace.json") as f:
            trace = json.load(f)
        counters = {}
        for e in trace["traceEvents"]:
            if e["ph"] == "C":
                counters.setdefault(e["name"], []).append(e["args"]["bytes"])
        # the timeline engine's tracks, as in record's trace of the same workload
        expect_eq((counters["CUDA memory"][-1], max(counters["CUDA memory"])),
                  (8 * MiB, 8 * MiB), "the flight trace's CUDA memory: device memory only")
        expect_eq((counters["CUDA pinned host memory"][-1],
                   max(counters["CUDA pinned host memory"])), (9 * MiB, 10 * MiB),
                  "the flight trace's pinned host memory, a track of its own")
        deadline = time.monotonic() + 3
        m = d.metrics()
        while f'pid="{w.pid}"' not in m and time.monotonic() < deadline:
            time.sleep(0.1)
            m = d.metrics()
        expect_eq((metric(m, "gpusnoop_cuda_outstanding_bytes", w.pid),
                   metric(m, "gpusnoop_cuda_pinned_host_bytes", w.pid)), (17 * MiB, 9 * MiB),
                  "outstanding and pinned host bytes metrics")
    finally:
        if w:
            w.finish()
        d.stop()


# gs_vmm: cuMemCreate + cuMemMap through pointers from cudaGetDriverEntryPoint(ByVersion):
# three 2 MiB pages kept by map_weights (through map_page), one 20 MiB page mapped and unmapped;
# then 1 MiB pinned with cuMemHostRegister, got the same way
@test
def vmm_mappings_through_entry_points():
    w, g = attach("gs_vmm", ("--format", "json"))
    proc = process(g.reports()[-1], w.pid)
    expect_eq(by_function(proc), {"map_page": ("cuMemMap", 6 * MiB, 3, "device"),
                                   "pin_staging": ("cuMemHostRegister_v2", 1 * MiB, 1, "host")},
              "mapped device memory; host memory pinned through the driver")
    frames = [f["symbol"] for f in proc["stacks"][0]["frames"][:3]]
    expect_eq(frames, ["map_page", "map_weights", "main"], "the mapping's stack")
    expect_eq((proc["outstanding_bytes"], proc["device_bytes"], proc["pinned_host_bytes"],
               proc["unknown_frees"]), (7 * MiB, 6 * MiB, 1 * MiB, 0),
              "outstanding; map_scratch's page given back")


@test
def vmm_mappings_in_a_recording():
    path = os.path.join(tempfile.mkdtemp(), "t.json")
    status, _, err = run_gpusnoop("record", "-e", "cuda-mem", "-o", path, "--",
                                  os.path.join(BIN, "gs_vmm"))
    expect_eq(status, 0, f"record status ({err})")
    trace = load_trace(path)
    maps = slices(trace, None, "cuMemMap")
    expect_eq(sorted(e["args"]["bytes"] for e in maps), [2 * MiB] * 3 + [20 * MiB], "maps")
    expect_eq(len(slices(trace, None, "cuMemUnmap")), 1, "unmaps")
    mem = [e["args"]["bytes"] for e in trace["traceEvents"]
           if e["ph"] == "C" and e["name"] == "CUDA memory"]
    # the last sample comes with pin_staging's: pinned host memory has a track of its own
    expect_eq(mem, [2 * MiB, 4 * MiB, 6 * MiB, 26 * MiB, 6 * MiB, 6 * MiB], "CUDA memory counter")
    pinned = [e["args"]["bytes"] for e in trace["traceEvents"]
              if e["ph"] == "C" and e["name"] == "CUDA pinned host memory"]
    expect_eq(pinned, [1 * MiB], "CUDA pinned host memory counter")
    expect_eq([e["args"]["bytes"] for e in slices(trace, None, "cuMemHostRegister_v2")],
              [1 * MiB], "the driver's registration")


@test
def gpu_check_vmm_step_on_the_stand_in():
    """gpu-test's step 4 (tests/gpu/vmm.py under leaks), with the stand-in runtime in place of
    PyTorch's: what it runs on a GPU machine, checked here end to end."""
    sys.path.insert(0, GPU_TEST_DIR)
    import gpu_test
    out = tempfile.mkdtemp()
    v = gpu_test.vmm(sys.executable, out, cudart=os.path.join(LIB, "libcudart.so.13"))
    expect_eq(v["problems"], [], "problems")
    expect_eq(v["row"], {"kept_bytes": 6 * MiB, "kept_mappings": 3, "seen": [6 * MiB, 3]},
              "mappings kept and seen")
    expect_eq(gpu_test.vmm_lines(v)[-1],
              "  vmm.py kept 6291456 bytes in 3 cuMemMap mappings; leaks 6291456 bytes in 3",
              "summary line")


@test
def torch_tensor_placed_at_an_address():
    """PyTorch 2.15's allocateWithAddress calls DeviceCachingAllocator::mallocWithAddress, not
    malloc: seen by each tensor source, the allocator's symbols (no USDT build) included."""
    for variant, source in (("torch-symbols", "symbols"), ("torch", "usdt"),
                            ("torch-nosdt", "report")):
        env = {"LD_LIBRARY_PATH": os.path.join(FIXTURES, variant, "lib")}
        status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                        os.path.join(BIN, "gs_torch_addr"), env=env)
        expect_eq(status, 0, f"{variant}: gpusnoop status ({err})")
        reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        expect_eq([r["report"] for r in reports], ["exit", "final"], f"{variant}: reports")
        t = reports[0]["processes"][0]["torch"]
        expect_eq(t["source"], source, f"{variant}: tensor source")
        expect_eq(tensors_by_function(t, "/gs_torch_addr"),
                  {("place_tensor()", "cuda:1"): (3 * MiB, 1)},
                  f"{variant}: tensors (make_room's was freed)")
        expect_eq([(d["device"], d["allocated_bytes"], d["tensors"], d["reserved_bytes"])
                   for d in t["devices"]], [("cuda:1", 3 * MiB, 1, 20 * MiB)],
                  f"{variant}: devices")
        expect_eq(t["unknown_frees"], 0, f"{variant}: unknown frees")


class VenvScript(Workload):
    """A fixture script of sync.h's protocol under a venv's interpreter (same pid: exec)."""

    def __init__(self, python, script, *args):
        if not os.access(python, os.X_OK):
            raise Skip(f"{python} missing: scripts/setup.sh test installs it")
        wrapper = os.path.join(tempfile.mkdtemp(), os.path.basename(script))
        with open(wrapper, "w") as f:
            f.write(f'#!/bin/sh\nexec "{python}" "{script}" "$@"\n')
        os.chmod(wrapper, 0o755)
        super().__init__(os.path.basename(script), *args, exe=wrapper)


def shared_and_pinned(version):
    """gs_torch_shm.py under `leaks -p` with this PyTorch: its shared-memory CPU tensors and
    its tensor pinned through the stand-in runtime, exactly."""
    w = VenvScript(TORCH_VENVS[version], SHM_SCRIPT, os.path.join(LIB, "libcudart.so.13"))
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json")
    proc = process(g.reports()[-1], w.pid)
    assert "CPU tensors in shared memory from at::MapAllocator" in g.stderr_text(), \
        g.stderr_text()
    t = proc["torch"]
    # 493828 + 1000 in shared memory, 262144 from alloc_cpu; the storages share_memory_()
    # replaced and churn()'s tensors all given back
    expect_eq([(d["device"], d["allocated_bytes"], d["tensors"]) for d in t["devices"]],
              [("cpu", 493828 + 1000 + 262144, 3)], f"{version}: CPU tensors")
    expect_eq(t["unknown_frees"], 0, f"{version}: unknown frees")
    stacks = sorted((s["bytes"], s["allocations"], s["frames"][0]["symbol"].split("(")[0])
                    for s in t["stacks"])
    expect_eq(stacks, [(1000, 1, "at::MapAllocator::MapAllocator"),
                       (262144, 1, "c10::DefaultCPUAllocator::allocate"),
                       (493828, 1, "at::MapAllocator::MapAllocator")], f"{version}: stacks")
    for s in t["stacks"]:
        python = [f["symbol"] for f in s["frames"] if f.get("kind") == "python"]
        assert ("keep_shared" if s["bytes"] != 262144 else "pin_tensor") in python, python
    expect_eq([(s["api"], s["bytes"], s["allocations"], s["memory"]) for s in proc["stacks"]],
              [("cudaHostRegister", 262144, 1, "host")], f"{version}: pinned through the stand-in")
    python = [f["symbol"] for f in proc["stacks"][0]["frames"] if f.get("kind") == "python"]
    assert "pin_tensor" in python, python
    expect_eq((proc["pinned_host_bytes"], proc["device_bytes"]), (262144, 0),
              f"{version}: pinned host memory, device memory")


@test
def torch215_shared_memory_and_pinned_tensors():
    shared_and_pinned("2.15")


@test
def torch25_shared_memory_and_pinned_tensors():
    shared_and_pinned("2.5")


@test
def torch_mem_recording_counts_its_events():
    """A torch-mem recording holds counters: metadata.events and the summary count them."""
    path = os.path.join(tempfile.mkdtemp(), "t.json")
    status, _, err = run_gpusnoop("record", "-e", "torch-mem", "-o", path, "--",
                                  os.path.join(BIN, "gs_torch"))
    expect_eq(status, 0, f"record status ({err})")
    trace = load_trace(path)
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    events = [e for e in trace["traceEvents"] if e["ph"] != "M"]
    assert len(counters) > 20, len(counters)
    expect_eq(trace["metadata"]["events"], len(events), "metadata.events")
    m = re.search(r"gpusnoop record: (\d+) events in", err)
    assert m, err
    expect_eq(int(m.group(1)), len(events), "the summary's event count")
    m = re.search(r"torch-mem: (\d+) tensor allocations, (\d+) frees, (\d+) out-of-memory", err)
    assert m, err
    # gs_torch: 3 + 5 CPU tensors, 4 + 10 + 3 + 1 CUDA ones; 5 + 10 + 1 + 2 freed; one OOM
    expect_eq(tuple(int(x) for x in m.groups()), (26, 18, 1),
              "tensor allocations, frees, out-of-memory")


if __name__ == "__main__":
    main()
