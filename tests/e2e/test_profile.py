#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_profile.py: `gpusnoop profile` and `record -e cpu` sampling real fixture processes."""
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
from harness import (BIN, Gpusnoop, Skip, Workload, expect_eq, main, run_gpusnoop,
                     test)

BURN = os.path.join(BIN, "gs_burn")
HZ = 499
# gs_burn runs burn_a for 3 units of iterations per 1 of burn_b, same loop body: 3/4 of
# its CPU time is burn_a's. Samples are a binomial draw of that share: with at least
# MIN_SAMPLES of them its standard deviation is at most sqrt(.75*.25/300) = 0.025, so a
# band of +-0.08 fails a correct profiler with odds below 1 in 10,000, while a wrong
# attribution (1:1 would be 0.5, 1:3 would be 0.25) falls far outside it.
SHARE_A = 0.75
SHARE_TOLERANCE = 0.08
MIN_SAMPLES = 300


def tmp_path(name):
    return os.path.join(tempfile.mkdtemp(prefix="gs-profile-"), name)


def parse_folded(text):
    """[(frames outermost first, count)]; every line must be well formed."""
    out = []
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit() and int(count) > 0, f"bad folded line {line!r}"
        out.append((stack.split(";"), int(count)))
    return out


def innermost_user(frames):
    """The innermost frame that is not a kernel one (kernel frames end in _[k])."""
    user = [f for f in frames[1:] if not f.endswith("_[k]")]
    return user[-1] if user else None


