#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_daemon_losses.py: under one process's flood the daemon loses events, and says so."""
import json
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import MiB, Workload, expect_eq, main, test  # noqa: E402
from test_daemon import OOM_ENV, Daemon, config_file  # noqa: E402
from test_floods import FLOOD_UID, start_flooders  # noqa: E402

RINGBUF_TYPE = 27  # BPF_MAP_TYPE_RINGBUF in /proc/PID/fdinfo


def ring_sizes(pid):
    """The sizes of the ring buffers pid holds (from its descriptors' fdinfo)."""
    sizes = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        except OSError:
            continue
        if info.get("map_type", "").strip() == str(RINGBUF_TYPE):
            sizes.add(int(info["max_entries"]))
    return sizes


LOST = re.compile(r'^gpusnoop_events_lost_total\{reason="([a-z_]+)"\} (\d+)$', re.M)


@test
def daemon_flood_loses_events_visibly_and_keeps_another_oom():
    # a 1 MiB buffer (ringbuf): the flood fills it while the daemon is held
    _, conf = config_file("gs-dloss-", "ringbuf 1\n")
    d = Daemon("--config", conf)
    w = None
    flooders = []
    try:
        # the event buffer as asked; the OOM signals' own stays 256 KiB
        expect_eq(ring_sizes(d.g.proc.pid), {MiB, 256 << 10}, "ring buffer sizes")
        w = Workload("gs_oom", env=OOM_ENV)  # root's, held until the flood runs
        d.wait_probed()
        flooders = start_flooders(1, mode="free")  # allocates and frees as fast as it can
        time.sleep(1)
        # the daemon stopped a while (as if busy): the flood overflows the 1 MiB buffer
        os.kill(d.g.proc.pid, signal.SIGSTOP)
        try:
            for p in flooders:
                os.setpriority(os.PRIO_PROCESS, p.pid, 0)
            w.release()  # root's OOM, in the middle of the flood
            w.wait_line("oom 2")
            time.sleep(2)
        finally:
            os.kill(d.g.proc.pid, signal.SIGCONT)
        line = d.g.wait_stderr(f"cuda-oom: report")
        assert f"pid {w.pid}" in line, line
        with open(d.reports(f"cuda-oom-{w.pid}-*.json")[0]) as f:
            report = json.load(f)
        p = report["processes"][0]
        expect_eq((p["pid"], p["outstanding_bytes"], p["outstanding_allocations"]),
                  (w.pid, 96 * MiB, 3), "what root's process held at its OOM")
        window = report["window_lost_events"]
        assert window > 0, f"the report's window lost events: {window}"
        with open(d.reports(f"cuda-oom-{w.pid}-*.txt")[0]) as f:
            text = f.read()
        assert (f"WARNING: {window} events lost in this report's window" in text), text
        # one line, with counts by kind, at once; no second within the minute
        logged = d.g.wait_stderr("events lost:")
        kinds = dict((k, int(n)) for k, n in re.findall(r" ([a-z_]+) (\d+)", logged))
        assert kinds.get("ringbuf_full", 0) + kinds.get("uid_over_share", 0) > 0, logged
        # the metrics are published on the daemon's tick, which may come after the log line
        deadline = time.monotonic() + 10
        while True:
            m = d.metrics()
            counters = {k: int(n) for k, n in LOST.findall(m)}
            if all(counters.get(k, 0) >= n for k, n in kinds.items()):
                break
            assert time.monotonic() < deadline, (kinds, counters)
            time.sleep(0.2)
        for reason in ("memory_model_nomem", "flight_recorder_nomem", "oom_lost"):
            assert reason in counters, (reason, m)
        assert "gpusnoop_lost_events_total" not in m, "the old name is gone"
        if counters["uid_over_share"]:
            users = dict(re.findall(r'^gpusnoop_user_events_lost_total\{uid="(\d+)"\} (\d+)$',
                                    m, re.M))
            assert int(users.get(str(FLOOD_UID), 0)) > 0, m
        time.sleep(2)
        expect_eq(sum("events lost" in l for l in d.g.err.lines), 1, "loss lines in a minute")
        d.stop()
        expect_eq(sum("events lost" in l for l in d.g.err.lines), 1, "loss lines in a minute")
    finally:
        for p in flooders:
            p.kill()
            p.wait()
        d.g.kill()
        if w:
            w.kill()


@test
def daemon_ringbuf_is_read_at_start_and_checked_at_reload():
    tmp, conf = config_file("gs-dloss-reload-", "ringbuf 2\n")
    d = Daemon("--config", conf)
    try:
        expect_eq(ring_sizes(d.g.proc.pid), {2 * MiB, 256 << 10}, "ring buffer sizes")
        for text, said in (("ringbuf 3\n", "'3' is not a ring buffer size"),
                           ("ringbuf 16\n", "ringbuf unchanged: read at start only")):
            with open(conf, "w") as f:
                f.write(text)
            d.g.proc.send_signal(signal.SIGHUP)
            line = d.g.wait_stderr(said)
            assert f"{conf}:1: " in line or "reload:" in line, line
        d.g.wait_stderr("configuration reloaded")
        expect_eq(ring_sizes(d.g.proc.pid), {2 * MiB, 256 << 10}, "ring buffer sizes kept")
        d.stop()
    finally:
        d.g.kill()


if __name__ == "__main__":
    sys.exit(main())
