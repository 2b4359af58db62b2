#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_gpu.py: `record -e gpu`: the stand-in GPU's records, linked to launches, in Kineto form."""
import collections
import gzip
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, LIB, ROOT, MiB, Gpusnoop, Skip, Workload, expect_eq, main,
                     run_gpusnoop, test)
from test_daemon import Daemon, config_file

INJECTION = os.path.join(ROOT, "libgpusnoop-cupti.so")
GEMM = "gemm_kernel(float*, int)"
RELU = "relu_kernel(float*, int)"
GRAPH = "gs_graph_node"
KiB = 1024

# tests/fixtures/fake_gpu.h: device time of each piece of work, in ns
def kernel_ns(blocks):
    return 1000 * blocks


def memcpy_ns(nbytes):
    return 500 + nbytes // 16


def memset_ns(nbytes):
    return 200 + nbytes // 64


# What tests/fixtures/workloads/gs_gpu.cc runs: (name, category) -> [(duration ns, args)]
EXPECTED = {
    (GEMM, "kernel"): [kernel_ns(128 * 2)] * 20,
    (RELU, "kernel"): [kernel_ns(64)] * 10,
    (GRAPH, "kernel"): [2000] * 3,
    ("Memcpy HtoD", "gpu_memcpy"): [memcpy_ns(MiB)] * 2,
    ("Memcpy DtoH", "gpu_memcpy"): [memcpy_ns(2 * MiB)],
    ("Memset", "gpu_memset"): [memset_ns(64 * KiB)] * 2,
}
RECORDS = sum(len(v) for v in EXPECTED.values())  # 38
DEFAULT_STREAM, FIRST_STREAM = 7, 13
LOAD_TIMEOUT = 120  # seconds for gpusnoop to load its BPF objects on a busy machine


def gpu_env(**extra):
    """The stand-in CUPTI ahead of the real one the library's RUNPATH names."""
    if not os.path.exists(INJECTION):
        raise Skip(f"{INJECTION} not built (no CUPTI headers at build time)")
    env = {"LD_LIBRARY_PATH": LIB}
    env.update(extra)
    return env


def load(path):
    with open(path) as f:
        text = f.read()
    return json.loads(text), text


def ns(us):
    """A trace's microseconds (three decimals) back to exact nanoseconds."""
    return round(us * 1000)


def gpu_rows(trace):
    return [e for e in trace["traceEvents"] if e["ph"] == "X"
            and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]


def cpu_calls(trace, pid):
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and e["pid"] == pid]


def expect_gpu_rows(trace):
    """Every record of gs_gpu, on device 0's row of its stream, with its device time."""
    got = collections.defaultdict(list)
    for e in gpu_rows(trace):
        got[(e["name"], e["cat"])].append(ns(e["dur"]))
        expect_eq((e["pid"], e["args"]["device"], e["args"]["context"]), (0, 0, 1),
                  f"device row of {e['name']}")
        expect_eq(e["tid"], e["args"]["stream"], "tid is the stream")
    expect_eq(dict(got), EXPECTED, "GPU rows and device durations (ns)")
    for e in gpu_rows(trace):
        if e["name"] == GEMM:
            expect_eq((e["args"]["grid"], e["args"]["block"], e["args"]["shared memory"],
                       e["args"]["registers per thread"], e["tid"]),
                      ([128, 2, 1], [256, 1, 1], 4096, 32, FIRST_STREAM), "gemm's args")
        elif e["name"] == RELU:
            expect_eq(e["tid"], DEFAULT_STREAM, "relu on the legacy default stream")
        elif e["cat"] != "kernel":
            expect_eq(e["args"]["bytes"], {"Memset": 64 * KiB, "Memcpy DtoH": 2 * MiB}
                      .get(e["name"], MiB), f"bytes of {e['name']}")


