#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_floods.py: a unique-stack flood stays bounded: stacks and failure groups per process."""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, MiB, Gpusnoop, Workload, expect_eq, main, process, test  # noqa: E402
from test_daemon import OOM_ENV, Daemon  # noqa: E402

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}


def flood_report(n, mode, gs_args=()):
    """gs_flood's n calls from n distinct call paths under `leaks -p`; its final JSON report."""
    w = Workload("gs_flood", env=dict(NO_DRIVER, GS_FLOOD_N=str(n), GS_FLOOD_MODE=mode))
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json", "--top", "0", *gs_args)
    try:
        g.wait_tracing()
        w.release()
        line = w.wait_line("flooded")
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()[-2000:]})")
        reports = g.reports()
        expect_eq([r["report"] for r in reports], ["final"], "reports written")
        return line, process(reports[0], w.pid), reports[0]
    finally:
        g.kill()
        w.finish()


def other_stacks(proc):
    return [s for s in proc["stacks"]
            if [f.get("symbol") for f in s["frames"]] == ["[other stacks]"]]


@test
def stacks_past_the_cap_are_one_counted_other():
    # 3000 kept allocations, each from its own call path; 1000 stacks kept, 2000 folded
    line, proc, report = flood_report(3000, "keep", ("--max-stacks", "1000"))
    expect_eq(line, "flooded 3000 ok 0 failed", "workload")
    expect_eq(report["dropped_events"], 0, "dropped events")
    expect_eq(proc["outstanding_allocations"], 3000, "outstanding allocations")
    expect_eq(proc["stacks_total"], 1001, "stacks: 1000 kept and the other")
    other = other_stacks(proc)
    expect_eq(len(other), 1, "one [other stacks] entry")
    expect_eq((other[0]["allocations"], other[0]["bytes"]), (2000, 2000), "[other stacks] counts")
    expect_eq(other[0]["frames"][0]["kind"], "marker", "[other stacks] frame kind")
    kept = [s for s in proc["stacks"] if s not in other]
    expect_eq(sorted({s["allocations"] for s in kept}), [1], "each kept stack: one allocation")
    expect_eq(kept[0]["frames"][0]["symbol"], "alloc_here", "kept stacks are symbolized")


@test
def failure_groups_past_the_cap_are_one_counted_other():
    # 1500 failures from 1500 call paths: 1024 groups kept, 476 in "[other failures]"
    line, proc, report = flood_report(1500, "fail")
    expect_eq(line, "flooded 0 ok 1500 failed", "workload")
    expect_eq(report["dropped_events"], 0, "dropped events")
    expect_eq(proc["failed_allocations"], 1500, "failed allocations")
    fails = proc["failures"]
    expect_eq(len(fails), 1025, "failure groups: 1024 and the other")
    expect_eq(fails[-1]["api"], "[other failures]", "folded group last")
    expect_eq((fails[-1]["count"], fails[-1]["bytes_requested"]), (476, 476 << 40),
              "[other failures] counts")
    expect_eq(sorted({f["count"] for f in fails[:-1]}), [1], "each kept group: one failure")
    expect_eq(fails[0]["error"], 2, "error of a kept group")


@test
def user_over_its_share_is_dropped_not_others():
    # -a with a 1 MiB buffer and the reader stopped: uid 4321's flood stops at its share, so
    # uid 4322's OOM still fits, and the report says who lost what, and in which window
    tmp = tempfile.mkdtemp(prefix="gs-floods-")
    os.chmod(tmp, 0o755)
    out = os.path.join(tmp, "leaks.json")
    g = Gpusnoop("leaks", "-a", "--ringbuf", "1", "--format", "json", "-o", out)
    flooders, oom = [], None
    try:
        g.wait_tracing()
        flooders = start_flooders(2, "free")
        time.sleep(1)  # flooding, the reader keeping up
        os.kill(g.proc.pid, signal.SIGSTOP)
        time.sleep(1)  # the buffer fills up to the flooding user's share
        oom = subprocess.Popen([os.path.join(BIN, "gs_oom")], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=dict(os.environ, **OOM_ENV),
                               preexec_fn=as_user(FLOOD_UID + 1))
        oom_out, oom_err = oom.communicate(timeout=30)
        assert b"oom 2" in oom_out, (oom_out, oom_err)
        for p in flooders:
            p.kill()
            p.wait()
        flooders = []
        os.kill(g.proc.pid, signal.SIGCONT)
        time.sleep(1)
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()[-2000:]})")
        with open(out) as f:
            reports = [json.loads(line) for line in f if line.startswith("{")]
        mine = [r for r in reports for p in r["processes"]
                if p["pid"] == oom.pid and r["report"] == "exit"]
        expect_eq(len(mine), 1, "the OOM process's exit report: " + repr(
            [(r["monotonic_ns"], [(q["pid"], q["comm"], q["outstanding_allocations"],
                                   q["failed_allocations"]) for q in r["processes"]])
             for r in mine]))
        p = process(mine[0], oom.pid)
        expect_eq((p["outstanding_bytes"], p["outstanding_allocations"],
                   p["failed_allocations"]), (96 * MiB, 3, 1),
                  f"what it held and its OOM (lost {reports[-1]['lost']})")
        final = reports[-1]
        assert final["lost"]["uid_over_share"] > 0, final["lost"]
        expect_eq(sum(r["window_lost_events"] for r in reports), final["dropped_events"],
                  "every loss in one report's window")
    finally:
        for p in flooders:
            p.kill()
            p.wait()
        if g.proc.poll() is None:
            os.kill(g.proc.pid, signal.SIGCONT)
        g.kill()
        if oom and oom.poll() is None:
            oom.kill()


