# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""python_cost.py: `make bench` rows for Python frames: the walk's cost per stack.

The same Python caller (py_target.py: cudaMalloc + cudaFree, DEPTH frames deep, one Python
stack per iteration) untraced, under `leaks --no-python` and under `leaks`; the kinds
interleaved in each round, in a new order each round. Three measures per run:
  cpu   the calling thread's CPU time per iteration (probe handlers run on it)
  wall  the median over batches of 16 iterations of the wall time per iteration: a batch
        that was preempted or interrupted is an outlier, not part of the figure
  bpf   the tracer's BPF programs' run time per iteration (bpf_stats, the programs the loop
        hits), where the walk runs: the steadiest, but blind to what the walk costs outside
        its programs (the reader's work on the bigger records)
The walk's cost is the difference with and without Python frames of each kind's lower
quartile over the rounds (load on a shared machine only adds: the least disturbed runs of
each kind, steadier than medians), with the medians' difference and the spread of the
per-round differences beside it. BENCH_PY_ROUNDS sets the number of rounds (default the larger of
15 and 3x --rounds).
"""
import ctypes
import os
import random
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "py_target.py")
PYTHON = "/usr/bin/python3.11"  # Debian's: the interpreter every machine of the suite has
KINDS = ["untraced", "no-python", "python"]
DEPTH = 20
FRAMES = DEPTH + 3  # nest() DEPTH times, churn(), main(), <module>
ITERS = 10000
MEASURES = ("cpu", "wall", "bpf")
BPF_SYSCALL = 321  # x86-64
BPF_ENABLE_STATS = 32
BPF_STATS_RUN_TIME = 0


def enable_bpf_stats():
    """BPF_ENABLE_STATS: run times counted while the returned fd is open (None: not counted).

    An fd, not the sysctl, so that a run that stops early or another tool's prog-cost.sh
    leaves the setting as it was."""
    if os.uname().machine != "x86_64":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.c_uint32(BPF_STATS_RUN_TIME)
    fd = libc.syscall(BPF_SYSCALL, BPF_ENABLE_STATS, ctypes.byref(attr), ctypes.sizeof(attr))
    return fd if fd >= 0 else None


def bpf_ns_per_iter(pid, iters):
    """Run time of pid's BPF programs that ran at least once per iteration, per iteration.

    The all-process tracepoints (exec, exit, ...) run a few hundred times, for other
    processes: left out."""
    total, seen = 0, set()
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            with open("/proc/%d/fdinfo/%s" % (pid, fd)) as f:
                kv = dict(l.split(":\t", 1) for l in f.read().splitlines() if ":\t" in l)
        except OSError:
            continue
        if "prog_id" not in kv or kv["prog_id"] in seen:
            continue
        seen.add(kv["prog_id"])
        if int(kv.get("run_cnt", 0)) >= iters:
            total += int(kv.get("run_time_ns", 0))
    return total / iters


def one_run(run, kind, iters, tmp, stats):
    w = run.Workload([PYTHON, TARGET, run.CUDART, str(iters), str(DEPTH)])
    t = None
    try:
        if kind != "untraced":
            binary = run.BEFORE if kind.endswith("@before") else run.GPUSNOOP
            t = run.Tool([binary, "leaks", "-p", str(w.pid), "--format", "json", "-o",
                          os.path.join(tmp, "leaks.json")] +
                         (["--no-python"] if kind.startswith("no-python") else []),
                         "tracing CUDA allocations")
        w.release()
        res = {"cpu": float(w.line("ns_per_iter").split()[1]),
               "wall": float(w.line("ns_median").split()[1])}
        w.line("done")
        res["bpf"] = bpf_ns_per_iter(t.p.pid, iters) if t and stats is not None else 0.0
        return res
    finally:
        if t:
            t.stop()
        w.finish()


def quartile1(xs):
    return statistics.quantiles(xs, n=4, method="inclusive")[0] if len(xs) > 1 else xs[0]


def walk_rows(res, rounds, with_py, without, label, stats):
    """The walk's rows, for each measure: the difference of the two kinds' lower quartiles
    over the rounds (load on the machine only adds, so the less disturbed runs of each kind
    are compared), the difference of their medians, and the quartiles of the per-round
    differences (with_py - without, seconds apart)."""
    rows = []
    for m in MEASURES:
        if m == "bpf" and stats is None:
            rows.append(("%s bpf: bpf_stats not available" % label, "-", ""))
            continue
        x = [r[m] for r in res[with_py]]
        y = [r[m] for r in res[without]]
        d = [a - b for a, b in zip(x, y)]
        q = statistics.quantiles(d, n=4, method="inclusive") if len(d) > 1 else [d[0]] * 3
        rows.append(("%s %s: walk per stack of %d frames" % (label, m, FRAMES),
                     "%.0f ns" % (quartile1(x) - quartile1(y)),
                     "medians %.0f; per round: median %.0f, quartiles %.0f..%.0f" % (
                         statistics.median(x) - statistics.median(y), statistics.median(d),
                         q[0], q[2])))
    return rows


def bench(run, args, tmp):
    """Rows for run.py's table; run is the run.py module (its Workload, Tool, median)."""
    if not os.access(PYTHON, os.X_OK):
        return [("Python frames: %s not found, not measured" % PYTHON, "-", "")]
    rounds = int(os.environ.get("BENCH_PY_ROUNDS", max(15, 3 * args.rounds)))
    iters = max(ITERS, args.iters // 2)
    kinds = KINDS + (["no-python@before", "python@before"] if run.BEFORE else [])
    res = {k: [] for k in kinds}
    stats = enable_bpf_stats()
    try:
        for rnd in range(rounds):
            order = list(kinds)
            random.shuffle(order)
            for kind in order:
                res[kind].append(one_run(run, kind, iters, tmp, stats))
            print("  python round %d/%d: %s" % (rnd + 1, rounds, "  ".join(
                "%s %.0f/%.0f/%.0f" % ((k,) + tuple(res[k][-1][m] for m in MEASURES))
                for k in order)), file=sys.stderr)
    finally:
        if stats is not None:
            os.close(stats)
    med = {k: run.median([r["cpu"] for r in v]) for k, v in res.items()}
    a, b, c = med["untraced"], med["no-python"], med["python"]
    rows = [
        ("Python frames: CPU ns per iteration (cudaMalloc + cudaFree under %d Python frames, "
         "one stack), median of %d interleaved rounds; bpf_stats on in all" % (FRAMES, rounds),
         None, None),
        ("(p0) untraced", "%.0f ns" % a, ""),
        ("(p1) gpusnoop leaks --no-python", "%.0f ns" % b, "+%.0f ns over (p0)" % (b - a)),
        ("(p2) gpusnoop leaks (Python frames)", "%.0f ns" % c, "+%.0f ns over (p0)" % (c - a)),
        ("(p2-p0)/(p1-p0) tracing cost with the walk", "%.2fx" % ((c - a) / (b - a)),
         "target: the walk <= 1,000 ns per stack (rows below)"),
        ("(p2-p1) lower quartiles' difference over the rounds: cpu = thread CPU per iteration, "
         "wall = median batch wall time per iteration, bpf = BPF run time per iteration",
         None, None),
    ]
    rows += walk_rows(res, rounds, "python", "no-python", "(p2-p1)", stats)
    if run.BEFORE:
        rows += walk_rows(res, rounds, "python@before", "no-python@before",
                          "(p2-p1) before (GS_BENCH_BEFORE)", stats)
    return rows