def expect_flows_pair_launches(trace):
    """Each ac2g flow id starts once, at a launch slice, and ends at GPU rows of that launch's
    correlation id only; ids are exact JSON numbers. Returns {(pid, correlation): rows}."""
    events = trace["traceEvents"]
    slices = {(e["pid"], e["tid"], e["ts"]): e for e in events if e["ph"] == "X"
              and e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e["args"]}
    starts = {}
    for e in events:
        if e.get("cat") == "ac2g" and e["ph"] == "s":
            assert e["id"] not in starts, f"flow id {e['id']} starts twice"
            assert 0 < e["id"] < 2 ** 53, e
            starts[e["id"]] = slices[(e["pid"], e["tid"], e["ts"])]
    ends = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "ac2g" and e["ph"] == "f":
            ends[(e["pid"], e["tid"], e["ts"])].append(e["id"])
    rows = collections.Counter()
    for row in gpu_rows(trace):
        ids = ends.pop((row["pid"], row["tid"], row["ts"]), [])
        expect_eq(len(ids), 1, f"flow ends at {row}")
        launch = starts[ids[0]]
        expect_eq(launch["args"]["correlation"], row["args"]["correlation"], "flow's two ends")
        assert row["ts"] >= launch["ts"], (launch, row)
        rows[(launch["pid"], launch["args"]["correlation"])] += 1
    expect_eq(dict(ends), {}, "flow ends without a GPU row")
    return {(e["pid"], e["args"]["correlation"]): rows[(e["pid"], e["args"]["correlation"])]
            for e in starts.values()}


def expect_linked(trace, pid):
    """Each launch and copy slice has its correlation id, each GPU row one of them, with flows."""
    cpu = {}
    for e in cpu_calls(trace, pid):
        if "correlation" in e["args"]:
            assert e["args"]["correlation"] not in cpu, e
            cpu[e["args"]["correlation"]] = e
    expect_eq(collections.Counter(e["name"] for e in cpu.values()),
              {"cudaLaunchKernel": 30, "cudaGraphLaunch": 1, "cudaMemcpy": 3,
               "cudaMemsetAsync": 2}, "CPU slices with a correlation id")
    rows = gpu_rows(trace)
    for e in rows:
        launch = cpu.get(e["args"]["correlation"])
        assert launch, f"GPU row without its launch: {e}"
        want = {"kernel": ("cudaLaunchKernel", "cudaGraphLaunch"), "gpu_memcpy": ("cudaMemcpy",),
                "gpu_memset": ("cudaMemsetAsync",)}[e["cat"]]
        assert launch["name"] in want, (launch, e)
        # one clock: the device starts the work after the call that issued it began
        assert e["ts"] >= launch["ts"], (launch, e)
        if e["cat"] == "kernel" and e["name"] != GRAPH:
            expect_eq(launch["args"]["kernel"], e["name"], "launch and kernel agree")
    graph = [e for e in rows if e["name"] == GRAPH]
    expect_eq(len({e["args"]["correlation"] for e in graph}), 1, "a graph's kernels: one id")
    launches = expect_flows_pair_launches(trace)
    expect_eq(sorted(launches), sorted((pid, c) for c in cpu), "flow starts: launches with an id")
    expect_eq(sum(launches.values()), RECORDS, "flow ends")
    md = trace["metadata"]["gpu"]
    expect_eq((md["records"], md["linked"], md["not_linked"], md["malformed"]),
              (RECORDS, RECORDS, 0, 0), "GPU record counts")


@test
def gpu_every_launch_linked_with_device_times():
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--",
                                  os.path.join(BIN, "gs_gpu"),
                                  env=gpu_env(RANK="3", WORLD_SIZE="4"), timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace, text = load(out)
    pid = next(e["pid"] for e in trace["traceEvents"]
               if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] > 0)
    expect_gpu_rows(trace)
    expect_linked(trace, pid)
    clock = trace["metadata"]["gpu"]["clock"]
    expect_eq(clock["method"], "cupti_timestamp_callback_clock_monotonic", "clock method")
    assert clock["checks"] >= 1, clock
    # Holistic Trace Analysis finds the rank with the pattern "rank":\s+(\d+)
    assert '"rank": 3' in text, trace.get("distributedInfo")
    expect_eq(trace["distributedInfo"], {"rank": 3, "world_size": 4}, "distributedInfo")
    expect_eq(trace["deviceProperties"], [{"id": 0}], "deviceProperties")
    assert "GPU kernels by device time" in err and "gemm_kernel(float*, int)" in err, err
    assert f"GPU records: {RECORDS}, {RECORDS} linked to their launch, 0 not" in err, err


