#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_perfetto.py: `record --format perfetto` decoded with Perfetto's own schema (the PyPI perfetto
package's perfetto_trace_pb2, in the tests' venv) and compared with the JSON of the same workload."""
import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, GPUSNOOP, Skip, expect_eq, main, run_gpusnoop, test
from test_gpu import gpu_env
from test_record import GEMM, RELU, SCALE, load_trace

# scripts/setup.sh test installs the perfetto package here, outside the work tree
PYTHON = os.environ.get("GS_HTA_PYTHON", "/var/cache/gpusnoop-tests/venv/bin/python")
TIMEOUT = 120  # seconds for gpusnoop to load its BPF objects on a busy machine


def decode(path):
    """perfetto_check.py's view of a Perfetto trace: rows in the JSON's terms, checked."""
    if not os.access(PYTHON, os.X_OK):
        raise Skip(f"{PYTHON} missing: `make setup-test` installs the perfetto package")
    p = subprocess.run([PYTHON, os.path.join(os.path.dirname(__file__), "perfetto_check.py"),
                        path], capture_output=True, timeout=TIMEOUT)
    expect_eq(p.returncode, 0, f"perfetto_check status; stderr:\n{p.stderr.decode()[-3000:]}")
    out = json.loads(p.stdout)
    expect_eq(out["errors"], [], "the trace's own consistency (interned ids, tracks, slices)")
    return out


def record(path, workload, *args, env=None):
    status, _, err = run_gpusnoop("record", *args, "-o", path, "--", os.path.join(BIN, workload),
                                  env=env, timeout=TIMEOUT)
    expect_eq(status, 0, f"record status; stderr:\n{err}")
    return err


def json_kind(e):
    """A JSON row in Perfetto's terms: an X of no duration is an instant there."""
    if e["ph"] == "X":
        return "X" if e["dur"] > 0 else "I"
    return {"i": "I", "t": "s"}.get(e["ph"], e["ph"])


def json_rows(trace):
    """The JSON's rows as perfetto_check.py gives them back: counters one row per series."""
    rows = []
    for e in trace["traceEvents"]:
        if e["ph"] == "M":
            continue
        if e["ph"] == "C":
            rows += [{"ph": "C", "name": f"{e['name']} {k}", "value": v}
                     for k, v in e["args"].items()]
        else:
            rows.append(dict(e, ph=json_kind(e)))
    return rows


def kinds(rows):
    return collections.Counter((r["ph"], r.get("name"), r.get("cat")) for r in rows)


def launch_args(rows):
    """{(kernel, grid, block, shared memory, first frame)} of the launches, the dims as lists."""
    out = collections.Counter()
    for r in rows:
        a = r.get("args", {})
        if "kernel" in a and "grid" in a:
            grid, block = (json.loads(v) if isinstance(v, str) else v
                           for v in (a["grid"], a["block"]))
            stack = r.get("stack") or a.get("stack")
            out[(r["name"], a["kernel"], tuple(grid), tuple(block), a["shared memory"],
                 stack[0].split(" ")[0])] += 1
    return out


