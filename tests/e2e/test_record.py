#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_record.py: `gpusnoop record` timelines of real fixture processes, read back as JSON."""
import collections
import gzip
import json
import os
import re
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, LIB, MiB, Gpusnoop, Workload, expect_eq, main, run_gpusnoop,
                     test, run_attached)

SYNC_US = 2000  # the fake runtime's synchronizations last at least this long
GEMM = "gemm_kernel(float*, int)"
RELU = "relu_kernel(float*, int)"
SCALE = "void scale<float>(float*, float, int)"


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def slices(trace, pid=None, name=None):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"
            and (pid is None or e["pid"] == pid) and (name is None or e["name"] == name)]


def launches_by_kernel(trace, pid):
    """{kernel: [slices]} over every launch API slice of pid."""
    out = collections.defaultdict(list)
    for e in slices(trace, pid):
        if "kernel" in e["args"]:
            out[e["args"]["kernel"]].append(e)
    return out


def dims(e):
    return (tuple(e["args"]["grid"]), tuple(e["args"]["block"]), e["args"]["shared memory"])


def expect_valid_trace(trace, pid):
    """Well formed for Perfetto: named process and threads, every X slice on a named thread."""
    names = {(e["pid"], e["tid"]) for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert pid in procs, procs
    for e in slices(trace, pid):
        assert (e["pid"], e["tid"]) in names, e
        assert e["dur"] >= 0 and e["ts"] > 0, e
    md = trace["metadata"]
    for key in ("host", "kernel_release", "version", "start_time", "monotonic_to_realtime_ns",
                "command_line", "dropped_events"):
        assert key in md, (key, md)
    expect_eq(md["dropped_events"], 0, "dropped events")
    return procs[pid]


def expect_kernels_workload(trace, pid):
    """tests/fixtures/workloads/gs_kernels: launches, syncs and copies, exactly."""
    by_kernel = launches_by_kernel(trace, pid)
    expect_eq({k: len(v) for k, v in by_kernel.items()}, {GEMM: 3000, RELU: 1000, SCALE: 10},
              "launches per kernel")
    expect_eq({dims(e) for e in by_kernel[GEMM]}, {((128, 2, 1), (256, 1, 1), 4096)}, "gemm dims")
    expect_eq({dims(e) for e in by_kernel[RELU]}, {((64, 1, 1), (128, 1, 1), 0)}, "relu dims")
    expect_eq({dims(e) for e in by_kernel[SCALE]}, {((7, 3, 2), (32, 4, 2), 1024)}, "scale dims")
    expect_eq({e["name"] for e in by_kernel[SCALE]}, {"cudaLaunchKernelExC"}, "scale's API")
    expect_eq({e["name"] for e in by_kernel[GEMM] + by_kernel[RELU]}, {"cudaLaunchKernel"},
              "gemm/relu API (CUDA 13 <<<>>> goes through cudaLaunchKernel)")
    streams = {e["args"]["stream"] for e in by_kernel[GEMM] + by_kernel[SCALE]}
    expect_eq(len(streams), 1, "one created stream")
    assert streams != {"0x0"}, streams
    for e in by_kernel[GEMM][:5]:
        assert e["args"]["stack"][0].startswith("launch_gemm+"), e["args"]["stack"]

    syncs = slices(trace, pid, "cudaStreamSynchronize")
    expect_eq(len(syncs), 100, "stream synchronizations")
    short = [e["dur"] for e in syncs if e["dur"] < SYNC_US]
    expect_eq(short, [], "syncs shorter than the fake's sleep")
    expect_eq(len(slices(trace, pid, "cudaDeviceSynchronize")), 1, "device syncs")
    expect_eq(len(slices(trace, pid, "cudaEventSynchronize")), 1, "event syncs")
    assert syncs[0]["args"]["stack"][0].startswith("sync_streams+"), syncs[0]["args"]

    copies = collections.Counter()
    for e in slices(trace, pid):
        if "kind" in e["args"]:
            copies[(e["name"], e["args"]["kind"], e["args"]["bytes"])] += 1
    expect_eq(dict(copies), {
        ("cudaMemcpy", "HtoD", 1 * MiB): 4,
        ("cudaMemcpy", "DtoH", 2 * MiB): 2,
        ("cudaMemcpyAsync", "DtoD", 512 * 1024): 3,
        ("cudaMemcpy2D", "HtoD", 10000): 1,
        ("cudaMemcpyPeer", "PtoP", 4096): 1,
        ("cudaMemset", "Memset", 65536): 2,
        ("cudaMemsetAsync", "Memset", 1000): 1,
    }, "copies by API, kind and bytes")


@test
def record_command_until_it_exits_gzip():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json.gz")
    status, out, err = run_gpusnoop("record", "-o", path, "--", os.path.join(BIN, "gs_kernels"),
                                    timeout=120)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    trace = load_trace(path)
    pid = slices(trace)[0]["pid"]
    expect_eq(expect_valid_trace(trace, pid), "gs_kernels", "process name")
    expect_kernels_workload(trace, pid)
    # the summary on stderr
    assert f"      3000  {GEMM}" in err and f"      1000  {RELU}" in err, err
    assert "sync: pid" in err and "102 calls" in err, err
    assert "copies HtoD" in err, err


@test
def command_prints_stay_out_of_a_trace_on_stdout():
    """record and profile without -o: the trace (the folded stacks) is gpusnoop's stdout, whole
    and valid; what the command itself prints goes to stderr, never into it."""
    cmd = ["/bin/sh", "-c", f"echo printed-by-the-command; exec {BIN}/gs_kernels"]
    status, out, err = run_gpusnoop("record", "--", *cmd, timeout=120)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    assert "printed-by-the-command" in err, err
    trace = json.loads(out)
    expect_kernels_workload(trace, slices(trace)[0]["pid"])
    status, out, err = run_gpusnoop("profile", "-F", "999", "--", *cmd, timeout=120)
    expect_eq(status, 0, f"profile status ({err})")
    assert "printed-by-the-command" in err, err
    folded = out.splitlines()
    assert folded, err
    assert all(re.fullmatch(r"[^ ].* \d+", line) for line in folded), folded[:5]


def script(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path


@test
def command_that_is_a_script_runs_its_interpreter():
    """`record -- SCRIPT`, as `record -- torchrun ...` is: a "#!" line (a path, or env and a
    name) is followed to the interpreter the kernel runs, and what it execs is recorded
    whole; a "#!" without an interpreter is one line and no run."""
    tmp = tempfile.mkdtemp()
    kernels = os.path.join(BIN, "gs_kernels")
    for name, line in (("direct.sh", "#!/bin/sh -e"), ("env.sh", "#! /usr/bin/env sh")):
        path = os.path.join(tmp, name + ".json")
        status, _, err = run_gpusnoop("record", "-o", path, "--",
                                      script(tmp, name, f"{line}\nexec {kernels}\n"),
                                      timeout=120)
        expect_eq(status, 0, f"{name}: gpusnoop status ({err})")
        trace = load_trace(path)
        expect_kernels_workload(trace, slices(trace)[0]["pid"])
    bad = script(tmp, "bad.sh", "#!\nexit 0\n")
    status, _, err = run_gpusnoop("record", "-o", os.path.join(tmp, "bad.json"), "--", bad)
    assert status != 0, err
    expect_eq(err.strip().splitlines(),
              [f"gpusnoop: error: cannot run '{bad}': Exec format error"], "the error line")


@test
def launch_return_only_with_cuda_launch_latency():
    """A launch is sent from its entry, with the stack its return would see; the opt-in event
    cuda-launch-latency probes its return too, for the CPU-side duration."""
    got = {}
    for events in ("cuda-launch", "cuda-launch-latency"):
        path = os.path.join(tempfile.mkdtemp(), "t.json")
        status, out, err = run_gpusnoop("record", "-e", events, "-o", path, "--",
                                        os.path.join(BIN, "gs_kernels"), timeout=120)
        expect_eq(status, 0, f"gpusnoop status ({err})")
        trace = load_trace(path)
        pid = slices(trace)[0]["pid"]
        expect_valid_trace(trace, pid)
        got[events] = launches_by_kernel(trace, pid)
        expect_eq({k: len(v) for k, v in got[events].items()},
                  {GEMM: 3000, RELU: 1000, SCALE: 10}, f"launches per kernel ({events})")
    entry, both = got["cuda-launch"], got["cuda-launch-latency"]
    expect_eq({e["dur"] for v in entry.values() for e in v}, {0}, "durations at entry alone")
    expect_eq([e for v in both.values() for e in v if e["dur"] <= 0], [],
              "launches with a return and no duration")
    for kernel in (GEMM, SCALE):
        expect_eq({tuple(e["args"]["stack"]) for e in entry[kernel]},
                  {tuple(e["args"]["stack"]) for e in both[kernel]},
                  f"{kernel}: stacks at entry and at return")


@test
def done_when_pid_gemm_relu_sync():
    """The issue's acceptance run: -p PID -d 10 -o t.json.gz on 3000 gemm, 1000 relu, 100 syncs."""
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json.gz")
    w = Workload("gs_gemm_loop")
    g = Gpusnoop("record", "-p", str(w.pid), "-d", "10", "-o", path)
    try:
        g.wait_stderr("recording")
        w.release()
        w.wait_line("done")
        expect_eq(g.wait(), 0, "gpusnoop status (ends by -d)")
    finally:
        g.kill()
        w.finish()
    trace = load_trace(path)
    expect_valid_trace(trace, w.pid)
    by_kernel = launches_by_kernel(trace, w.pid)
    expect_eq({k: len(v) for k, v in by_kernel.items()}, {GEMM: 3000, RELU: 1000},
              "launches per kernel")
    expect_eq({dims(e) for e in by_kernel[GEMM]}, {((128, 2, 1), (256, 1, 1), 4096)}, "gemm dims")
    expect_eq({dims(e) for e in by_kernel[RELU]}, {((64, 1, 1), (128, 1, 1), 0)}, "relu dims")
    syncs = slices(trace, w.pid, "cudaStreamSynchronize")
    expect_eq(len(syncs), 100, "stream synchronizations")
    assert min(e["dur"] for e in syncs) >= SYNC_US, min(e["dur"] for e in syncs)
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["pid"] == w.pid]
    assert counters and counters[-1]["name"] == "CUDA memory", counters[-1:]


@test
def sigint_leaves_a_complete_trace():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json")
    w = Workload("gs_kernels")
    g = Gpusnoop("record", "-p", str(w.pid), "-o", path)
    try:
        g.wait_stderr("recording")
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(signal.SIGINT), 0, "gpusnoop status")
    finally:
        g.kill()
        w.finish()
    trace = load_trace(path)
    expect_valid_trace(trace, w.pid)
    expect_kernels_workload(trace, w.pid)