@test
def gpu_attach_by_pid_to_a_process_started_with_the_library():
    w = Workload("gs_gpu", env=gpu_env(CUDA_INJECTION64_PATH=INJECTION))
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    g = Gpusnoop("record", "-e", "gpu", "-p", str(w.pid), "-o", out)
    try:
        g.wait_stderr("GPU activity from", LOAD_TIMEOUT)
        g.wait_stderr("Ctrl-C to stop", LOAD_TIMEOUT)
        w.release()
        w.wait_line("done")
        expect_eq(w.finish(), 0, "workload status")
        expect_eq(g.wait(), 0, f"record status; stderr:\n{g.stderr_text()}")
    finally:
        w.kill()
        g.kill()
    trace, _ = load(out)
    expect_gpu_rows(trace)
    expect_linked(trace, w.pid)


def load_gz(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)


def daemon_recording_ready(d, pid):
    """The daemon's `record -p PID` child (its stderr is the daemon's) is attached: its path."""
    line = d.g.wait_stderr(f"recording {pid} for ", LOAD_TIMEOUT)
    d.g.wait_stderr(f"pid {pid}: GPU activity from {INJECTION}", LOAD_TIMEOUT)
    d.g.wait_stderr("recording; Ctrl-C to stop", LOAD_TIMEOUT)
    return line.rsplit(": ", 1)[1]


def expect_daemon_trace(d, w, path):
    """w runs its launches, exits; the recording ends with it: the rows record -e gpu -p gives."""
    w.release()
    w.wait_line("done")
    expect_eq(w.finish(), 0, "workload status")
    d.g.wait_stderr(f"recording done: {path}", LOAD_TIMEOUT)
    trace = load_gz(path)
    expect_gpu_rows(trace)
    expect_linked(trace, w.pid)


def gpu_workload_after_oom(d):
    """gs_gpu started with the library, held after a CUDA OOM the daemon has reported: followed."""
    w = Workload("gs_gpu", env=gpu_env(CUDA_INJECTION64_PATH=INJECTION, GS_GPU_OOM="1",
                                       GS_FAKE_CUDA_MEM_LIMIT=str(256 * MiB)))
    d.wait_probed()
    w.release()
    w.wait_line("oom 2")  # held again, its launches still to come
    d.g.wait_stderr(f"pid {w.pid} (gs_gpu): cuda-oom: report", LOAD_TIMEOUT)
    return w


@test
def gpu_daemon_ctl_record_of_a_process_started_with_the_library():
    d = Daemon()
    w = None
    try:
        w = gpu_workload_after_oom(d)
        # long enough never to end first: the recording stops when its process exits
        status, out, err = d.ctl("record", str(w.pid), "600", "gpu")
        expect_eq(status, 0, f"ctl record ({err})")
        path = daemon_recording_ready(d, w.pid)
        expect_eq(out.strip(), path, "ctl prints the trace's path")
        expect_daemon_trace(d, w, path)
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def gpu_daemon_oom_recording_with_gpu_events():
    _, conf = config_file("gs-daemon-gpu-", "oom-record 600s events=gpu\n")
    d = Daemon("--config", conf)
    w = None
    try:
        w = gpu_workload_after_oom(d)
        expect_daemon_trace(d, w, daemon_recording_ready(d, w.pid))
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def gpu_inject_into_a_process_started_without_the_library():
    w = Workload("gs_gpu", env=gpu_env())  # CUDA is up, no CUDA_INJECTION64_PATH
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    g = Gpusnoop("record", "-e", "gpu", "--inject", "-p", str(w.pid), "-o", out)
    try:
        g.wait_stderr("loaded and initialised", LOAD_TIMEOUT)
        g.wait_stderr("Ctrl-C to stop", LOAD_TIMEOUT)
        with open(f"/proc/{w.pid}/maps") as f:
            assert INJECTION in f.read(), "library not mapped after --inject"
        w.release()  # the process goes on where ptrace stopped it
        w.wait_line("done")
        expect_eq(w.finish(), 0, "workload status")
        expect_eq(g.wait(), 0, f"record status; stderr:\n{g.stderr_text()}")
    finally:
        w.kill()
        g.kill()
    trace, _ = load(out)
    expect_gpu_rows(trace)
    expect_linked(trace, w.pid)


