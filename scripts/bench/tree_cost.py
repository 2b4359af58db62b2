#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""tree_cost.py: what following process trees costs, for gpusnoop(8)'s "Process trees".

Run as root from the repository root after `make gpusnoop fixtures`. Three figures, each a
median over interleaved repetitions, so that a busy machine moves them less:

  untraced: CPU ns per CUDA call of a process gpusnoop does NOT trace, while a session that
            follows a tree has the same libcudart probed by file (the filter's cost to
            others), against no session and against a --no-children session (pid-scoped).
  followed: wall time a process of a followed tree pays to start (a shell's /bin/true
            steps), stopped at exec and at the loader's events until gpusnoop has looked.
  attach:   CPU seconds a pid-scoped session spends per process it probes (what probing
            each new rank by pid would cost), from -p with 1 and with N held processes.
Never part of the test suite: no assertion, just the table.
"""
import os
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPUSNOOP = os.path.join(ROOT, "gpusnoop")
BIN = os.path.join(ROOT, ".output", "fixtures", "bin")
CALLS_PER_ITER = 6  # gs_bench: 4 cudaLaunchKernel + cudaMalloc + cudaFree
TIMEOUT = 300
TMP = tempfile.mkdtemp(prefix="gs-tree-cost-")


def read_until(proc, stream, text, timeout=TIMEOUT):
    deadline, buf = time.monotonic() + timeout, b""
    while text.encode() not in buf:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([stream], [], [], left)[0]:
            raise RuntimeError(f"timed out waiting for {text!r}")
        chunk = os.read(stream.fileno(), 65536)
        if not chunk:
            raise RuntimeError(f"{proc.args[0]} ended before {text!r}: {buf!r}")
        buf += chunk
    return buf.decode(errors="replace")


def held(name, *args):
    """A fixture run through its work once, held after "done" (its libraries all loaded)."""
    p = subprocess.Popen([os.path.join(BIN, name), *args, "--hold"], stdout=subprocess.PIPE)
    read_until(p, p.stdout, "ready ")
    p.send_signal(signal.SIGUSR1)
    read_until(p, p.stdout, "done")
    return p


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT if p.args[0] == GPUSNOOP else signal.SIGKILL)
    p.wait(TIMEOUT)


def session(*args):
    """A record session (every CUDA call probed), returned once its probes are in place."""
    g = subprocess.Popen([GPUSNOOP, "record", "-o", os.path.join(TMP, "trace.json"), *args],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    read_until(g, g.stderr, "Ctrl-C to stop")
    return g


def traced_command_pid(g):
    """The pid of a session's -- CMD (gs_bench --hold), let run through once and held."""
    pid = int(read_until(g, g.stdout, "\n").split()[1])
    os.kill(pid, signal.SIGUSR1)
    read_until(g, g.stdout, "done")  # libcuda is loaded by the first calls: probed too
    return pid


def untraced_ns_per_call(iters):
    out = subprocess.run([os.path.join(BIN, "gs_bench"), "loop", str(iters), "1000"],
                         capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout
    words = next(l for l in out.splitlines() if l.startswith("ns_per_iter")).split()
    return float(words[words.index("cpu") + 1]) / CALLS_PER_ITER


def bench_untraced(reps, iters):
    results = {"none": [], "by file (tree)": [], "by pid (--no-children)": []}
    for _ in range(reps):
        results["none"].append(untraced_ns_per_call(iters))
        for mode, flags in (("by file (tree)", []), ("by pid (--no-children)",
                                                     ["--no-children"])):
            # held after "ready": libcudart and libcuda (loaded by it) are probed by then
            target = [os.path.join(BIN, "gs_bench"), "loop", "10", "10", "--hold"]
            g = session(*flags, "--", *target)
            child = traced_command_pid(g)
            try:
                results[mode].append(untraced_ns_per_call(iters))
            finally:
                os.kill(child, signal.SIGKILL)
                stop(g)
    return {k: statistics.median(v) for k, v in results.items()}


def session_cpu_s(pids):
    """CPU seconds of a pid-scoped session on pids, from start to its probes, then stopped."""
    g = session("--no-children", *[a for p in pids for a in ("-p", str(p))])
    g.send_signal(signal.SIGINT)
    g.stdout.close()
    g.stderr.close()
    _, _, ru = os.wait4(g.pid, 0)
    g.returncode = 0
    return ru.ru_utime + ru.ru_stime


def bench_attach(reps, n):
    procs = [held("gs_bench", "loop", "10", "10") for _ in range(n)]
    try:
        one, many = [], []
        for _ in range(reps):
            one.append(session_cpu_s([procs[0].pid]))
            many.append(session_cpu_s([p.pid for p in procs]))
        return statistics.median(one), statistics.median(many)
    finally:
        for p in procs:
            stop(p)


LOOP = ('a=$(date +%s%N); for i in $(seq {n}); do /bin/true; done; '
        'echo "loop $(( $(date +%s%N) - a ))"')


def loop_ns(n, *gs_args):
    """Wall ns of a shell running /bin/true n times, alone or as a followed -- CMD tree."""
    argv = ["bash", "-c", LOOP.format(n=n)]
    if gs_args:
        argv = [GPUSNOOP, "leaks", *gs_args, "--", *argv]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT).stdout
    return int(next(l for l in out.splitlines() if l.startswith("loop ")).split()[1])


def bench_followed(reps, n):
    alone, followed = [], []
    for _ in range(reps):
        alone.append(loop_ns(n))
        followed.append(loop_ns(n, "-d", "600"))
    return statistics.median(alone) / n, statistics.median(followed) / n


def main():
    try:
        return run()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)


def run():
    reps = int(os.environ.get("GS_TREE_REPS", "5"))
    iters, n = 20000, 32
    u = bench_untraced(reps, iters)
    base = u["none"]
    print(f"untraced process, CPU ns per CUDA call (median of {reps}):")
    for mode, ns in u.items():
        print(f"  {mode:24s} {ns:8.0f}  (+{ns - base:.0f} ns, x{ns / base:.2f})")
    alone, followed = bench_followed(reps, 100)
    print(f"fork+exec+exit of /bin/true in a followed tree (median of {reps}): "
          f"{alone / 1e6:.2f} ms alone, {followed / 1e6:.2f} ms followed "
          f"(+{(followed - alone) / 1e6:.2f} ms: stopped at exec and at each loader event)")
    one, many = bench_attach(reps, n)
    print(f"pid-scoped attach (-p, CPU time, median of {reps}): 1 process {one:.2f} s, {n} "
          f"processes {many:.2f} s: {(many - one) / (n - 1) * 1000:.1f} ms per further process")
    return 0


if __name__ == "__main__":
    sys.exit(main())
