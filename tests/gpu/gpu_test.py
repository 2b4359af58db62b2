#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""gpu_test.py: `make gpu-test`, gpusnoop against a real NVIDIA GPU and PyTorch 2.x (root).

1. tests/gpu/train.py under `gpusnoop record -e gpu`, then alone under torch.profiler: per
   kernel name, counts equal and total and mean GPU durations within 5 % of Kineto's;
2. under `gpusnoop leaks -i`: allocated and reserved equal torch.cuda.memory_allocated() and
   memory_reserved() at five checkpoints (pauses of the script);
3. a launch-bound loop untraced, with the injection library dormant, under empty probes (the
   floor), `record -p` and `record -e gpu -p`: ns per launch, medians of interleaved rounds.

Standard library only; the PyTorch interpreter is $PYTHON, else the first of python3 on PATH
and /usr/bin/python3 that imports torch. Writes OUT/summary.txt and OUT/summary.json (OUT:
.output/gpu-test). Exits 1 with one line on stderr when the machine cannot run it or a check
fails.
"""
import argparse
import ctypes
import json
import os
import platform
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
GPUSNOOP = os.path.join(ROOT, "gpusnoop")
INJECTION = os.path.join(ROOT, "libgpusnoop-cupti.so")
FLOOR = os.path.join(ROOT, ".output", "bench", "gs_bench_floor")
TRAIN = os.path.join(HERE, "train.py")
TIMEOUT = 600  # seconds for any one run (PyTorch's import under gpusnoop included)
READY_TIMEOUT = 180  # seconds for a tool to have its probes in place
LEAKS_INTERVAL, PAUSE, MARGIN_NS = 0.5, 2.0, 300_000_000
COST_MODES = ["untraced", "dormant", "floor", "floor-gpu", "record", "record-gpu"]
# the empty probes each tool's added cost is measured against: the least set it needs
COST_FLOORS = {"record": "floor", "record-gpu": "floor-gpu"}
COST_LABELS = {
    "untraced": "(a) untraced",
    "dormant": "(d) CUDA_INJECTION64_PATH set, no gpusnoop",
    "floor": "(m) empty probes where record probes (gs_bench_floor min)",
    "floor-gpu": "(gf) empty probes where record -e gpu probes (gs_bench_floor gpu)",
    "record": "(c) gpusnoop record -p (default events)",
    "record-gpu": "(g) gpusnoop record -e gpu -p",
}


class Failure(Exception):
    """One line saying why gpu-test cannot go on or did not pass."""


# --- what the machine has ----------------------------------------------------------------------

def check_driver(libcuda="libcuda.so.1"):
    """The NVIDIA driver's library, a device, and the CUDA version the driver supports."""
    try:
        cuda = ctypes.CDLL(libcuda)
    except OSError as e:
        raise Failure("no NVIDIA driver: %s" % e)
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "libcuda.so" in line}
    standin = [p for p in paths if p.startswith(os.path.join(ROOT, ".output") + "/")]
    if standin:
        raise Failure("no NVIDIA driver: libcuda.so.1 is the tests' stand-in (%s); unset "
                      "LD_LIBRARY_PATH" % standin[0])
    err = cuda.cuInit(0)
    if err:
        raise Failure("no usable GPU: cuInit returned %d%s"
                      % (err, " (no CUDA-capable device)" if err == 100 else ""))
    count, version = ctypes.c_int(0), ctypes.c_int(0)
    if cuda.cuDeviceGetCount(ctypes.byref(count)) or count.value < 1:
        raise Failure("no GPU: the driver reports no device")
    cuda.cuDriverGetVersion(ctypes.byref(version))
    return {"devices": count.value, "cuda_driver_version": version.value}


PROBE = ("import json, torch; print(json.dumps({'version': torch.__version__, "
         "'cuda': torch.version.cuda, 'available': torch.cuda.is_available()}))")