@test
def gpu_driver_api_launches_linked():
    """gs_driver_launch: 40 cuLaunchKernel of 8x4x2 blocks, 5 cuLaunchKernelEx of 9 blocks."""
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--",
                                  os.path.join(BIN, "gs_driver_launch"), env=gpu_env(),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace, _ = load(out)
    rows = collections.defaultdict(list)
    for e in gpu_rows(trace):
        rows[e["name"]].append(ns(e["dur"]))
    expect_eq(dict(rows), {"drv_kernel(float*)": [kernel_ns(64)] * 40,
                           "lib_kernel(int*)": [kernel_ns(9)] * 5}, "kernel rows (ns)")
    cpu = {e["args"]["correlation"]: e for e in trace["traceEvents"]
           if e["ph"] == "X" and e.get("cat") == "cuda_driver" and "correlation" in e["args"]}
    expect_eq(collections.Counter(e["name"] for e in cpu.values()),
              {"cuLaunchKernel": 40, "cuLaunchKernelEx": 5}, "driver slices with an id")
    for e in gpu_rows(trace):
        expect_eq(cpu[e["args"]["correlation"]]["args"]["kernel"], e["name"], "linked launch")
    md = trace["metadata"]["gpu"]
    expect_eq((md["records"], md["linked"], md["not_linked"]), (45, 45, 0), "GPU record counts")


@test
def gpu_cupti_dropped_records_counted():
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    # the stand-in drops records 5, 10, ... 35 of the 38, as CUPTI does when it overflows
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--",
                                  os.path.join(BIN, "gs_gpu"),
                                  env=gpu_env(GS_FAKE_CUPTI_DROP_EVERY="5"),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace, _ = load(out)
    md = trace["metadata"]["gpu"]
    expect_eq((md["cupti_dropped"], md["records"], md["linked"]), (7, RECORDS - 7, RECORDS - 7),
              "CUPTI's drops reported, the rest linked")
    assert "CUPTI dropped 7" in err, err


@test
def gpu_library_dormant_without_gpusnoop():
    env = dict(os.environ, **gpu_env(CUDA_INJECTION64_PATH=INJECTION, GS_FAKE_CUPTI_STATS="1"))
    p = subprocess.run([os.path.join(BIN, "gs_gpu")], capture_output=True, env=env, timeout=30)
    expect_eq(p.returncode, 0, f"status; stderr {p.stderr!r}")
    # no buffer handed to CUPTI: every record dropped at the source, nothing kept or copied
    assert f"fake cupti: {RECORDS} records, 0 buffers, {RECORDS} dropped" in p.stderr.decode(), \
        p.stderr


# scripts/setup.sh test installs Holistic Trace Analysis here, outside the work tree
HTA_PYTHON = os.environ.get("GS_HTA_PYTHON", "/var/cache/gpusnoop-tests/venv/bin/python")


def hta_check(trace_dir):
    """Holistic Trace Analysis' view of the traces in trace_dir (hta_check.py's JSON)."""
    if not os.access(HTA_PYTHON, os.X_OK):
        raise Skip(f"{HTA_PYTHON} missing: `make setup-test` installs Holistic Trace Analysis")
    p = subprocess.run([HTA_PYTHON, os.path.join(os.path.dirname(__file__), "hta_check.py"),
                        trace_dir], capture_output=True, timeout=LOAD_TIMEOUT)
    expect_eq(p.returncode, 0, f"hta_check status; stderr:\n{p.stderr.decode()[-3000:]}")
    return json.loads(p.stdout)


def record_rank(out, rank, world_size):
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--",
                                  os.path.join(BIN, "gs_gpu"),
                                  env=gpu_env(RANK=str(rank), WORLD_SIZE=str(world_size)),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")


