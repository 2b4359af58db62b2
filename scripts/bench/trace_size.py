#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""trace_size.py: bytes per event of record's formats, and record's resident memory in a flood.

Run as root from the repository root after `make gpusnoop fixtures`. Not a test: it prints

  - bytes per launch event of the same steady workload (gs_bench loop, -e cuda-launch: every
    event a cudaLaunchKernel slice with its arguments and stack) as JSON, gzip'd JSON and
    Perfetto's protobuf (record --format perfetto), and the ratios;
  - record's peak resident memory (VmHWM) and its dropped events under a launch flood
    (gs_bench flood), in both formats.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPUSNOOP = os.environ.get("GS_BENCH_GPUSNOOP", os.path.join(ROOT, "gpusnoop"))
BENCH = os.path.join(ROOT, ".output", "fixtures", "bin", "gs_bench")
TIMEOUT = 300


def peak_kib(pid, stop, out):
    """VmHWM of pid, read until stop is set (the last value read wins)."""
    while not stop.wait(0.2):
        try:
            with open(f"/proc/{pid}/status") as f:
                m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
            if m:
                out[0] = int(m.group(1))
        except OSError:
            return


def record(path, workload, events, fmt=None):
    """Runs record on the workload; returns (events written, dropped, peak KiB)."""
    cmd = [GPUSNOOP, "record", "-e", events, "-o", path]
    cmd += ["--format", fmt] if fmt else []
    p = subprocess.Popen(cmd + ["--", BENCH] + workload, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    stop, peak = threading.Event(), [0]
    t = threading.Thread(target=peak_kib, args=(p.pid, stop, peak))
    t.start()
    try:
        _, err = p.communicate(timeout=TIMEOUT)
    finally:
        stop.set()
        t.join()
    m = re.search(r"record: (\d+) events in [\d.]+ s, (\d+) dropped", err)
    if p.returncode or not m:
        sys.exit(f"record {fmt or path} failed ({p.returncode}):\n{err[-2000:]}")
    return int(m.group(1)), int(m.group(2)), peak[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20000, help="gs_bench loop iterations")
    ap.add_argument("--flood-seconds", type=int, default=5)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="gs-trace-size-")
    loop = ["loop", str(args.iters), "100"]
    sizes = {}
    print(f"{'format':<10} {'bytes':>12} {'events':>9} {'bytes/event':>12}")
    for name, fmt in (("json", None), ("json.gz", None), ("pftrace", "perfetto")):
        path = os.path.join(tmp, "t." + name)
        events, _, _ = record(path, loop, "cuda-launch", fmt)
        sizes[name] = os.path.getsize(path)
        print(f"{name:<10} {sizes[name]:>12} {events:>9} {sizes[name] / events:>12.1f}")
        os.unlink(path)
    print(f"json / pftrace {sizes['json'] / sizes['pftrace']:.1f}x, "
          f"json.gz / pftrace {sizes['json.gz'] / sizes['pftrace']:.2f}x")
    flood = ["flood", str(args.flood_seconds)]
    print(f"\nlaunch flood, {args.flood_seconds} s (gs_bench flood, -e cuda-launch,cuda-mem):")
    for name, fmt in (("json", None), ("pftrace", "perfetto")):
        path = os.path.join(tmp, "f." + name)
        events, dropped, kib = record(path, flood, "cuda-launch,cuda-mem", fmt)
        print(f"{name:<10} peak RSS {kib / 1024:7.1f} MiB  {events:>10} events written"
              f"  {dropped:>10} dropped  {os.path.getsize(path) / 2**20:8.1f} MiB file")
        os.unlink(path)
    os.rmdir(tmp)


if __name__ == "__main__":
    main()