@test
def sigterm_mid_run_leaves_a_complete_trace():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json.gz")
    w = Workload("gs_gemm_loop")
    g = Gpusnoop("record", "-p", str(w.pid), "-o", path)
    try:
        g.wait_stderr("recording")
        w.release()
        time.sleep(0.05)  # stop somewhere in the middle of the launches
        expect_eq(g.stop(signal.SIGTERM), 0, "gpusnoop status")
    finally:
        g.kill()
        w.finish()
    trace = load_trace(path)  # valid gzip and JSON whatever the moment
    assert "metadata" in trace, trace.keys()


@test
def selected_event_families_only():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json")
    status, out, err = run_gpusnoop("record", "-e", "cuda-sync", "-o", path, "--",
                                    os.path.join(BIN, "gs_kernels"), timeout=120)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    trace = load_trace(path)
    expect_eq({e["name"] for e in slices(trace)},
              {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize"},
              "only synchronization slices")
    expect_eq([e for e in trace["traceEvents"] if e["ph"] == "C"], [], "no memory counter")


@test
def hidden_kernel_named_by_registration():
    for libdir, what in ((LIB, "unstripped"), (os.path.join(LIB, "stripped"), "stripped")):
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "t.json")
        status, out, err = run_gpusnoop("record", "-e", "cuda-launch", "-o", path, "--",
                                        os.path.join(BIN, "gs_hidden"),
                                        env={"LD_LIBRARY_PATH": libdir}, timeout=60)
        expect_eq(status, 0, f"gpusnoop status ({err})")
        trace = load_trace(path)
        pid = slices(trace)[0]["pid"]
        expect_eq({k: len(v) for k, v in launches_by_kernel(trace, pid).items()},
                  {"hidden_kernel(int*)": 25}, f"launches of the {what} library's kernel")