@test
def gpu_traces_of_two_ranks_load_in_holistic_trace_analysis():
    trace_dir = tempfile.mkdtemp()
    for rank in (0, 1):
        record_rank(os.path.join(trace_dir, f"rank{rank}.json"), rank, 2)
    hta = hta_check(trace_dir)
    expect_eq(hta["ranks"], [0, 1], "ranks HTA found (from distributedInfo)")
    # HTA keeps whole microseconds of start and duration: within 2 us of the device time
    want = {name: (len(v), v[0] / 1000) for (name, _), v in EXPECTED.items()}
    for rank in (0, 1):
        got = {k["name"]: k for k in hta["kernels"] if k["rank"] == rank}
        expect_eq(set(got), set(want), f"rank {rank}: kernels in HTA's breakdown")
        for name, (count, mean_us) in want.items():
            assert abs(got[name]["mean_us"] - mean_us) <= 2, (rank, name, got[name], mean_us)
            assert abs(got[name]["sum_us"] - count * mean_us) <= 2 * count, (rank, got[name])
        expect_eq(got[GEMM]["type"], "COMPUTATION", "gemm is computation")
        expect_eq(got["Memcpy HtoD"]["type"], "MEMORY", "copies are memory")
        streams = {i["stream"] for i in hta["idle"] if i["rank"] == rank}
        expect_eq(streams, {DEFAULT_STREAM, FIRST_STREAM}, f"rank {rank}: idle time per stream")


@test
def gpu_stitch_keeps_rank_and_devices():
    tmp = tempfile.mkdtemp()
    for rank in (1, 0):
        record_rank(os.path.join(tmp, f"rank{rank}.json"), rank, 2)
    out_dir = os.path.join(tmp, "stitched")
    os.mkdir(out_dir)
    out = os.path.join(out_dir, "both.json")
    status, _, err = run_gpusnoop("stitch", os.path.join(tmp, "rank1.json"),
                                  os.path.join(tmp, "rank0.json"), "-o", out, timeout=120)
    expect_eq(status, 0, f"stitch status; stderr:\n{err}")
    trace, text = load(out)
    # the first input's distributedInfo, the space HTA's "rank":\s+(\d+) needs kept
    expect_eq(trace["distributedInfo"], {"rank": 1, "world_size": 2}, "distributedInfo")
    assert '"rank": 1' in text and '"rank": 0' not in text, trace["distributedInfo"]
    expect_eq(trace["deviceProperties"], [{"id": 0}], "deviceProperties, one per device id")
    expect_eq(len(gpu_rows(trace)), 2 * RECORDS, "both ranks' GPU rows")
    # renumbered per input, each launch's flow still ends at its own rank's rows only
    expect_eq(sum(expect_flows_pair_launches(trace).values()), 2 * RECORDS, "flow ends")
    expect_eq(hta_check(out_dir)["ranks"], [1], "the rank HTA finds in the stitched trace")


def record_ranks(out_dir, *env):
    """gs_ranks' ranks under record -e gpu -o DIR/; returns the files' names and traces."""
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out_dir, "--", "env", *env,
                                  os.path.join(BIN, "gs_ranks"), env=gpu_env(),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    return {name: load(os.path.join(out_dir, name))[0] for name in os.listdir(out_dir)}


def expect_rank_file(trace, launches):
    """One rank's file: its launches only, each linked to its kernel on the file's own GPU row."""
    pids = {e["pid"] for e in trace["traceEvents"] if e.get("cat") == "cuda_runtime"}
    expect_eq(len(pids), 1, "one process per file")
    calls = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == "cudaLaunchKernel"]
    kernels = [e for e in gpu_rows(trace) if e["name"] == GEMM]
    expect_eq(len(calls), launches, "launches")
    expect_eq(sorted(e["args"]["correlation"] for e in kernels),
              sorted(e["args"]["correlation"] for e in calls), "kernels of the file's launches")
    expect_eq(expect_flows_pair_launches(trace),
              {(e["pid"], e["args"]["correlation"]): 1 for e in calls}, "one flow per launch")
    names = [e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] == 0]
    expect_eq(names, ["GPU 0"], "the file names its GPU row once")
    expect_eq(trace["deviceProperties"], [{"id": 0}], "deviceProperties")