@test
def perfetto_rows_equal_the_json_of_the_same_workload():
    """gs_kernels, default events: every packet parses with Perfetto's schema, interned ids
    resolve, threads nest under their process; slices (per name and category), counters
    (and their values) and launch arguments and stacks equal the JSON trace's and the summary."""
    tmp = tempfile.mkdtemp()
    pf, js = os.path.join(tmp, "t.pftrace"), os.path.join(tmp, "t.json")
    err = record(pf, "gs_kernels")
    record(js, "gs_kernels")
    got, want = decode(pf), json_rows(load_trace(js))
    rows = [r for r in got["rows"] if r["pid"] is not None]  # not the top-level values
    expect_eq(kinds(rows), kinds(want), "rows by kind, name and category")
    expect_eq(launch_args(rows), launch_args(want), "launches' arguments and stacks")
    expect_eq(collections.Counter(k[1] for k, n in launch_args(rows).items() for _ in range(n)),
              {GEMM: 3000, RELU: 1000, SCALE: 10}, "launches per kernel (known numbers)")
    expect_eq([r["value"] for r in rows if r["ph"] == "C"],
              [r["value"] for r in want if r["ph"] == "C"], "counter values in order")
    expect_eq(len([r for r in rows if r["ph"] == "X" and r["name"] == "cudaStreamSynchronize"]),
              100, "stream synchronizations, slices with their end")
    assert all(r["dur"] >= 2_000_000 for r in rows if r["name"] == "cudaStreamSynchronize"), rows
    ts = [r["ts"] for r in rows]
    expect_eq(ts, sorted(ts), "timestamps (deltas on the incremental clock) in order")
    # the tracks: the process, its thread under it, named; the counter under the process
    pid = rows[0]["pid"]
    by_kind = collections.Counter((t["kind"], t.get("pid") == pid) for t in got["tracks"])
    expect_eq((by_kind[("process", True)], by_kind[("thread", True)],
               by_kind[("counter", True)]), (1, 1, 1), f"tracks {got['tracks']}")
    assert {t["name"] for t in got["tracks"] if t["kind"] == "thread"} == {"gs_kernels"}, got
    # the record summary counts the same rows; the metadata says nothing was lost
    assert f"      3000  {GEMM}" in err and f"      1000  {RELU}" in err, err
    md = [r for r in got["rows"] if r.get("name") == "metadata"]
    expect_eq(len(md), 1, "one metadata instant")
    expect_eq(md[0]["args"]["metadata"]["dropped_events"], 0, "dropped events")
    expect_eq(md[0]["args"]["metadata"]["events"], len(want), "metadata's event count")


@test
def perfetto_gpu_rows_and_flows():
    """-e gpu on the stand-in CUPTI: GPU kernels, copies and their launch->kernel flows as in
    the JSON of the same workload; every flow that starts ends. The GPU is a track of its own
    ("GPU 0", not a process of pid 0), its streams its children; the flows' ids are on the
    launch and kernel slices themselves (Perfetto links slices), not on instants."""
    tmp = tempfile.mkdtemp()
    pf, js = os.path.join(tmp, "g.perfetto-trace"), os.path.join(tmp, "g.json")
    record(pf, "gs_gpu", "-e", "gpu", env=gpu_env())
    record(js, "gs_gpu", "-e", "gpu", env=gpu_env())
    got, want = decode(pf), json_rows(load_trace(js))
    rows = [r for r in got["rows"] if r["pid"] is not None]  # not the top-level values
    expect_eq(kinds(rows), kinds(want), "rows by kind, name and category")
    flows = collections.Counter(r["ph"] for r in rows if r["ph"] in "sf")
    assert flows["s"] >= 30, flows
    starts = {r["id"] for r in rows if r["ph"] == "s"}
    expect_eq({r["id"] for r in rows if r["ph"] == "f"}, starts, "flow ids that end = that start")
    gpu = [r for r in rows if r.get("cat") == "kernel"]
    expect_eq(collections.Counter(r["name"] for r in gpu),
              collections.Counter(r["name"] for r in want if r.get("cat") == "kernel"),
              "GPU kernels by name")
    assert all(r["ph"] == "X" and r["dur"] > 0 for r in gpu), gpu[:3]
    tracks = got["tracks"]
    devices = [t for t in tracks if t["kind"] == "device"]
    expect_eq([t["name"] for t in devices], ["GPU 0"], "device tracks")
    streams = {t["tid"] for t in tracks if t["kind"] == "stream" and t["parent"] ==
               devices[0]["uuid"]}
    expect_eq(streams, {r["tid"] for r in want if r["pid"] == 0 and r["ph"] == "X"},
              "the device's streams, children of its track")
    assert not [t for t in tracks if t["kind"] in ("process", "thread") and t["pid"] == 0], \
        tracks
    flows = [r for r in rows if r["ph"] in "sf"]
    assert all(r.get("on_slice") for r in flows), [r for r in flows if not r.get("on_slice")]


