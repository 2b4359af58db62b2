#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_timeline.py: traces without GPU rows or complete slices, per rank, as HTA loads them."""
import json
import os
import subprocess
import sys
import shutil
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, Skip, expect_eq, main, run_gpusnoop, test

LOAD_TIMEOUT = 120  # seconds for gpusnoop to load its BPF objects on a busy machine
# scripts/setup.sh test installs Holistic Trace Analysis here, outside the work tree
HTA_PYTHON = os.environ.get("GS_HTA_PYTHON", "/var/cache/gpusnoop-tests/venv/bin/python")
PYTHON = "/usr/bin/python3"  # Debian's, not a shim that runs shell scripts first
# busy on the CPU for half a second, then exits: its last samples come with its exit
SPIN = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 0.5:\n    pass\n"
# torchrun's part: starts two ranks that SPIN, and is busy itself meanwhile (sampled too)
LAUNCHER = ("import os, subprocess, sys, time\n"
            "ps = [subprocess.Popen([sys.executable, '-c', sys.argv[1]], env=dict(os.environ, "
            "RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE='2')) for r in range(2)]\n"
            "t = time.monotonic()\nwhile time.monotonic() - t < 0.3:\n    pass\n"
            "for p in ps:\n    p.wait()\n")


def hta_load(trace_dir):
    """Holistic Trace Analysis' ranks and rows of the traces in trace_dir."""
    if not os.access(HTA_PYTHON, os.X_OK):
        raise Skip(f"{HTA_PYTHON} missing: `make setup-test` installs Holistic Trace Analysis")
    p = subprocess.run([HTA_PYTHON, os.path.join(os.path.dirname(__file__),
                                                 "hta_load_check.py"), trace_dir],
                       capture_output=True, timeout=LOAD_TIMEOUT)
    expect_eq(p.returncode, 0, f"hta_load_check status; stderr:\n{p.stderr.decode()[-3000:]}")
    return json.loads(p.stdout)


def load(path):
    with open(path) as f:
        return json.load(f)


def process_names(trace):
    return [(e["pid"], e["args"]["name"]) for e in trace["traceEvents"]
            if e["ph"] == "M" and e["name"] == "process_name"]


def expect_samples_only(trace):
    """CPU samples, no complete slice: each an instant that lasts 0 (HTA needs a "dur")."""
    samples = [e for e in trace["traceEvents"] if e.get("cat") == "cpu_sample"]
    assert samples, "no CPU sample"
    expect_eq([e for e in trace["traceEvents"] if e["ph"] == "X"], [], "complete slices")
    expect_eq({(e["ph"], e.get("dur")) for e in samples}, {("i", 0)}, "samples' phase, dur")
    return samples


@test
def timeline_cpu_rank_directory_is_one_file_per_rank():
    out_dir = os.path.join(tempfile.mkdtemp(), "ranks") + "/"
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "499", "-o", out_dir, "--",
                                  PYTHON, "-c", SPIN, env={"RANK": "0", "WORLD_SIZE": "1"},
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    # every sample of the rank, its exit's last ones included, in the rank's one file
    expect_eq(sorted(os.listdir(out_dir)), ["rank-0.json"], "files")
    trace = load(os.path.join(out_dir, "rank-0.json"))
    expect_eq(trace.get("distributedInfo"), {"rank": 0, "world_size": 1},
              "distributedInfo without -e gpu")
    samples = expect_samples_only(trace)
    names = process_names(trace)
    pids = [pid for pid, _ in names]
    expect_eq(len(pids), len(set(pids)), f"each process named once: {names}")
    target = {pid for pid, name in names if name.startswith("python3")}
    expect_eq(len(target), 1, f"the command's process: {names}")
    expect_eq(dict(names)[target.pop()], "python3 (rank 0)", "its name, after its exec")
    assert all(e["pid"] in dict(names) for e in samples), "every sample's process named"
    hta = hta_load(out_dir)
    expect_eq(hta["ranks"], [0], "the rank HTA finds")
    assert hta["rows"]["0"] > 0, hta