@test
def gpu_directory_output_one_file_per_rank():
    out_dir = os.path.join(tempfile.mkdtemp(), "ranks") + "/"  # made: the name ends in /
    files = record_ranks(out_dir, "GS_RANKS=2")
    expect_eq(sorted(files), ["rank-0.json", "rank-1.json"], "files")
    for rank in (0, 1):
        trace = files[f"rank-{rank}.json"]
        # gs_ranks: rank r launches gemm_kernel 10 * (r + 1) times
        expect_rank_file(trace, 10 * (rank + 1))
        expect_eq(trace["distributedInfo"]["rank"], rank, "distributedInfo")
    hta = hta_check(out_dir)
    expect_eq(hta["ranks"], [0, 1], "ranks HTA found in the directory")
    for rank in (0, 1):
        gemm = [k for k in hta["kernels"] if k["rank"] == rank and k["name"] == GEMM]
        expect_eq(len(gemm), 1, f"rank {rank}: gemm in HTA's kernel breakdown")
        expect_eq(round(gemm[0]["sum_us"] / gemm[0]["mean_us"]), 10 * (rank + 1),
                  f"rank {rank}: gemm launches HTA counts")


@test
def gpu_directory_output_names_rankless_processes_by_pid():
    out_dir = tempfile.mkdtemp()  # an existing directory
    # forked without exec: the children have the launcher's environment, no rank
    files = record_ranks(out_dir, "GS_RANKS=2", "GS_RANKS_MODE=fork")
    expect_eq(len(files), 2, f"files: {sorted(files)}")
    by_launches = {}
    for name, trace in files.items():
        pid = next(e["pid"] for e in trace["traceEvents"] if e.get("cat") == "cuda_runtime")
        expect_eq(name, f"pid-{pid}.json", "file named by its process")
        assert "distributedInfo" not in trace, trace["distributedInfo"]
        by_launches[sum(e["name"] == "cudaLaunchKernel" for e in trace["traceEvents"])] = trace
    expect_eq(sorted(by_launches), [10, 20], "each child's launches")
    for launches, trace in by_launches.items():
        # each child ends in _exit(): its records are handed over before, at its calls' return
        expect_rank_file(trace, launches)
        md = trace["metadata"]["gpu"]
        expect_eq((md["records"], md["linked"], md["not_linked"]), (30, 30, 0),
                  "the recording's GPU records, all linked")


@test
def gpu_flows_of_two_processes_in_one_file_stay_apart():
    """Forked ranks count correlation ids from 1 each: in one file, one flow per launch."""
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", out, "--", "env", "GS_RANKS=2",
                                  "GS_RANKS_MODE=fork", os.path.join(BIN, "gs_ranks"),
                                  env=gpu_env(), timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace, _ = load(out)
    calls = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["name"] == "cudaLaunchKernel"]
    by_pid = collections.Counter(e["pid"] for e in calls)
    expect_eq(sorted(by_pid.values()), [10, 20], "each child's launches")
    # rank 0's ids 1..10 are rank 1's too: each launch still ends at one kernel of its own
    ids = collections.Counter(e["args"]["correlation"] for e in calls)
    expect_eq(sorted(c for c, n in ids.items() if n == 2), list(range(1, 11)), "shared ids")
    expect_eq(expect_flows_pair_launches(trace),
              {(e["pid"], e["args"]["correlation"]): 1 for e in calls}, "one flow per launch")
    md = trace["metadata"]["gpu"]
    expect_eq((md["records"], md["linked"], md["not_linked"]), (30, 30, 0), "GPU records")


@test
def directory_output_refused_with_every_process():
    out_dir = tempfile.mkdtemp()
    status, _, err = run_gpusnoop("record", "-a", "-d", "1", "-o", out_dir + "/")
    expect_eq(status, 64, "status: a usage error")
    expect_eq([l for l in err.splitlines() if l.strip()],
              ["gpusnoop: error: -o DIR/ writes a file per process or rank: not with -a; "
               "name a file"], "one line")
    expect_eq(os.listdir(out_dir), [], "nothing written")


@test
def gpu_refuses_another_injection_library():
    status, _, err = run_gpusnoop("record", "-e", "gpu", "-o", "/dev/null", "--", "true",
                                  env=gpu_env(CUDA_INJECTION64_PATH="/opt/other/libinject.so"))
    expect_eq(status, 1, "status")
    lines = [l for l in err.splitlines() if l.strip()]
    expect_eq(len(lines), 1, f"one line: {err!r}")
    assert "/opt/other/libinject.so" in lines[0], lines


if __name__ == "__main__":
    sys.exit(main())
