#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""oom_survival.py: under one user's allocation flood, what share of another's CUDA OOMs the
daemon reports, at ring buffers of 1, 4 and 16 MiB (`ringbuf`), and what the flood lost.

Needs root, `make gpusnoop fixtures`. Not a timed test: it prints one table, e.g.
  ringbuf  OOMs reported   flood events seen      lost  by reason
    1 MiB   20/20  (100%)            8000000     99970  uid_over_share 99970
Usage: scripts/bench/oom_survival.py [--ooms N] [--flooders N] [--sizes 1,4,16]
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPUSNOOP = os.path.join(ROOT, "gpusnoop")
BIN = os.path.join(ROOT, ".output", "fixtures", "bin")
FLOOD_UID = 4321
OOM_ENV = {"GS_FAKE_CUDA_MEM_LIMIT": str(256 << 20), "GS_FAKE_CUDA_NO_DRIVER": "1"}
LOST = re.compile(r'^gpusnoop_events_lost_total\{reason="([a-z_]+)"\} (\d+)$', re.M)


def as_flood_user():
    os.setgroups([])
    os.setgid(FLOOD_UID)
    os.setuid(FLOOD_UID)


def wait_line(log, text, timeout=60):
    """Waits until the daemon's log file has a line holding text; returns the line."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(log, errors="replace") as f:
            for line in f:
                if text in line:
                    return line
        time.sleep(0.2)
    raise RuntimeError(f"daemon never said {text!r}")


def one_size(mib, ooms, nr_flooders):
    tmp = tempfile.mkdtemp(prefix="gs-oom-survival-")
    conf = os.path.join(tmp, "gpusnoop.conf")
    with open(conf, "w") as f:
        f.write(f"output-dir {tmp}/out\nsocket {tmp}/ctl.sock\nmetrics-addr 127.0.0.1:0\n"
                f"ringbuf {mib}\ntrigger-interval 0\nflight-recorder off\n")
    log = os.path.join(tmp, "daemon.log")
    with open(log, "w") as logf:
        d = subprocess.Popen([GPUSNOOP, "daemon", "--config", conf], stdout=subprocess.DEVNULL,
                             stderr=logf)
    flooders, pids = [], []
    try:
        url = re.search(r"(http://\S+/metrics)", wait_line(log, "metrics on http://")).group(1)
        wait_line(log, "daemon: following every CUDA process")
        env = dict(os.environ, GS_FLOOD_N="1000000000", GS_FLOOD_MODE="free",
                   GS_FAKE_CUDA_NO_DRIVER="1")
        flooders = [subprocess.Popen([os.path.join(BIN, "gs_flood")], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=as_flood_user) for _ in range(nr_flooders)]
        time.sleep(3)  # the flood is probed and at full speed
        for _ in range(ooms):
            w = subprocess.Popen([os.path.join(BIN, "gs_oom")], stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, env=dict(os.environ, **OOM_ENV))
            if b"oom 2" in w.communicate(timeout=60)[0]:
                pids.append(w.pid)
        time.sleep(2)
        with urllib.request.urlopen(url, timeout=10) as r:
            metrics = r.read().decode()
        lost = {k: int(n) for k, n in LOST.findall(metrics) if int(n)}
        seen = 0  # the flood's calls the daemon counted (allocations and frees)
        for p in flooders:
            for family in ("allocations", "frees"):
                m = re.search(rf'^gpusnoop_cuda_{family}_total{{pid="{p.pid}",[^}}]*}} (\S+)$',
                              metrics, re.M)
                seen += int(float(m.group(1))) if m else 0
        lost["seen"] = seen
        # the daemon follows every process: only the reports of our gs_oom processes count
        reports = [pid for pid in pids
                   if glob.glob(f"{tmp}/out/gpusnoop-cuda-oom-{pid}-*.json")]
        return len(pids), len(reports), lost
    finally:
        for p in flooders:
            p.kill()
            p.wait()
        d.terminate()
        d.wait(30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ooms", type=int, default=20)
    ap.add_argument("--flooders", type=int, default=2)
    ap.add_argument("--sizes", default="1,4,16")
    args = ap.parse_args()
    if os.geteuid():
        sys.exit("oom_survival.py: needs root (BPF)")
    print(f"{args.flooders} gs_flood processes of uid {FLOOD_UID} (cudaMalloc+cudaFree, as fast "
          f"as they can); {args.ooms} gs_oom processes of root, one after another")
    print(f"{'ringbuf':8} {'OOMs reported':15} {'flood events seen':>17} {'lost':>9}  by reason")
    for mib in (int(x) for x in args.sizes.split(",")):
        ran, reported, lost = one_size(mib, args.ooms, args.flooders)
        seen = lost.pop("seen")
        share = 100.0 * reported / ran if ran else 0
        # oom_lost is also in ringbuf_full or uid_over_share: not added twice
        total = sum(n for k, n in lost.items() if k != "oom_lost")
        reasons = ", ".join(f"{k} {n}" for k, n in sorted(lost.items()))
        print(f"{mib:>3} MiB  {reported:>3}/{ran:<3} ({share:3.0f}%)  {seen:>17} {total:>9}  "
              f"{reasons or '-'}", flush=True)


if __name__ == "__main__":
    main()