BURST_KERNEL = ("void at::native::burst_kernel<{}, c10::BFloat16, at::detail::Array<char*, 3> >"
                "(int, c10::BFloat16, at::detail::Array<char*, 3>)")


@test
def registration_burst_of_a_whole_library_loses_nothing():
    """20,000 kernels registered back to back, as PyTorch's libtorch_cuda.so does at import
    (about 19,000), while gpusnoop is not reading (stopped here; in real runs, busy attaching
    to the libraries that just loaded): the whole burst fits the default ring buffer, and the
    last kernel's launch is named by its registration."""
    w = Workload("gs_register_burst")
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json")
    g = Gpusnoop("record", "-e", "cuda-launch", "-p", str(w.pid), "-o", path)
    try:
        g.wait_stderr("Ctrl-C to stop")
        os.kill(g.proc.pid, signal.SIGSTOP)
        try:
            w.release()
            w.wait_line("done")
        finally:
            os.kill(g.proc.pid, signal.SIGCONT)
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()})")
    finally:
        g.kill()
        w.finish()
    trace = load_trace(path)
    expect_eq(trace["metadata"]["dropped_events"], 0, "events dropped by the burst")
    expect_eq({k: len(v) for k, v in launches_by_kernel(trace, w.pid).items()},
              {BURST_KERNEL.format(19999): 1}, "the last registered kernel, named")


