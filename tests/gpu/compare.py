# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""compare.py: make gpu-test's arithmetic, standard library only, no GPU: per-kernel statistics
of a gpusnoop trace and of a Kineto (torch.profiler) trace and the 5 % rule between them;
`leaks` reports against PyTorch's own counters at checkpoints; per-launch cost from timings."""
import json
import statistics

TOLERANCE = 0.05  # the rule: per-kernel GPU durations within 5 % of Kineto's


def load_trace(path):
    with open(path) as f:
        return json.load(f)


def _ns(us):
    """A trace's microseconds (gpusnoop writes three decimals) to integer nanoseconds."""
    return round(float(us) * 1000)


def _is_kernel(event):
    return (isinstance(event, dict) and event.get("ph") == "X"
            and str(event.get("cat", "")).lower() == "kernel")


def _collect(events, keep):
    kernels = {}
    for e in events:
        if _is_kernel(e) and "dur" in e and "ts" in e and keep(e):
            kernels.setdefault(str(e.get("name", "")), []).append(_ns(e["dur"]))
    return kernels


def gpusnoop_kernels(trace, window_ns=None):
    """{kernel name: [device durations, ns]} from `record -e gpu`'s GPU rows (timestamps are
    CLOCK_MONOTONIC us). window_ns (start, end): only kernels that started inside it."""
    if window_ns is None:
        return _collect(trace.get("traceEvents", []), lambda e: True)
    start, end = window_ns
    return _collect(trace.get("traceEvents", []),
                    lambda e: start <= _ns(e["ts"]) <= end)


def kineto_kernels(trace):
    """{kernel name: [device durations, ns]} from a torch.profiler trace (category `kernel`)."""
    return _collect(trace.get("traceEvents", []), lambda e: True)


def _ratio(ours, theirs):
    if theirs == 0:
        return 1.0 if ours == 0 else float("inf")
    return ours / theirs


def compare_kernels(ours, theirs, tolerance=TOLERANCE):
    """Per kernel name: counts equal, total and mean durations within tolerance of Kineto's.
    Returns (rows, worst, problems): rows are dicts sorted by Kineto's total, worst the largest
    |ratio - 1| over matched kernels (None when none matched), problems one line each."""
    rows, problems, worst = [], [], None
    for name in sorted(set(ours) | set(theirs),
                       key=lambda n: (-sum(theirs.get(n, [])), -sum(ours.get(n, [])), n)):
        a, b = ours.get(name, []), theirs.get(name, [])
        row = {"name": name, "count": len(a), "kineto_count": len(b),
               "total_ns": sum(a), "kineto_total_ns": sum(b)}
        rows.append(row)
        if not a or not b:
            problems.append("%s: only in %s (%d kernels)"
                            % (name, "Kineto's trace" if b else "gpusnoop's trace",
                               len(b) or len(a)))
            continue
        row["total_ratio"] = _ratio(row["total_ns"], row["kineto_total_ns"])
        row["mean_ratio"] = _ratio(statistics.fmean(a), statistics.fmean(b))
        if len(a) != len(b):
            problems.append("%s: %d kernels in gpusnoop's trace, %d in Kineto's"
                            % (name, len(a), len(b)))
        for what in ("total_ratio", "mean_ratio"):
            off = abs(row[what] - 1)
            worst = off if worst is None else max(worst, off)
            if off > tolerance + 1e-12:  # exactly 5 % is within
                problems.append("%s: %s duration %.4fx Kineto's (beyond %.0f %%)"
                                % (name, what.split("_")[0], row[what], tolerance * 100))
    if not rows:
        problems.append("no kernels in either trace")
    return rows, worst, problems


def kernel_table(rows):
    """Text table of compare_kernels' rows, one line per kernel (names cut to 60 chars)."""
    lines = ["%7s %7s %12s %12s %8s %8s  %s" % ("count", "kineto", "total us", "kineto us",
                                                "total", "mean", "kernel")]
    for r in rows:
        lines.append("%7d %7d %12.3f %12.3f %8s %8s  %s" % (
            r["count"], r["kineto_count"], r["total_ns"] / 1e3, r["kineto_total_ns"] / 1e3,
            "%.4f" % r["total_ratio"] if "total_ratio" in r else "-",
            "%.4f" % r["mean_ratio"] if "mean_ratio" in r else "-", r["name"][:60]))
    return "\n".join(lines)


