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


def ringbuf_kib(pid):
    """Resident KiB of pid's mmapped BPF maps (the ring buffers)."""
    total, in_bpf = 0, False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                in_bpf = "bpf" in line
            elif in_bpf and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def peak_kib(pid, stop, out):
    """VmHWM of pid and its ring buffers' most, read until stop is set (the last HWM wins)."""
    while not stop.wait(0.2):
        try:
            with open(f"/proc/{pid}/status") as f:
                m = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
            if m:
                out[0] = int(m.group(1))
            out[1] = max(out[1], ringbuf_kib(pid))
        except OSError:
            return


def record(path, workload, events, fmt=None):
    """Runs record on the workload; returns (events written, dropped, peak KiB beyond the
    ring buffers)."""
    cmd = [GPUSNOOP, "record", "-e", events, "-o", path]
    cmd += ["--format", fmt] if fmt else []
    p = subprocess.Popen(cmd + ["--", BENCH] + workload, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    stop, peak = threading.Event(), [0, 0]
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
    return int(m.group(1)), int(m.group(2)), peak[0] - peak[1]


def measure(iters, flood_seconds):
    """{"sizes": {format: (bytes, events)}, "flood": {format: (events, dropped, KiB beyond
    the ring buffers, file bytes)}}."""
    tmp = tempfile.mkdtemp(prefix="gs-trace-size-")
    loop = ["loop", str(iters), "100"]
    out = {"sizes": {}, "flood": {}}
    for name, fmt in (("json", None), ("json.gz", None), ("pftrace", "perfetto")):
        path = os.path.join(tmp, "t." + name)
        events, _, _ = record(path, loop, "cuda-launch", fmt)
        out["sizes"][name] = (os.path.getsize(path), events)
        os.unlink(path)
    for name, fmt in (("json", None), ("pftrace", "perfetto")):
        path = os.path.join(tmp, "f." + name)
        events, dropped, kib = record(path, ["flood", str(flood_seconds)],
                                      "cuda-launch,cuda-mem", fmt)
        out["flood"][name] = (events, dropped, kib, os.path.getsize(path))
        os.unlink(path)
    os.rmdir(tmp)
    return out


def rows(m, flood_seconds):
    """run.py's table rows of measure()'s figures."""
    s = m["sizes"]
    per = {k: b / e for k, (b, e) in s.items()}
    out = [("trace size, gs_bench loop -e cuda-launch (a launch with its stack per event)",
            None, None)]
    for name in ("json", "json.gz", "pftrace"):
        out.append(("  %s: bytes per event" % name, "%.1f" % per[name],
                    "%d events" % s[name][1] + ("; target <= 40, >= 8x smaller than JSON: "
                                                "%.1fx (json.gz %.2fx)"
                                                % (per["json"] / per["pftrace"],
                                                   per["json.gz"] / per["pftrace"])
                                                if name == "pftrace" else "")))
    for name, (events, dropped, kib, size) in m["flood"].items():
        out.append(("  record peak RSS beyond ring buffers, %g s launch flood, %s"
                    % (flood_seconds, name), "%.1f MiB" % (kib / 1024),
                    "bound 64 MiB; %d events written, %d dropped, %.1f MiB file"
                    % (events, dropped, size / 2**20)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iters", type=int, default=20000, help="gs_bench loop iterations")
    ap.add_argument("--flood-seconds", type=int, default=5)
    args = ap.parse_args()
    m = measure(args.iters, args.flood_seconds)
    print(f"{'format':<10} {'bytes':>12} {'events':>9} {'bytes/event':>12}")
    for name, (size, events) in m["sizes"].items():
        print(f"{name:<10} {size:>12} {events:>9} {size / events:>12.1f}")
    sizes = {k: v[0] for k, v in m["sizes"].items()}
    print(f"json / pftrace {sizes['json'] / sizes['pftrace']:.1f}x, "
          f"json.gz / pftrace {sizes['json.gz'] / sizes['pftrace']:.2f}x")
    print(f"\nlaunch flood, {args.flood_seconds} s (gs_bench flood, -e cuda-launch,cuda-mem):")
    for name, (events, dropped, kib, size) in m["flood"].items():
        print(f"{name:<10} peak RSS beyond ring buffers {kib / 1024:7.1f} MiB  {events:>10} "
              f"events written  {dropped:>10} dropped  {size / 2**20:8.1f} MiB file")


if __name__ == "__main__":
    main()