@test
def timeline_cpu_ranks_beside_their_launcher_load_in_holistic_trace_analysis():
    """record -e cpu -o DIR/ -- a torchrun-like launcher: the launcher, sampled but rankless,
    gets its file under DIR/no-rank/, not beside the ranks' (HTA reads a file without a rank
    as rank 0, and one of the two rank 0s would be lost)."""
    out_dir = os.path.join(tempfile.mkdtemp(), "ranks") + "/"
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "499", "-o", out_dir, "--",
                                  PYTHON, "-c", LAUNCHER, SPIN, timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    expect_eq(sorted(os.listdir(out_dir)), ["no-rank", "rank-0.json", "rank-1.json"], "files")
    moved = os.listdir(os.path.join(out_dir, "no-rank"))
    expect_eq(len(moved), 1, f"the launcher's file: {moved}")
    launcher = load(os.path.join(out_dir, "no-rank", moved[0]))
    expect_eq(moved[0], f"pid-{process_names(launcher)[0][0]}.json", "named by its process")
    assert "distributedInfo" not in launcher, launcher["distributedInfo"]
    samples = {}
    for rank in (0, 1):
        trace = load(os.path.join(out_dir, f"rank-{rank}.json"))
        expect_eq(trace["distributedInfo"], {"rank": rank, "world_size": 2}, "distributedInfo")
        samples[str(rank)] = len(expect_samples_only(trace))
    hta = hta_load(out_dir)
    expect_eq((hta["ranks"], hta["rows"]), ([0, 1], samples), "HTA's ranks and rows: the ranks'")


# two ranks and one rankless helper, each a stand-in CUDA process (gs_kernels: 4,010 launches)
CUDA_LAUNCHER = ("import os, subprocess, sys\n"
                 "env = lambda r: dict(os.environ, RANK=str(r), WORLD_SIZE='2')\n"
                 "ps = [subprocess.Popen([sys.argv[1]], env=env(r)) for r in range(2)]\n"
                 "ps.append(subprocess.Popen([sys.argv[1]]))\n"
                 "for p in ps:\n    p.wait()\n")