def leaks_reports(path):
    """The JSON Lines of `gpusnoop leaks --format json -o FILE`."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def _torch_device(report, pid, device):
    for proc in report.get("processes", []):
        if proc.get("pid") == pid and proc.get("torch"):
            for d in proc["torch"].get("devices", []):
                if d.get("device") == device:
                    return d
    return None


def compare_memory(reports, pid, checkpoints, margin_ns, device="cuda:0"):
    """Each checkpoint {name, start_ns, end_ns, allocated, reserved} is a pause of the script
    between two CLOCK_MONOTONIC readings, during which PyTorch's counters (allocated, reserved:
    torch.cuda.memory_allocated()/memory_reserved()) cannot change. Every `leaks` report made
    inside it, margin_ns after its start (for events still in the ring buffer), must show the
    same allocated and reserved bytes for device. Returns (rows, problems)."""
    rows, problems = [], []
    for cp in checkpoints:
        inside = [r for r in reports if r.get("report") == "interval"
                  and cp["start_ns"] + margin_ns <= r.get("monotonic_ns", -1) <= cp["end_ns"]]
        row = {"checkpoint": cp["name"], "allocated": cp["allocated"],
               "reserved": cp["reserved"], "reports": len(inside), "seen": []}
        rows.append(row)
        if not inside:
            problems.append("%s: no leaks report inside the checkpoint's pause" % cp["name"])
            continue
        for r in inside:
            d = _torch_device(r, pid, device)
            seen = (d.get("allocated_bytes"), d.get("reserved_bytes")) if d else (None, None)
            row["seen"].append(seen)
            if seen != (cp["allocated"], cp["reserved"]):
                problems.append("%s: leaks says allocated %s reserved %s, PyTorch %d %d"
                                % (cp["name"], seen[0], seen[1], cp["allocated"],
                                   cp["reserved"]))
                break
    return rows, problems


def launch_costs(samples, baseline="untraced", floors=None):
    """samples {mode: [ns per launch, one per round]} -> {mode: {median_ns, ratio, added_ns,
    vs_floor}}: the median, its ratio to the baseline's, the ns it adds per launch, and that
    added cost over the added cost of its floor (the project's overhead measure): floors maps
    a mode to the mode of the empty probes it is measured against, where that cost is
    positive."""
    med = {m: statistics.median(v) for m, v in samples.items() if v}
    base = med[baseline]
    out = {}
    for mode, m in med.items():
        out[mode] = {"median_ns": m, "ratio": m / base, "added_ns": m - base,
                     "rounds": len(samples[mode])}
        floor = (floors or {}).get(mode)
        if floor in med and med[floor] - base > 0:
            out[mode]["vs_floor"] = (m - base) / (med[floor] - base)
    return out


def compare_vmm(reports, result):
    """vmm.py's mappings against `leaks`' exit report of its process: every page it kept, as
    cuMemMap allocations, exactly; the one it unmapped gone. Returns (row, problems)."""
    pid, kept = result["pid"], result["kept"]
    want = (sum(size for _, size in kept), len(kept))
    seen, problems = None, []
    for r in reports:
        for proc in r.get("processes", []):
            if r.get("report") == "exit" and proc.get("pid") == pid:
                maps = [s for s in proc.get("stacks", []) if s.get("api") == "cuMemMap"]
                seen = (sum(s["bytes"] for s in maps), sum(s["allocations"] for s in maps))
    if seen is None:
        problems.append("vmm: no exit report of pid %d" % pid)
    elif seen != want:
        problems.append("vmm: leaks saw %d bytes in %d cuMemMap mappings, vmm.py kept %d in %d"
                        % (seen + want))
    return {"kept_bytes": want[0], "kept_mappings": want[1],
            "seen": list(seen) if seen else None}, problems
