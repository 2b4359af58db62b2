# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""python_cost.py: `make bench` rows for Python frames: the walk's cost per event, as a ratio.

The same Python caller (py_target.py: cudaMalloc + cudaFree, DEPTH frames deep) untraced,
under `leaks --no-python` and under `leaks`; each kind interleaved over the rounds, the
median CPU time per iteration of the calling thread (probe handlers run on it).
"""
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TARGET = os.path.join(HERE, "py_target.py")
PYTHON = "/usr/bin/python3.11"  # Debian's: the interpreter every machine of the suite has
KINDS = ["untraced", "no-python", "python"]
DEPTH = 20
FRAMES = DEPTH + 3  # nest() DEPTH times, churn(), main(), <module>


def one_run(run, kind, iters, tmp):
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
        ns = float(w.line("ns_per_iter").split()[1])
        w.line("done")
        return ns
    finally:
        if t:
            t.stop()
        w.finish()


def bench(run, args, tmp):
    """Rows for run.py's table; run is the run.py module (its Workload, Tool, median)."""
    if not os.access(PYTHON, os.X_OK):
        return [("Python frames: %s not found, not measured" % PYTHON, "-", "")]
    iters = max(args.iters // 4, 1000)
    kinds = KINDS + (["no-python@before", "python@before"] if run.BEFORE else [])
    res = {k: [] for k in kinds}
    for rnd in range(args.rounds):
        order = list(kinds)
        random.shuffle(order)
        for kind in order:
            res[kind].append(one_run(run, kind, iters, tmp))
        print("  python round %d/%d: %s" % (rnd + 1, args.rounds, "  ".join(
            "%s %.0f" % (k, res[k][-1]) for k in order)), file=sys.stderr)
    med = {k: run.median(v) for k, v in res.items()}
    a, b, c = med["untraced"], med["no-python"], med["python"]
    before = []
    if run.BEFORE:
        bb, bc = med["no-python@before"], med["python@before"]
        before = [("(p2-p1) before (GS_BENCH_BEFORE)", "%.0f ns" % (bc - bb),
                   "the walk per stack of %d Python frames, same rounds" % FRAMES)]
    return before + [
        ("Python frames: CPU ns per iteration (cudaMalloc + cudaFree under %d Python frames, "
         "one stack), median of %d interleaved runs" % (FRAMES, args.rounds), None, None),
        ("(p0) untraced", "%.0f ns" % a, ""),
        ("(p1) gpusnoop leaks --no-python", "%.0f ns" % b, "+%.0f ns over (p0)" % (b - a)),
        ("(p2) gpusnoop leaks (Python frames)", "%.0f ns" % c, "+%.0f ns over (p0)" % (c - a)),
        ("(p2-p0)/(p1-p0) tracing cost with the walk", "%.2fx" % ((c - a) / (b - a)),
         "the walk adds %.0f ns per stack of %d Python frames" % (c - b, FRAMES)),
    ]