@test
def perfetto_nvtx_ranges_equal_the_json():
    """-e nvtx on gs_nvtx: its push/pop ranges, marks and its start/end range (begun on one
    thread, ended on another: the JSON's b/e, a track of its own under the process in
    Perfetto) as in the JSON of the same workload."""
    tmp = tempfile.mkdtemp()
    pf, js = os.path.join(tmp, "n.pftrace"), os.path.join(tmp, "n.json")
    record(pf, "gs_nvtx", "-e", "nvtx,cuda-launch", env=gpu_env())
    record(js, "gs_nvtx", "-e", "nvtx,cuda-launch", env=gpu_env())
    got, want = decode(pf), json_rows(load_trace(js))
    rows = [r for r in got["rows"] if r["pid"] is not None]  # not the top-level values
    nvtx = kinds(r for r in want if r.get("cat") == "nvtx")
    expect_eq((nvtx[("b", "load", "nvtx")], nvtx[("e", "load", "nvtx")]), (1, 1),
              f"the JSON's start/end range: {nvtx}")
    expect_eq(kinds(rows), kinds(want), "rows by kind, name and category")
    ranges = [t for t in got["tracks"] if t["kind"] == "async"]
    expect_eq([(t["name"], t["pid"]) for t in ranges], [("load", rows[0]["pid"])],
              "the range's track, under its process")


@test
def perfetto_format_chosen_by_option_or_name():
    """--format beats the name; a bad one is a usage error; stitch says in one line that it
    reads JSON only."""
    tmp = tempfile.mkdtemp()
    named = os.path.join(tmp, "x.bin")
    record(named, "gs_gemm_loop", "-e", "cuda-launch", "--format", "perfetto")
    with open(named, "rb") as f:
        assert f.read(1) == b"\x0a", "a Trace's first field: packet (1, length-delimited)"
    got = decode(named)
    expect_eq(len(got["errors"]), 0, "decodes")
    js = os.path.join(tmp, "y.pftrace")
    record(js, "gs_gemm_loop", "-e", "cuda-launch", "--format", "json")
    events = load_trace(js)["traceEvents"]
    # the size target: <= 40 bytes a launch with its stack, >= 8x smaller than the JSON
    launches = [r for r in got["rows"] if r.get("name") == "cudaLaunchKernel"]
    expect_eq(len(launches), len([e for e in events if e.get("name") == "cudaLaunchKernel"]),
              "launches")
    assert len(launches) >= 1000 and all(r["stack"] for r in launches), len(launches)
    size, json_size = os.path.getsize(named), os.path.getsize(js)
    assert size / len(launches) <= 40, f"{size / len(launches):.1f} bytes a launch"
    assert json_size / size >= 8, f"JSON {json_size} bytes, Perfetto {size}"
    status, _, err = run_gpusnoop("record", "--format", "xml", "-o", js, "--", "true")
    expect_eq(status, 64, f"bad format status ({err})")
    status, out, err = run_gpusnoop("stitch", "-o", os.path.join(tmp, "s.json"), named)
    assert status != 0, (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Perfetto" in lines[0] and "--format json" in lines[0], err
    status, out, err = run_gpusnoop("stats", named)
    expect_eq(status, 65, f"stats status ({err})")
    assert len(err.strip().splitlines()) == 1 and "Perfetto" in err, err


def memory_kib(pid):
    """(VmHWM, resident KiB of the mmapped BPF maps: the ring buffers) of pid."""
    with open(f"/proc/{pid}/status") as f:
        hwm = int(re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M).group(1))
    rb, in_bpf = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                in_bpf = "bpf" in line
            elif in_bpf and line.startswith("Rss:"):
                rb += int(line.split()[1])
    return hwm, rb