@test
def attached_after_registration_never_guesses():
    # attached by pid after the stripped library registered its kernel: no source names it
    env = {"LD_LIBRARY_PATH": os.path.join(LIB, "stripped")}
    w = Workload("gs_hidden", env=env)
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json")
    run_attached(w, "record", "-e", "cuda-launch", "-p", str(w.pid), "-o", path,
                 ready="recording")
    names = set(launches_by_kernel(load_trace(path), w.pid))
    expect_eq(len(names), 1, "one kernel")
    assert names.pop().startswith("unknown 0x"), names


@test
def driver_api_launches_syncs_and_copies():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json")
    status, out, err = run_gpusnoop("record", "-o", path, "--",
                                    os.path.join(BIN, "gs_driver_launch"), timeout=60)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    trace = load_trace(path)
    pid = slices(trace)[0]["pid"]
    by_kernel = launches_by_kernel(trace, pid)
    expect_eq({k: len(v) for k, v in by_kernel.items()},
              {"drv_kernel(float*)": 40, "lib_kernel(int*)": 5}, "driver launches per kernel")
    expect_eq({dims(e) for e in by_kernel["drv_kernel(float*)"]},
              {((8, 4, 2), (64, 2, 1), 512)}, "cuLaunchKernel dims")
    expect_eq({dims(e) for e in by_kernel["lib_kernel(int*)"]}, {((9, 1, 1), (96, 1, 1), 128)},
              "cuLaunchKernelEx dims")
    expect_eq({e["cat"] for e in slices(trace, pid)}, {"cuda_driver"}, "categories")
    expect_eq(len(slices(trace, pid, "cuStreamSynchronize")), 10, "stream syncs")
    expect_eq(len(slices(trace, pid, "cuCtxSynchronize")), 1, "context syncs")
    copies = collections.Counter()
    for e in slices(trace, pid):
        if "kind" in e["args"]:
            copies[(e["name"], e["args"]["kind"], e["args"]["bytes"])] += 1
    expect_eq(dict(copies), {
        ("cuMemcpyHtoD_v2", "HtoD", 100000): 2,
        ("cuMemcpyDtoH_v2", "DtoH", 200000): 1,
        ("cuMemcpyDtoD_v2", "DtoD", 300000): 1,
        ("cuMemcpyHtoDAsync_v2", "HtoD", 1000): 1,
        ("cuMemsetD8_v2", "Memset", 4096): 1,
        ("cuMemsetD32_v2", "Memset", 4096): 1,
    }, "driver copies")


@test
def memory_counter_follows_allocations():
    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "t.json")
    status, out, err = run_gpusnoop("record", "-e", "cuda-mem", "-o", path, "--",
                                    os.path.join(BIN, "gs_leaky"),
                                    env={"GS_FAKE_CUDA_NO_DRIVER": "1"})
    expect_eq(status, 0, f"gpusnoop status ({err})")
    trace = load_trace(path)
    pid = slices(trace)[0]["pid"]
    expect_eq(len(slices(trace, pid, "cudaMalloc")), 1007, "cudaMalloc slices")
    expect_eq(len(slices(trace, pid, "cudaFree")), 1000, "cudaFree slices")
    values = [e["args"]["bytes"] for e in trace["traceEvents"]
              if e["ph"] == "C" and e["pid"] == pid]
    # 256 MiB of weights, then churn peaks at 257 MiB, then 24 MiB of activations
    expect_eq(max(values), 280 * MiB, "peak outstanding")
    assert 257 * MiB in values, sorted(set(values))
    expect_eq(values[-1], 280 * MiB, "outstanding at the end")


if __name__ == "__main__":
    sys.exit(main())