def probe_python(python):
    env = without_injection(os.environ)
    try:
        p = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, env=env,
                           timeout=TIMEOUT)
    except OSError as e:
        return None, "%s: %s" % (python, e.strerror)
    if p.returncode:
        last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return None, "%s: %s" % (python, last)
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def find_python():
    """The interpreter whose torch is 2.x, built with CUDA, and sees the GPU."""
    if os.environ.get("PYTHON"):
        candidates = [os.environ["PYTHON"]]
    else:
        candidates = [p for p in (shutil.which("python3"), "/usr/bin/python3") if p]
    reasons = []
    for python in dict.fromkeys(candidates):
        info, why = probe_python(python)
        if info is None:
            reasons.append(why)
        elif not re.match(r"[2-9]\.", info["version"]):
            reasons.append("%s: torch %s is not 2.x" % (python, info["version"]))
        elif not info["cuda"]:
            reasons.append("%s: torch %s is a CPU build" % (python, info["version"]))
        elif not info["available"]:
            reasons.append("%s: torch %s: torch.cuda.is_available() is False"
                           % (python, info["version"]))
        else:
            info["python"] = python
            return info
    raise Failure("no PyTorch 2.x with CUDA (set PYTHON): " + "; ".join(reasons))


def preflight(machine_only=False):
    """The machine (driver, GPU, PyTorch, root), then, unless machine_only, what make built."""
    machine = check_driver()
    machine["torch"] = find_python()
    if os.geteuid() != 0:
        raise Failure("needs root: gpusnoop loads BPF programs")
    if machine_only:
        return machine
    for path, what in ((GPUSNOOP, "gpusnoop"), (FLOOR, "the bench's gs_bench_floor"),
                       (INJECTION, "libgpusnoop-cupti.so (no CUPTI headers at build time)")):
        if not os.path.exists(path):
            raise Failure("%s not built: %s (run make gpu-test)" % (what, path))
    return machine


# --- running things ----------------------------------------------------------------------------

def without_injection(env):
    return {k: v for k, v in env.items() if k != "CUDA_INJECTION64_PATH"}


def run(cmd, what, out_dir, env=None):
    """Run to completion; stderr kept in OUT/<what>.stderr; Failure on a non-zero exit."""
    log = os.path.join(out_dir, what + ".stderr")
    with open(log, "w") as err:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=err, timeout=TIMEOUT,
                           env=env or without_injection(os.environ))
    if p.returncode:
        raise Failure("%s exited %d (see %s)" % (what, p.returncode, log))
    with open(log) as f:
        return f.read()


def load_json(path):
    with open(path) as f:
        return json.load(f)


def losses(trace):
    """Problems in a gpusnoop trace's metadata: anything dropped, lost or unlinked."""
    md = trace.get("metadata", {})
    gpu = md.get("gpu", {})
    problems = ["gpusnoop: %s %d" % (k, v) for k, v in
                [("dropped_events", md.get("dropped_events", 0))]
                + sorted(md.get("lost", {}).items())
                + [(k, gpu.get(k, 0)) for k in ("not_linked", "cupti_dropped",
                                                "no_timestamps", "malformed")] if v]
    if not gpu.get("records"):
        problems.append("gpusnoop: no GPU records in the trace")
    return problems


def accuracy(py, out, steps):
    """Part 1: the same steps under record -e gpu, then under torch.profiler."""
    trace, kineto = os.path.join(out, "record.json"), os.path.join(out, "kineto.json")
    res_gs, res_k = os.path.join(out, "train-gpusnoop.json"), os.path.join(out,
                                                                           "train-kineto.json")
    run([GPUSNOOP, "record", "-e", "gpu", "-o", trace, "--", py, TRAIN, "train", res_gs,
         "--steps", str(steps)], "record", out)
    run([py, TRAIN, "train", res_k, "--kineto", kineto, "--steps", str(steps)], "kineto", out)
    gs_trace, r = compare.load_trace(trace), load_json(res_gs)
    ours = compare.gpusnoop_kernels(gs_trace, (r["window_start_ns"], r["window_end_ns"]))
    rows, worst, problems = compare.compare_kernels(
        ours, compare.kineto_kernels(compare.load_trace(kineto)))
    return {"rows": rows, "worst": worst, "problems": losses(gs_trace) + problems,
            "gpu_metadata": gs_trace.get("metadata", {}).get("gpu"), "result": r,
            "kineto_result": load_json(res_k)}


