#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_daemon_perfetto.py: the daemon's traces in Perfetto's format (trace-format perfetto, ctl
record --format perfetto), decoded with Perfetto's schema and compared with the JSON ones; the
daemon's children get its ring buffer size."""
import gzip
import json
import os
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import expect_eq, main, test
from test_daemon import Daemon, config_file, oom_workload
from test_daemon_profile import http_get
from test_perfetto import decode, json_rows, kinds


def flight_trace(d, ext):
    """The flight-recorder trace of the OOM of a gs_oom run under d, once written: its path."""
    w = oom_workload(d)
    try:
        deadline = time.monotonic() + 10
        while not d.reports("cuda-oom-*" + ext) and time.monotonic() < deadline:
            time.sleep(0.05)
        traces = d.reports("cuda-oom-*" + ext)
        expect_eq(len(traces), 1, f"one {ext} flight trace ({os.listdir(d.out)})")
        return traces[0], w.pid
    finally:
        w.kill()


@test
def daemon_perfetto_oom_trace_has_the_json_traces_rows():
    """trace-format perfetto: the OOM report's flight trace is a .pftrace that Perfetto's schema
    decodes, with the slices (by name and category), counter values and trigger of the JSON
    trace of the same run, and the window's losses in its metadata."""
    _, conf = config_file("gs-daemon-pf-", "trace-format perfetto\n")
    d = Daemon("--config", conf)
    try:
        pf, _ = flight_trace(d, ".pftrace")
        assert not d.reports("cuda-oom-*.trace.json"), "no JSON trace beside it"
        d.stop()
    finally:
        d.g.kill()
    d = Daemon()
    try:
        js, _ = flight_trace(d, ".trace.json")
        d.stop()
    finally:
        d.g.kill()
    got = decode(pf)
    with open(js) as f:
        trace = json.load(f)
    want = json_rows(trace)
    rows = [r for r in got["rows"] if r["pid"] is not None]
    expect_eq(kinds(rows), kinds(want), "rows by kind, name and category")
    expect_eq(sum(n for (ph, _, _), n in kinds(rows).items() if ph == "X"), 4,
              "the window's calls: three allocations and the failed one")
    expect_eq([r["value"] for r in rows if r["ph"] == "C"],
              [r["value"] for r in want if r["ph"] == "C"], "counter values in order")
    md = [r for r in got["rows"] if r.get("name") == "metadata"]
    expect_eq(len(md), 1, "one metadata instant")
    meta = md[0]["args"]["metadata"]
    for key in ("dropped_events", "lost", "window_lost_events", "window_start_ns"):
        assert key in meta and key in trace["metadata"], (key, meta, trace["metadata"])
    expect_eq((meta["window_lost_events"], meta["events"]), (0, 4), "window losses, events")


def child_cmdline(parent, word="record"):
    """The argv of parent's `gpusnoop WORD` child while it runs, or None."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().decode().split("\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent and word in argv:
            return argv
    return None


def wait_child(parent, word):
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        argv = child_cmdline(parent, word)
        if argv:
            return argv
        time.sleep(0.02)
    raise AssertionError(f"the daemon's {word} child never seen")


@test
def daemon_ctl_record_perfetto_with_the_daemons_ring_buffer():
    """ctl record --format perfetto: a .pftrace.gz that Perfetto's schema decodes, recorded by
    a child given the daemon's ringbuf setting (a profile's child too); a malformed request is
    a usage error (64)."""
    _, conf = config_file("gs-daemon-pf-", "ringbuf 16\n")
    d = Daemon("--config", conf)
    w = None
    try:
        w = oom_workload(d)
        status, out, err = d.ctl("record", str(w.pid), "2", "cuda-mem", "--format", "perfetto")
        expect_eq(status, 0, f"ctl record ({err})")
        path = out.strip()
        assert path.endswith(".pftrace.gz"), path
        argv = wait_child(d.g.proc.pid, "record")
        expect_eq((argv[argv.index("--ringbuf") + 1], argv[argv.index("--format") + 1]),
                  ("16", "perfetto"), f"the recording's ring buffer and format ({argv})")
        # a CPU profile asked over HTTP: its child too
        profile = threading.Thread(target=http_get, args=(
            d.metrics_url.replace("/metrics", "/debug/pprof/profile?seconds=1"),))
        profile.start()
        argv = wait_child(d.g.proc.pid, "profile")
        profile.join(90)
        expect_eq(argv[argv.index("--ringbuf") + 1], "16", f"the profile's ring buffer ({argv})")
        d.g.wait_stderr(f"recording done: {path}", timeout=90)
        tmp = os.path.join(tempfile.mkdtemp(), "t.pftrace")
        with gzip.open(path) as src, open(tmp, "wb") as dst:
            dst.write(src.read())
        got = decode(tmp)
        md = [r for r in got["rows"] if r.get("name") == "metadata"]
        expect_eq((len(md), md[0]["args"]["metadata"]["tool"]), (1, "gpusnoop"), "metadata")

        status, out, err = d.ctl("record", str(w.pid), "2", "--format", "pb")
        expect_eq((status, out), (64, ""), f"ctl record --format pb ({err})")
        assert "record json or perfetto" in err, err
        status, out, err = d.ctl("record", str(w.pid), "nan")
        expect_eq((status, out), (64, ""), f"ctl record with a bad length ({err})")
        assert "'nan' is not a recording length" in err, err
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


if __name__ == "__main__":
    main()