def flood(path, fmt, seconds, ranks=0):
    """record -e cuda-launch,cuda-mem of a gs_bench flood (of one per rank, with ranks, each
    with its RANK: -o DIR/ makes a file of each): (its stderr, peak MiB beyond the ring
    buffers, sampled until it exits)."""
    cmd = [os.path.join(BIN, "gs_bench"), "flood", str(seconds)]
    if ranks:
        cmd = ["/usr/bin/python3", "-c", RANKS_FLOOD, str(ranks)] + cmd
    p = subprocess.Popen([GPUSNOOP, "record", "-e", "cuda-launch,cuda-mem", "--format", fmt,
                          "-o", path, "--"] + cmd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak, rb, stop = [0], [0], threading.Event()

    def watch():
        while not stop.wait(0.1):
            try:
                hwm, ring = memory_kib(p.pid)
            except (OSError, AttributeError):
                continue
            rb[0] = max(rb[0], ring)
            peak[0] = hwm
    t = threading.Thread(target=watch)
    t.start()
    try:
        _, err = p.communicate(timeout=seconds + TIMEOUT)
    finally:
        stop.set()
        t.join()
    expect_eq(p.returncode, 0, f"record status; stderr:\n{err[-2000:]}")
    return err, (peak[0] - rb[0]) / 1024


# a torchrun-like launcher: argv[1] ranks, each running the rest of argv with its RANK
RANKS_FLOOD = ("import os, subprocess, sys\n"
               "n = int(sys.argv[1])\n"
               "env = lambda r: dict(os.environ, RANK=str(r), WORLD_SIZE=str(n))\n"
               "ps = [subprocess.Popen(sys.argv[2:], env=env(r)) for r in range(n)]\n"
               "sys.exit(max(p.wait() for p in ps))\n")


@test
def record_memory_bounded_under_a_flood_of_eight_ranks():
    """-o DIR/ of eight flooding ranks, a file each: one bound for all their reorder windows
    (16 MiB, not 16 MiB a file): record's peak resident memory beyond its ring buffers stays
    under 48 MiB (about 36 here; 64 with a cap per file), and each file's metadata gives the
    windows' peak together, under the cap."""
    out_dir = os.path.join(tempfile.mkdtemp(), "ranks") + "/"
    err, mib = flood(out_dir, "json", 3, ranks=8)
    assert mib < 48, f"{mib:.1f} MiB beyond the ring buffers"
    expect_eq(sorted(os.listdir(out_dir)), [f"rank-{r}.json" for r in range(8)], "files")
    events = 0
    for r in range(8):
        md = load_trace(os.path.join(out_dir, f"rank-{r}.json"))["metadata"]
        reorder = md["reorder"]
        assert reorder["peak_held_bytes"] <= reorder["max_held_bytes"] + 65536, reorder
        events = md["events"]
    assert events > 30000, f"a flood: {events} events"


@test
def record_memory_bounded_under_a_launch_flood():
    """gs_bench flood (launches, mallocs and frees as fast as it can, a few hundred thousand
    events a second here), JSON then Perfetto: record's peak resident memory beyond its ring
    buffers stays under 64 MiB, the reorder window under its byte cap (it would hold 500 ms:
    hundreds of MB at a flood's rate), nothing lost that is not counted."""
    tmp = tempfile.mkdtemp()
    js, pf = os.path.join(tmp, "f.json"), os.path.join(tmp, "f.pftrace")
    err, mib = flood(js, "json", 3)
    assert mib < 64, f"JSON: {mib:.1f} MiB beyond the ring buffers"
    md = load_trace(js)["metadata"]
    r = md["reorder"]
    assert r["peak_held_bytes"] <= r["max_held_bytes"] + 65536, r
    m = re.search(r"record: (\d+) events in [\d.]+ s, (\d+) dropped", err)
    assert m, err
    expect_eq((int(m.group(1)), int(m.group(2))), (md["events"], md["dropped_events"]),
              "summary's events and drops = the metadata's")
    assert md["events"] > 30000, f"a flood: {md['events']} events"
    err, mib = flood(pf, "perfetto", 3)
    assert mib < 64, f"Perfetto: {mib:.1f} MiB beyond the ring buffers"
    with open(pf, "rb") as f:
        assert f.read(1) == b"\x0a", "a Perfetto trace"
    os.unlink(js)
    os.unlink(pf)


if __name__ == "__main__":
    sys.exit(main())