def memory(py, out):
    """Part 2: leaks' allocated/reserved against torch's at the script's checkpoints."""
    reports, res = os.path.join(out, "leaks.json"), os.path.join(out, "memory.json")
    run([GPUSNOOP, "leaks", "--format", "json", "-i", str(LEAKS_INTERVAL), "-o", reports, "--",
         py, TRAIN, "memory", res, "--pause", str(PAUSE)], "leaks", out)
    r = load_json(res)
    rows, problems = compare.compare_memory(compare.leaks_reports(reports), r["pid"],
                                            r["checkpoints"], MARGIN_NS)
    return {"rows": rows, "problems": problems}


def wait_file_text(path, text, proc, what):
    """Until the file a tool writes its stderr to holds text; Failure if it exits first."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            if text in f.read():
                return
        if proc.poll() is not None:
            raise Failure("%s exited %d before '%s' (see %s)" % (what, proc.returncode, text,
                                                                   path))
        time.sleep(0.05)
    raise Failure("%s: no '%s' in %d s (see %s)" % (what, text, READY_TIMEOUT, path))


def start_tool(mode, pid, out):
    """The tool of a cost mode attached to pid, probes in place; None for no tool."""
    if mode in ("untraced", "dormant"):
        return None, None
    log = os.path.join(out, "cost-%s.stderr" % mode)
    cmd, ready = {
        "floor": ([FLOOR, str(pid), "min"], "attached"),
        "floor-gpu": ([FLOOR, str(pid), "gpu"], "attached"),
        "record": ([GPUSNOOP, "record", "-p", str(pid), "-o",
                    os.path.join(out, "cost-record.json")], "Ctrl-C to stop"),
        "record-gpu": ([GPUSNOOP, "record", "-e", "gpu", "-p", str(pid), "-o",
                        os.path.join(out, "cost-record-gpu.json")], "Ctrl-C to stop"),
    }[mode]
    with open(log, "w") as err:
        tool = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err)
    wait_file_text(log, ready, tool, mode)
    return tool, log


def stop_tool(tool, mode, log):
    """Tools end when their target does; SIGINT one that has not within 30 s."""
    try:
        tool.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tool.send_signal(signal.SIGINT)
        tool.wait(timeout=TIMEOUT)
    if tool.returncode:
        raise Failure("%s exited %d (see %s)" % (mode, tool.returncode, log))


def cost_run(mode, py, out, launches):
    """One round of one mode: the held loop, its tool attached, released; ns per launch."""
    res = os.path.join(out, "cost-%s-result.json" % mode)
    env = without_injection(os.environ)
    if mode in ("dormant", "floor-gpu", "record-gpu"):
        env["CUDA_INJECTION64_PATH"] = INJECTION
    with open(os.path.join(out, "cost-%s-target.stderr" % mode), "w") as err:
        target = subprocess.Popen([py, TRAIN, "launches", res, "--launches", str(launches)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                  env=env, text=True)
    tool = None
    try:
        if not select.select([target.stdout], [], [], TIMEOUT)[0]:
            raise Failure("%s: the launch loop never said ready" % mode)
        if not target.stdout.readline().startswith("ready "):
            raise Failure("%s: the launch loop exited %s before ready" % (mode, target.wait()))
        tool, log = start_tool(mode, target.pid, out)
        target.stdin.write("go\n")
        target.stdin.close()
        if target.wait(timeout=TIMEOUT):
            raise Failure("%s: the launch loop exited %d" % (mode, target.returncode))
        if tool:
            stop_tool(tool, mode, log)
    finally:
        for p in (target, tool):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    return load_json(res)


def launch_cost(py, out, rounds, launches):
    """Part 3: rounds of every mode in random order; medians; the -e gpu run's kernel count."""
    samples = {m: [] for m in COST_MODES}
    problems = []
    for i in range(rounds):
        order = COST_MODES[:]
        random.shuffle(order)
        for mode in order:
            r = cost_run(mode, py, out, launches)
            samples[mode].append(r["ns_per_launch"])
            if mode == "record-gpu" and i == 0:
                trace = compare.load_trace(os.path.join(out, "cost-record-gpu.json"))
                seen = compare.gpusnoop_kernels(trace, (r["window_start_ns"],
                                                        r["window_end_ns"]))
                n = sum(len(v) for v in seen.values())
                if n != launches:
                    problems.append("launch loop: %d launches, %d GPU kernels recorded"
                                    % (launches, n))
                problems += losses(trace)
    return {"samples": samples, "launches": launches, "rounds": rounds,
            "costs": compare.launch_costs(samples, "untraced", COST_FLOORS), "problems": problems}