def burn_counts(stacks, comm="gs_burn"):
    """{leaf function: samples} over the stacks of comm whose innermost user frame is a burner."""
    out = collections.Counter()
    at_edges = 0
    for frames, count in stacks:
        if frames[0] != comm:
            continue
        leaf = innermost_user(frames)
        if leaf in ("burn_a", "burn_b"):
            out[leaf] += count
            # the callers come from the frame-pointer chain: main called both. A sample on a
            # burner's first or last instructions (its frame not yet made, or gone) skips
            # main, as perf's frame-pointer stacks do: rare, but not an error
            caller = frames[frames.index(leaf) - 1]
            assert caller in ("main", "__libc_start_call_main"), frames
            at_edges += count if caller != "main" else 0
    assert at_edges <= max(2, sum(out.values()) // 20), f"{at_edges} samples skip main: {stacks}"
    return out


def expect_shares(counts, what):
    total = counts["burn_a"] + counts["burn_b"]
    assert total >= MIN_SAMPLES, f"{what}: only {total} burner samples: {counts}"
    share = counts["burn_a"] / total
    assert abs(share - SHARE_A) <= SHARE_TOLERANCE, \
        f"{what}: burn_a has {share:.3f} of the samples, want {SHARE_A}+-{SHARE_TOLERANCE}"


def summary_total(stderr):
    m = re.search(r"profile: (\d+) samples in (\d+) stacks \((cycles|cpu-clock)\)", stderr)
    assert m, stderr
    return int(m.group(1))


# ---- pprof: a protobuf wire-format reader, independent of gpusnoop's encoder ----

def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 2:
            n, i = _varint(b, i)
            v = b[i:i + n]
            assert len(v) == n, "truncated field"
            i += n
        else:
            raise AssertionError(f"unexpected wire type {wire}")
        yield field, wire, v


def _repeated(wire, v):
    if wire == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = _varint(v, i)
        out.append(x)
    return out


def read_pprof(path):
    """The gzip-compressed profile.proto at path, as plain Python values."""
    with open(path, "rb") as f:
        raw = f.read()
    assert raw[:2] == b"\x1f\x8b", "pprof output must be gzip-compressed"
    data = gzip.decompress(raw)
    p = {"sample_type": [], "samples": [], "locations": {}, "functions": {}, "mappings": {},
         "strings": [], "period": 0, "period_type": None}
    for field, wire, v in _fields(data):
        if field in (1, 11):
            vt = {f: x for f, _, x in _fields(v)}
            vt = (vt.get(1, 0), vt.get(2, 0))
            if field == 1:
                p["sample_type"].append(vt)
            else:
                p["period_type"] = vt
        elif field == 2:
            s = {"loc": [], "val": [], "labels": []}
            for f, w, x in _fields(v):
                if f == 1:
                    s["loc"] += _repeated(w, x)
                elif f == 2:
                    s["val"] += _repeated(w, x)
                elif f == 3:
                    s["labels"].append({g: y for g, _, y in _fields(x)})
            p["samples"].append(s)
        elif field == 3:
            m = {f: x for f, _, x in _fields(v)}
            p["mappings"][m[1]] = m
        elif field == 4:
            loc, lines = {}, []
            for f, _, x in _fields(v):
                if f == 4:
                    lines.append({g: y for g, _, y in _fields(x)})
                else:
                    loc[f] = x
            loc["lines"] = lines
            p["locations"][loc[1]] = loc
        elif field == 5:
            fn = {f: x for f, _, x in _fields(v)}
            p["functions"][fn[1]] = fn
        elif field == 6:
            p["strings"].append(v.decode())
        elif field == 12:
            p["period"] = v
    return p


def pprof_stacks(p):
    """The samples as folded-style stacks: [(comm + function names outermost first, count)]."""
    s = p["strings"]
    key = {name: i for i, name in enumerate(s)}
    out = []
    for sample in p["samples"]:
        names = []
        for loc_id in sample["loc"]:
            loc = p["locations"][loc_id]
            names.append(s[p["functions"][loc["lines"][0][1]][2]] if loc["lines"] else "?")
        comm = [s[l[2]] for l in sample["labels"] if l[1] == key["comm"]]
        out.append(([comm[0]] + names[::-1], sample["val"][0]))
    return out


def expect_valid_pprof(p, hz):
    s = p["strings"]
    expect_eq(s[0], "", "string_table[0]")
    expect_eq([(s[a], s[b]) for a, b in p["sample_type"]],
              [("samples", "count"), ("cpu", "nanoseconds")], "sample types")
    expect_eq((s[p["period_type"][0]], s[p["period_type"][1]]), ("cpu", "nanoseconds"),
              "period type")
    expect_eq(p["period"], 10**9 // hz, "period")
    for sample in p["samples"]:
        expect_eq(len(sample["val"]), 2, "values per sample")
        expect_eq(sample["val"][1], sample["val"][0] * p["period"], "cpu ns of a sample")
        for loc_id in sample["loc"]:
            assert loc_id in p["locations"], loc_id
    for loc in p["locations"].values():
        assert loc.get(2, 0) == 0 or loc[2] in p["mappings"], loc
        for line in loc["lines"]:
            assert line[1] in p["functions"], loc
    return sum(sample["val"][0] for sample in p["samples"])


@test
def profile_command_names_burners_with_their_shares():
    out = tmp_path("burn.folded")
    status, _, err = run_gpusnoop("profile", "-F", str(HZ), "-o", out, "--", BURN, timeout=120)
    expect_eq(status, 0, f"status ({err})")
    # the event in use is said: cycles where the PMU has them, else cpu-clock
    assert re.search(rf"sampling \d+ CPUs at {HZ} Hz \((cycles|cpu-clock)\)", err), err
    if not os.path.exists("/sys/bus/event_source/devices/cpu"):
        assert "no hardware cycles counter" in err and "cpu-clock" in err, err
    with open(out) as f:
        stacks = parse_folded(f.read())
    expect_shares(burn_counts(stacks), "folded")
    expect_eq(sum(c for _, c in stacks), summary_total(err), "folded total vs summary")


@test
def profile_pprof_decodes_and_adds_up():
    out = tmp_path("burn.pb.gz")
    status, _, err = run_gpusnoop("profile", "-F", str(HZ), "--format", "pprof", "-o", out,
                                  "--", BURN, timeout=120)
    expect_eq(status, 0, f"status ({err})")
    p = read_pprof(out)
    total = expect_valid_pprof(p, HZ)
    expect_eq(total, summary_total(err), "pprof sample total vs summary")
    stacks = pprof_stacks(p)
    expect_shares(burn_counts(stacks), "pprof")
    # every sample is labelled with its process; the burner's are all one pid
    s = p["strings"]
    pids = {l[3] for sample in p["samples"] for l in sample["labels"] if s[l[1]] == "pid"}
    assert len(pids) >= 1 and all(pid > 0 for pid in pids), pids
    files = {s[m[5]] for m in p["mappings"].values()}
    assert BURN in files, files


@test
def profile_pid_stops_on_sigint_with_complete_output():
    w = Workload("gs_burn", env={"GS_BURN_ROUNDS": "1000000"})
    try:
        for fmt, name in (("folded", "p.folded"), ("pprof", "p.pb.gz")):
            out = tmp_path(name)
            g = Gpusnoop("profile", "-p", str(w.pid), "-F", str(HZ), "--format", fmt, "-o", out)
            try:
                g.wait_stderr("profiling at")
                if fmt == "folded":
                    w.release()
                # collect a few hundred samples; the counts are checked, not the time
                time.sleep(2)
                expect_eq(g.stop(signal.SIGINT), 0, f"{fmt} status ({g.stderr_text()})")
            finally:
                g.kill()
            total = summary_total(g.stderr_text())
            if fmt == "folded":
                with open(out) as f:
                    stacks = parse_folded(f.read())
            else:
                p = read_pprof(out)
                expect_eq(expect_valid_pprof(p, HZ), total, "pprof total")
                stacks = pprof_stacks(p)
            expect_eq(sum(c for _, c in stacks), total, f"{fmt} total vs summary")
            # only the target: every stack is the burner's
            expect_eq({frames[0] for frames, _ in stacks}, {"gs_burn"}, f"{fmt} comms")
            counts = burn_counts(stacks)
            assert counts["burn_a"] > 0 and counts["burn_b"] > 0, counts
    finally:
        w.kill()


def cgroup2_root():
    with open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if parts[2] == "cgroup2":
                return parts[1]
    return None


@test
def profile_cgroup_keeps_only_its_tasks():
    root = cgroup2_root()
    if not root:
        raise Skip("no cgroup v2 hierarchy mounted")
    cg = os.path.join(root, f"gs_profile_test_{os.getpid()}")
    os.mkdir(cg)
    inside = outside = None
    try:
        inside = Workload("gs_burn", env={"GS_BURN_ROUNDS": "1000000"})
        outside = Workload("gs_burn", env={"GS_BURN_ROUNDS": "1000000"})
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(inside.pid))
        inside.release()
        outside.release()
        out = tmp_path("cg.pb.gz")
        # --cgroup alone: every process, restricted to the cgroup
        status, _, err = run_gpusnoop("profile", "--cgroup", cg, "-F", str(HZ), "-d", "2",
                                      "--format", "pprof", "-o", out, timeout=60)
        expect_eq(status, 0, f"status ({err})")
        p = read_pprof(out)
        s = p["strings"]
        pids = collections.Counter()
        for sample in p["samples"]:
            for l in sample["labels"]:
                if s[l[1]] == "pid":
                    pids[l[3]] += sample["val"][0]
        expect_eq(set(pids), {inside.pid}, "pids sampled in the cgroup")
        assert pids[inside.pid] >= 50, pids
    finally:
        for w in (inside, outside):
            if w:
                w.kill()
        os.rmdir(cg)


@test
def profile_bad_arguments_one_line_each():
    cases = [  # usage errors exit 64 (EX_USAGE); what only the run finds, 1
        (["-a", "-F", "0"], "invalid frequency '0'", 64),
        (["-a", "-F", "abc"], "invalid frequency 'abc'", 64),
        (["-a", "-F", "100000000"], "invalid frequency '100000000'", 64),
        (["--cgroup", "/nonexistent/cgroup"], "cgroup /nonexistent/cgroup: No such file", 1),
        (["--cgroup", "/tmp"], "cgroup /tmp: not a cgroup v2 directory", 1),
    ]
    for args, want, want_status in cases:
        out = tmp_path("never.folded")
        status, stdout, err = run_gpusnoop("profile", *args, "-d", "1", "-o", out)
        expect_eq(status, want_status, f"status of {args}")
        lines = err.strip().splitlines()
        expect_eq(len(lines), 1, f"stderr lines of {args}: {lines}")
        assert want in lines[0], (args, lines)
        expect_eq(stdout, "", f"stdout of {args}")
        assert not os.path.exists(out), f"{args} wrote {out}"


@test
def profile_all_sees_a_burner():
    w = Workload("gs_burn", env={"GS_BURN_ROUNDS": "1000000"})
    try:
        w.release()
        out = tmp_path("all.folded")
        status, _, err = run_gpusnoop("profile", "-a", "-F", str(HZ), "-d", "2", "-o", out,
                                      timeout=60)
        expect_eq(status, 0, f"status ({err})")
        with open(out) as f:
            stacks = parse_folded(f.read())
        counts = burn_counts(stacks)
        assert counts["burn_a"] > 0, counts
        # other processes are there too: at least the kernel's own threads or gpusnoop
        assert len({frames[0] for frames, _ in stacks}) >= 2, stacks[:5]
    finally:
        w.kill()


def load_trace(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def expect_ordered(trace):
    """Written in timestamp order, except the events counted late."""
    ts = [e["ts"] for e in trace["traceEvents"] if e["ph"] != "M"]
    backwards = sum(1 for a, b in zip(ts, ts[1:]) if b < a)
    assert backwards <= trace["metadata"]["reorder"]["late_events"], backwards


@test
def record_cpu_samples_inside_spinning_syncs():
    out = tmp_path("sync.json")
    status, _, err = run_gpusnoop("record", "-e", "cpu,cuda-sync", "-F", str(HZ), "-o", out,
                                  "--", os.path.join(BIN, "gs_kernels"), timeout=120,
                                  env={"GS_FAKE_SYNC_SPIN": "1", "GS_FAKE_SYNC_US": "20000"})
    expect_eq(status, 0, f"status ({err})")
    trace = load_trace(out)
    md = trace["metadata"]
    events = trace["traceEvents"]
    samples = [e for e in events if e["ph"] == "i"]
    syncs = [e for e in events if e["ph"] == "X" and e["name"] == "cudaStreamSynchronize"]
    expect_eq(len(syncs), 100, "stream synchronizations")
    expect_eq(md["cpu_sampling"]["samples"], len(samples), "samples in metadata")
    expect_eq(md["cpu_sampling"]["frequency_hz"], HZ, "frequency")
    expect_eq(md["dropped_events"], 0, "dropped")
    expect_ordered(trace)
    for e in samples:
        expect_eq((e["cat"], e["s"]), ("cpu_sample", "t"), "sample kind")
        assert isinstance(e["args"]["cpu"], int), e
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert all((e["pid"], e["tid"]) in named for e in samples), "samples on unnamed tracks"

    inside = []
    syncs_with_samples = 0
    for s in syncs:
        mine = [e for e in samples if e["tid"] == s["tid"] and
                s["ts"] <= e["ts"] <= s["ts"] + s["dur"]]
        syncs_with_samples += bool(mine)
        inside += mine
    # each spin lasts 20 ms: about 10 samples at 499 Hz while the thread is on a CPU
    assert syncs_with_samples >= 80, f"only {syncs_with_samples} of 100 syncs have samples"
    in_sync = [e for e in inside
               if any(f.startswith("cudaStreamSynchronize+") for f in e["args"]["stack"])]
    spinning = [e for e in in_sync if e["name"] == "fake_sync_spin"]
    # a sample inside the slice is the thread inside the call: its stack says so
    assert len(in_sync) >= 0.9 * len(inside), (len(in_sync), len(inside))
    assert len(spinning) >= 0.8 * len(inside), (len(spinning), len(inside))
    assert spinning[0]["args"]["stack"][0].startswith("fake_sync_spin+"), spinning[0]
    # and the caller of the sync is the workload's function
    stack = spinning[0]["args"]["stack"]
    i = next(k for k, f in enumerate(stack) if f.startswith("cudaStreamSynchronize+"))
    assert stack[i + 1].startswith("sync_streams+"), stack


@test
def record_cpu_only_sigterm_without_cuda():
    w = Workload("gs_burn", env={"GS_BURN_ROUNDS": "1000000"})
    out = tmp_path("cpu.json.gz")
    try:
        g = Gpusnoop("record", "-e", "cpu", "-F", str(HZ), "-p", str(w.pid), "-o", out)
        try:
            g.wait_stderr("recording")
            w.release()
            time.sleep(1.5)
            expect_eq(g.stop(signal.SIGTERM), 0, f"status ({g.stderr_text()})")
        finally:
            g.kill()
    finally:
        w.kill()
    assert "no target loaded a CUDA library" not in g.stderr_text(), g.stderr_text()
    trace = load_trace(out)
    samples = [e for e in trace["traceEvents"] if e["ph"] == "i"]
    assert samples, "no samples"
    expect_eq({e["pid"] for e in samples}, {w.pid}, "sampled pids")
    names = collections.Counter(e["name"] for e in samples)
    assert names["burn_a"] > 0 and names["burn_b"] > 0, names
    procs = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    expect_eq(procs.get(w.pid), "gs_burn", "process name")
    expect_eq(trace["metadata"]["cpu_sampling"]["samples"], len(samples), "metadata samples")
    expect_ordered(trace)


@test
def record_bad_frequency():
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "-3", "-d", "1", "-a")
    expect_eq(status, 64, "status: a usage error")
    lines = err.strip().splitlines()
    expect_eq(len(lines), 1, f"stderr {lines}")
    assert "invalid frequency '-3'" in lines[0], lines
    status, _, err = run_gpusnoop("record", "-F", "99", "-d", "1", "-a")
    expect_eq(status, 64, "status of -F without -e cpu: a usage error")
    assert "needs -e cpu" in err, err


if __name__ == "__main__":
    sys.exit(main())