@test
def timeline_stats_of_a_rank_directory_counts_its_rankless_files():
    """record -o DIR/ moves a rankless CUDA process's file to DIR/no-rank/; `stats DIR/` still
    counts every call record wrote: the ranks' and that process's (3 x 4,010 launches)."""
    out_dir = os.path.join(tempfile.mkdtemp(), "job") + "/"
    status, _, err = run_gpusnoop("record", "-e", "cuda-launch", "-o", out_dir, "--", PYTHON,
                                  "-c", CUDA_LAUNCHER, os.path.join(BIN, "gs_kernels"),
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    expect_eq(sorted(os.listdir(out_dir)), ["no-rank", "rank-0.json", "rank-1.json"], "files")
    rankless = os.listdir(os.path.join(out_dir, "no-rank"))
    expect_eq(len(rankless), 1, "the rankless file")
    files = ["rank-0.json", "rank-1.json", os.path.join("no-rank", rankless[0])]
    want = [sum(1 for e in load(os.path.join(out_dir, f))["traceEvents"]
                if e["ph"] == "X" and e.get("cat") == "cuda_runtime") for f in files]
    expect_eq(want, [4010] * 3, "launches in each file")
    status, text, err = run_gpusnoop("stats", "-f", "json", out_dir)
    expect_eq(status, 0, f"stats status ({err})")
    calls = json.loads(text)["tables"]["cuda_api"]["rows"]
    expect_eq(sum(r["count"] for r in calls), 3 * 4010, "calls counted in DIR/ and DIR/no-rank/")


@test
def timeline_one_file_of_a_rank_says_its_rank():
    """-o FILE (not DIR/) of one rank's processes, without -e gpu: its distributedInfo too, as
    -e gpu's file has it (else HTA reads each such file, one per host, as rank 0)."""
    out_dir = tempfile.mkdtemp()
    out = os.path.join(out_dir, "host3.json")
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "499", "-o", out, "--",
                                  PYTHON, "-c", SPIN, env={"RANK": "3", "WORLD_SIZE": "4"},
                                  timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace = load(out)
    expect_eq(trace.get("distributedInfo"), {"rank": 3, "world_size": 4}, "distributedInfo")
    samples = expect_samples_only(trace)
    hta = hta_load(out_dir)
    expect_eq((hta["ranks"], hta["rows"]), ([3], {"3": len(samples)}), "HTA's rank and rows")


@test
def timeline_cpu_only_trace_loads_in_holistic_trace_analysis():
    out_dir = tempfile.mkdtemp()
    out = os.path.join(out_dir, "cpu.json")
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "499", "-o", out, "--",
                                  PYTHON, "-c", SPIN, timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    expect_samples_only(load(out))
    # no "dur" anywhere was HTA 0.5's KeyError: 'dur'
    hta = hta_load(out_dir)
    expect_eq(hta["ranks"], [0], "HTA's rank of a rankless trace")
    assert hta["rows"]["0"] > 0, hta


@test
def timeline_counters_trace_loads_in_holistic_trace_analysis():
    """-e torch-mem (as the default events on a CPU-only PyTorch): counters, not one slice."""
    out_dir = tempfile.mkdtemp()
    out = os.path.join(out_dir, "torch.json")
    status, _, err = run_gpusnoop("record", "-e", "torch-mem", "-o", out, "--",
                                  os.path.join(BIN, "gs_torch"), timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    trace = load(out)
    expect_eq([e for e in trace["traceEvents"] if e["ph"] == "X"], [], "complete slices")
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert any(e["name"] == "PyTorch cpu allocated" for e in counters), counters
    expect_eq({(e.get("cat"), e.get("dur")) for e in counters}, {("counter", 0)},
              "counters' category and duration")
    ooms = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    expect_eq([(e["cat"], e["dur"]) for e in ooms], [("torch_oom", 0)], "the OOM instant")
    hta = hta_load(out_dir)
    expect_eq(hta["ranks"], [0], "HTA's rank of a rankless trace")
    expect_eq(hta["rows"]["0"], len(counters) + len(ooms), "HTA's rows: counters, the OOM")


@test
def timeline_daemon_flight_trace_loads_in_holistic_trace_analysis():
    """The daemon's OOM report's flight-recorder trace: its memory calls, counter and trigger
    marker are rows HTA keeps, in the same vocabulary as record's; a rank's process's trace
    has its distributedInfo, as record's do."""
    from harness import Workload
    from test_daemon import OOM_ENV, Daemon  # its daemon and OOM workload's environment
    d = Daemon()
    w = None
    try:
        w = Workload("gs_oom", env=dict(OOM_ENV, RANK="2", WORLD_SIZE="4"))
        d.wait_probed()
        w.release()
        w.wait_line("oom 2")
        deadline = time.monotonic() + 10
        while not d.reports("cuda-oom-*.trace.json") and time.monotonic() < deadline:
            time.sleep(0.05)
        traces = d.reports("cuda-oom-*.trace.json")
        expect_eq(len(traces), 1, "one flight trace")
        trace = load(traces[0])
        cats = sorted({e.get("cat") for e in trace["traceEvents"] if e["ph"] in "XiC"})
        expect_eq(cats, ["counter", "cuda_runtime", "trigger"], "the vocabulary's categories")
        expect_eq(trace.get("distributedInfo"), {"rank": 2, "world_size": 4}, "distributedInfo")
        tmp = tempfile.mkdtemp()
        shutil.copy(traces[0], os.path.join(tmp, "oom.json"))
        hta = hta_load(tmp)
        kept = [e for e in trace["traceEvents"] if e["ph"] in "XiC"]
        expect_eq((hta["ranks"], hta["rows"].get("2")), ([2], len(kept)),
                  "HTA's rank and rows: the calls, the counter samples, the marker")
    finally:
        if w:
            w.kill()
        d.stop()


if __name__ == "__main__":
    main()