# --- the summary -------------------------------------------------------------------------------

def summary_text(s):
    m, t = s["machine"], s["machine"]["torch"]
    lines = ["gpusnoop make gpu-test, %s, host %s" % (s["date"], s["host"]),
             "GPU %s, driver CUDA %d.%d; torch %s (CUDA %s, %s); CUPTI mapped: %s" % (
                 s["accuracy"]["result"].get("device"), m["cuda_driver_version"] // 1000,
                 m["cuda_driver_version"] % 1000 // 10, t["version"], t["cuda"], t["python"],
                 ", ".join(s["accuracy"]["result"].get("cupti", []))),
             "", "1. kernels: record -e gpu vs torch.profiler, %d SGD steps (ratios: gpusnoop / "
             "Kineto; rule: counts equal, within 5 %%)" % s["accuracy"]["result"]["steps"],
             compare.kernel_table(s["accuracy"]["rows"])]
    worst = s["accuracy"]["worst"]
    lines.append("worst duration ratio: %s" % ("%.2f %% off" % (worst * 100)
                                               if worst is not None else "none matched"))
    lines += ["", "2. leaks vs torch.cuda.memory_allocated()/memory_reserved(), device 0"]
    for r in s["memory"]["rows"]:
        lines.append("  %-30s torch %d / %d; leaks %s (%d reports)" % (
            r["checkpoint"], r["allocated"], r["reserved"],
            ", ".join("%s / %s" % x for x in dict.fromkeys(r["seen"])) or "-", r["reports"]))
    c = s["cost"]
    lines += ["", "3. cost per launch: %d x tensor.add_ (one kernel each), median of %d "
              "interleaved rounds" % (c["launches"], c["rounds"])]
    for mode in COST_MODES:
        x = c["costs"][mode]
        lines.append("  %-58s %7.2f us  %.2fx (a)  +%.2f us%s" % (
            COST_LABELS[mode], x["median_ns"] / 1e3, x["ratio"], x["added_ns"] / 1e3,
            "  %.2fx the floor's added cost" % x["vs_floor"] if "vs_floor" in x else ""))
    lines += ["", "result: %s" % ("PASS" if not s["problems"] else
                                  "FAIL (%d problems)" % len(s["problems"]))]
    lines += ["  " + p for p in s["problems"]]
    return "\n".join(lines) + "\n"


def write_summary(out, s):
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(s, f, indent=1)
    text = summary_text(s)
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    sys.stdout.write(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(ROOT, ".output", "gpu-test"))
    p.add_argument("--steps", type=int, default=20, help="SGD steps compared (default 20)")
    p.add_argument("--rounds", type=int, default=5, help="cost rounds per mode (default 5)")
    p.add_argument("--launches", type=int, default=20000, help="launches per cost run")
    p.add_argument("--machine-only", action="store_true",
                   help="only check the machine (driver, GPU, PyTorch, root), before building")
    args = p.parse_args()
    try:
        machine = preflight(args.machine_only)
        if args.machine_only:
            return 0
        os.makedirs(args.out, exist_ok=True)
        py = machine["torch"]["python"]
        print("gpu-test: %s, torch %s; kernels..." % (py, machine["torch"]["version"]),
              file=sys.stderr)
        s = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
             "machine": machine, "accuracy": accuracy(py, args.out, args.steps)}
        print("gpu-test: memory checkpoints...", file=sys.stderr)
        s["memory"] = memory(py, args.out)
        print("gpu-test: cost per launch, %d rounds..." % args.rounds, file=sys.stderr)
        s["cost"] = launch_cost(py, args.out, args.rounds, args.launches)
        s["problems"] = (s["accuracy"]["problems"] + s["memory"]["problems"]
                         + s["cost"]["problems"])
        write_summary(args.out, s)
        if s["problems"]:
            raise Failure("%d problems, first: %s (summary in %s)"
                          % (len(s["problems"]), s["problems"][0], args.out))
    except Failure as e:
        print("gpu-test: %s" % e, file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired as e:
        print("gpu-test: %s timed out after %d s" % (e.cmd[0], e.timeout), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