if __name__ == "__main__":
    main()


FLOOD_UID = 4321
RSS_BOUND_MB = 250  # the issue saw 139 -> 762 MB in 20 s (old main here: 559 MB in 12 s)


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


def ctl_raw(sock_path, request):
    """One control request on a raw socket (no client process to start): (reply, seconds)."""
    t0 = time.monotonic()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(sock_path)
        s.sendall(request.encode() + b"\n")
        chunks = []
        while True:
            c = s.recv(65536)
            if not c:
                break
            chunks.append(c)
    return b"".join(chunks).decode(), time.monotonic() - t0


def as_user(uid, nice=0):
    def become():
        os.nice(nice)
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return become


def start_flooders(n, mode="fail"):
    """n gs_flood processes of FLOOD_UID, each calling cudaMalloc from ever new call paths."""
    # niced: the bound is on the daemon's loop, not on a 2-core machine's scheduler
    as_flood_user = as_user(FLOOD_UID, 19)
    env = dict(os.environ, GS_FLOOD_N="1000000000", GS_FLOOD_MODE=mode, **NO_DRIVER)
    return [subprocess.Popen([os.path.join(BIN, "gs_flood")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, env=env, preexec_fn=as_flood_user)
            for _ in range(n)]


@test
def daemon_soak_flood_of_one_user_hides_no_oom_of_another():
    d = Daemon()
    w = None
    flooders = []
    try:
        w = Workload("gs_oom", env=OOM_ENV)  # root's, held until the flood runs
        d.wait_probed()
        rss_start = rss_mb(d.g.proc.pid)
        flooders = start_flooders(2)
        latencies, rss_max = [], rss_start
        end = time.monotonic() + 12
        released = False
        while time.monotonic() < end:
            reply, secs = ctl_raw(d.sock, "status")
            assert reply.startswith("gpusnoop daemon"), reply
            latencies.append(secs)
            rss_max = max(rss_max, rss_mb(d.g.proc.pid))
            if not released and time.monotonic() > end - 8:
                w.release()  # root's OOM, in the middle of the flood
                released = True
            time.sleep(0.05)
        w.wait_line("oom 2")
        deadline = time.monotonic() + 5
        while not d.reports(f"cuda-oom-{w.pid}-*.json") and time.monotonic() < deadline:
            time.sleep(0.05)
        files = d.reports(f"cuda-oom-{w.pid}-*.json")
        expect_eq(len(files), 1, "root's OOM report written during the flood")
        with open(files[0]) as f:
            report = json.load(f)
        t = report["trigger"]
        expect_eq((t["kind"], t["pid"], t["error"]), ("cuda-oom", w.pid, 2), "trigger")
        p = report["processes"][0]
        expect_eq((p["pid"], p["outstanding_bytes"], p["outstanding_allocations"]),
                  (w.pid, 96 * MiB, 3), "what root's process held at its OOM")
        assert "window_lost_events" in report, report.keys()
        for p in flooders:
            assert p.poll() is None, "flooders ran the whole time"
        # the daemon stopped a while (as if busy): the flood fills the buffer to its share
        os.kill(d.g.proc.pid, signal.SIGSTOP)
        try:
            for p in flooders:  # at full speed now: past half of the buffer within seconds
                os.setpriority(os.PRIO_PROCESS, p.pid, 0)
            time.sleep(3)
        finally:
            os.kill(d.g.proc.pid, signal.SIGCONT)
        status_reply, _ = ctl_raw(d.sock, "status")
        lost = int(re.search(r"(\d+) events lost", status_reply).group(1))
        over = re.findall(r"^user (\d+): (\d+) events dropped", status_reply, re.M)
        print(f"    ctl status max {max(latencies) * 1000:.1f} ms over {len(latencies)} "
              f"(slowest {[round(x * 1000) for x in sorted(latencies)[-5:]]}), "
              f"RSS {rss_start:.0f} -> max {rss_max:.0f} MB, lost {lost}, over share {over}")
        # under 0.1 s (the old loop took 1.8 s); the test's own client shares the 2 CPUs with
        # the flood, so one answer in a hundred may wait for the scheduler, never for long
        slow = [x for x in latencies if x >= 0.1]
        assert len(slow) * 100 <= len(latencies) and max(latencies) < 0.25, \
            f"ctl status: {len(slow)} of {len(latencies)} >= 0.1 s, max {max(latencies):.3f} s"
        assert rss_max < RSS_BOUND_MB, f"daemon RSS {rss_max:.0f} MB"
        assert lost > 0 and str(FLOOD_UID) in [u for u, _ in over], status_reply
        # a non-root user sees its own line only
        status, out, err = d.ctl("status", uid=FLOOD_UID)
        expect_eq((status, re.findall(r"^user (\d+):", out, re.M)), (0, [str(FLOOD_UID)]),
                  f"the flooding user's own status ({err})")
        for p in flooders:
            p.kill()
            p.wait()
        flooders = []
        d.stop()
    finally:
        for p in flooders:
            p.kill()
            p.wait()
        d.g.kill()
        if w:
            w.kill()
