#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""gpu_test.py: `make gpu-test`, gpusnoop against a real NVIDIA GPU and PyTorch 2.x (root).

1. tests/gpu/train.py under `gpusnoop record -e gpu`, then alone under torch.profiler: per
   kernel name, counts equal and total and mean GPU durations within 5 % of Kineto's;
2. under `gpusnoop leaks -i`: allocated and reserved equal torch.cuda.memory_allocated() and
   memory_reserved() at five checkpoints (pauses of the script);
3. a launch-bound loop untraced, with the injection library dormant, under empty probes (the
   floor), `record -p` and `record -e gpu -p`: ns per launch, medians of interleaved rounds.
4. tests/gpu/vmm.py under `gpusnoop leaks`: device memory mapped with cuMemCreate/cuMemMap
   through pointers from cudaGetDriverEntryPointByVersion (PyTorch 2.15's expandable
   segments' way): every mapping it keeps, exactly, as cuMemMap allocations.

Standard library only; the PyTorch interpreter is $PYTHON, else the first of python3 on PATH
and /usr/bin/python3 that imports torch. Writes OUT/summary.txt and OUT/summary.json (OUT:
.output/gpu-test). Exits 1 with one line on stderr when the machine cannot run it or a check
fails.

gpu-test/run OUTDIR (tests/gpu/run; in the bundle beside bin/gpusnoop) runs main_run: a
preflight first (preflight.py), then the checks this host can run within --budget seconds,
the dormant cost and CUPTI binding alone where BPF cannot run; exit 0, 1 failed, 3 could not
run here.
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
import preflight as machine_checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
# `make bundle` puts this file in gpu-test/, beside bin/ and lib/gpusnoop/ (gpu-test/run)
IN_BUNDLE = os.path.exists(os.path.join(HERE, "bin", "gs_bench_floor"))
if IN_BUNDLE:
    GPUSNOOP = os.path.join(os.path.dirname(HERE), "bin", "gpusnoop")
    INJECTION = os.path.join(os.path.dirname(HERE), "lib", "gpusnoop", "libgpusnoop-cupti.so")
    FLOOR = os.path.join(HERE, "bin", "gs_bench_floor")
else:
    GPUSNOOP = os.path.join(ROOT, "gpusnoop")
    INJECTION = os.path.join(ROOT, "libgpusnoop-cupti.so")
    FLOOR = os.path.join(ROOT, ".output", "bench", "gs_bench_floor")
TRAIN = os.path.join(HERE, "train.py")
VMM = os.path.join(HERE, "vmm.py")
TIMEOUT = 600  # seconds for any one run (PyTorch's import under gpusnoop included)
READY_TIMEOUT = 180  # seconds for a tool to have its probes in place
DEADLINE = float("inf")  # time.monotonic() when gpu-test/run's --budget is spent
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

def time_left():
    """Seconds any one run may take: TIMEOUT, less once --budget nears its end."""
    left = DEADLINE - time.monotonic()
    if left < 1:
        raise Failure("the time budget (--budget) is spent")
    return min(TIMEOUT, left)


def without_injection(env):
    return {k: v for k, v in env.items() if k != "CUDA_INJECTION64_PATH"}


def run(cmd, what, out_dir, env=None):
    """Run to completion; stderr kept in OUT/<what>.stderr; Failure on a non-zero exit."""
    log = os.path.join(out_dir, what + ".stderr")
    with open(log, "w") as err:
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=err, timeout=time_left(),
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


def vmm(py, out, cudart=None, env=None):
    """Part 4: mappings made through driver entry points, each seen by leaks. cudart: the
    stand-in runtime (a machine without a GPU); else the one PyTorch maps."""
    reports, res = os.path.join(out, "vmm-leaks.json"), os.path.join(out, "vmm.json")
    run([GPUSNOOP, "leaks", "--format", "json", "-o", reports, "--", py, VMM, res]
        + (["--cudart", cudart] if cudart else []), "vmm", out, env)
    row, problems = compare.compare_vmm(compare.leaks_reports(reports), load_json(res))
    return {"row": row, "problems": problems}


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
        if not select.select([target.stdout], [], [], time_left())[0]:
            raise Failure("%s: the launch loop never said ready" % mode)
        if not target.stdout.readline().startswith("ready "):
            raise Failure("%s: the launch loop exited %s before ready" % (mode, target.wait()))
        tool, log = start_tool(mode, target.pid, out)
        target.stdin.write("go\n")
        target.stdin.close()
        if target.wait(timeout=time_left()):
            raise Failure("%s: the launch loop exited %d" % (mode, target.returncode))
        if tool:
            stop_tool(tool, mode, log)
    finally:
        for p in (target, tool):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    return load_json(res)


def launch_cost(py, out, rounds, launches, modes=COST_MODES):
    """Part 3: rounds of every mode in random order; medians; the -e gpu run's kernel count.
    Fewer rounds when the budget would not hold another (at least one)."""
    samples = {m: [] for m in modes}
    problems = []
    done, started, dormant = 0, time.monotonic(), None
    for i in range(rounds):
        per_round = (time.monotonic() - started) / done if done else 0
        if done and DEADLINE - time.monotonic() < 1.3 * per_round + 10:
            break
        order = list(modes)
        random.shuffle(order)
        for mode in order:
            r = cost_run(mode, py, out, launches)
            samples[mode].append(r["ns_per_launch"])
            if mode == "dormant" and dormant is None:
                dormant = r
            if mode == "record-gpu" and i == 0:
                problems += launch_loop_problems(out, r, launches)
        done += 1
    return {"samples": samples, "launches": launches, "rounds": done, "rounds_asked": rounds,
            "costs": compare.launch_costs(samples, "untraced", COST_FLOORS), "problems": problems,
            "dormant": dormant}


def launch_loop_problems(out, r, launches):
    trace = compare.load_trace(os.path.join(out, "cost-record-gpu.json"))
    seen = compare.gpusnoop_kernels(trace, (r["window_start_ns"], r["window_end_ns"]))
    n = sum(len(v) for v in seen.values())
    problems = losses(trace)
    if n != launches:
        problems.insert(0, "launch loop: %d launches, %d GPU kernels recorded" % (launches, n))
    return problems


# CUPTI API versions whose clock the injection library keeps (profilers/cupti/inject.c)
CUPTI_12_6_API, CUPTI_13_1_API = 24, 130100


def cupti_binding(dormant):
    """No BPF needed: which CUPTI the injection library bound in the dormant run, its API
    version, whether it set up GPU activity, and the clock method that version implies."""
    if not dormant:
        return {"problems": ["CUPTI binding: no dormant run"]}
    apis = {p: v for p, v in (dormant.get("cupti_api") or {}).items()}
    api = max((v for v in apis.values() if v is not None), default=None)
    method = None if api is None else (
        "cupti_clock_realtime_shifted" if CUPTI_12_6_API <= api < CUPTI_13_1_API
        else "cupti_timestamp_callback_clock_monotonic")
    status = dormant.get("injection_status")
    problems = []
    if status is None or status:
        problems.append("CUPTI binding: the injection library set up no GPU activity: %s"
                        % (status or "not loaded"))
    if api is None:
        problems.append("CUPTI binding: no CUPTI mapped, or no version")
    return {"cupti": apis, "api": api, "clock_method": method, "status": status,
            "problems": problems}


# --- the summary -------------------------------------------------------------------------------

def header_lines(s):
    m, t = s["machine"], s["machine"]["torch"]
    r = s.get("accuracy", {}).get("result") or (s.get("cost") or {}).get("dormant") or {}
    return ["gpusnoop gpu-test, %s, host %s" % (s["date"], s["host"]),
            "GPU %s, driver CUDA %d.%d; torch %s (CUDA %s, %s); CUPTI mapped: %s" % (
                r.get("device", m.get("gpu")), m["cuda_driver_version"] // 1000,
                m["cuda_driver_version"] % 1000 // 10, t["version"], t["cuda"], t["python"],
                ", ".join(r.get("cupti", [])) or "-")]


def accuracy_lines(a):
    lines = ["", "1. kernels: record -e gpu vs torch.profiler, %d SGD steps (ratios: gpusnoop / "
             "Kineto; rule: counts equal, within 5 %%)" % a["result"]["steps"],
             compare.kernel_table(a["rows"])]
    worst = a["worst"]
    lines.append("worst duration ratio: %s" % ("%.2f %% off" % (worst * 100)
                                               if worst is not None else "none matched"))
    clock = (a.get("gpu_metadata") or {}).get("clock") or {}
    if clock:
        lines.append("GPU clock: %s, max error %s ns over %s checks" % (
            clock.get("method"), clock.get("max_error_ns"), clock.get("checks")))
    return lines


def memory_lines(m):
    lines = ["", "2. leaks vs torch.cuda.memory_allocated()/memory_reserved(), device 0"]
    for r in m["rows"]:
        lines.append("  %-30s torch %d / %d; leaks %s (%d reports)" % (
            r["checkpoint"], r["allocated"], r["reserved"],
            ", ".join("%s / %s" % x for x in dict.fromkeys(map(tuple, r["seen"]))) or "-",
            r["reports"]))
    return lines


def vmm_lines(v):
    r = v["row"]
    seen = "%d bytes in %d" % tuple(r["seen"]) if r["seen"] else "no report"
    return ["", "4. leaks vs mappings made through cudaGetDriverEntryPointByVersion pointers",
            "  vmm.py kept %d bytes in %d cuMemMap mappings; leaks %s" % (
                r["kept_bytes"], r["kept_mappings"], seen)]


def cost_lines(c):
    lines = ["", "3. cost per launch: %d x tensor.add_ (one kernel each), median of %d "
             "interleaved rounds%s" % (c["launches"], c["rounds"], (
                 " (%d asked: --budget allowed %d)" % (c["rounds_asked"], c["rounds"])
                 if c.get("rounds_asked", c["rounds"]) > c["rounds"] else ""))]
    for mode in COST_MODES:
        x = c["costs"].get(mode)
        if x:
            lines.append("  %-58s %7.2f us  %.2fx (a)  +%.2f us%s" % (
                COST_LABELS[mode], x["median_ns"] / 1e3, x["ratio"], x["added_ns"] / 1e3,
                "  %.2fx the floor's added cost" % x["vs_floor"] if "vs_floor" in x else ""))
    return lines


def binding_lines(b):
    return ["", "CUPTI binding (no BPF needed): API %s, %s; clock method %s; library: %s" % (
        b.get("api"), ", ".join(b.get("cupti") or []) or "no CUPTI mapped",
        b.get("clock_method"), "set up" if b.get("status") == "" else b.get("status"))]


def summary_text(s):
    lines = list(s.get("preflight_lines") or [])
    if s.get("machine"):
        lines += ([""] if lines else []) + header_lines(s)
    for key, fmt in (("accuracy", accuracy_lines), ("memory", memory_lines),
                     ("vmm", vmm_lines), ("cost", cost_lines), ("binding", binding_lines)):
        if s.get(key):
            lines += fmt(s[key])
    problems, not_run = s.get("problems", []), s.get("not_run", [])
    verdict = ("FAIL (%d problems)" % len(problems) if problems else
               "COULD NOT RUN everything here" if not_run else "PASS")
    lines += ["", "result: %s" % verdict] + ["  " + p for p in problems]
    lines += ["  not run: " + n for n in not_run]
    return "\n".join(lines) + "\n"


def write_summary(out, s, echo=True):
    """summary.json and summary.txt, each written whole then renamed: a run cut off between
    two parts still leaves the last complete summary."""
    text = summary_text(s)
    for name, data in (("summary.json", json.dumps(s, indent=1)), ("summary.txt", text)):
        with open(os.path.join(out, name + ".tmp"), "w") as f:
            f.write(data)
        os.replace(os.path.join(out, name + ".tmp"), os.path.join(out, name))
    if echo:
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
        print("gpu-test: mappings through driver entry points...", file=sys.stderr)
        s["vmm"] = vmm(py, args.out)
        print("gpu-test: cost per launch, %d rounds..." % args.rounds, file=sys.stderr)
        s["cost"] = launch_cost(py, args.out, args.rounds, args.launches)
        s["problems"] = (s["accuracy"]["problems"] + s["memory"]["problems"]
                         + s["vmm"]["problems"] + s["cost"]["problems"])
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


# --- gpu-test/run: preflight, then every check this host can run, within a time budget ---------

EXIT_PASS, EXIT_FAIL, EXIT_CANNOT = 0, 1, 3


def run_part(s, out, key, fn):
    """One check: its result in s[key] (or its failure in problems), its lines printed and the
    summary files rewritten at once, so a run cut off later still reports this part."""
    try:
        s[key] = fn()
        s["problems"] += s[key]["problems"]
    except Failure as e:
        s["problems"].append("%s: %s" % (key, e))
    except subprocess.TimeoutExpired as e:
        s["problems"].append("%s: %s timed out after %d s" % (key, e.cmd[0], e.timeout))
    write_summary(out, s, echo=False)
    if s.get(key):
        print("\n".join({"accuracy": accuracy_lines, "memory": memory_lines, "vmm": vmm_lines,
                         "cost": cost_lines, "binding": binding_lines}[key](s[key])), flush=True)


def bpf_unusable(pf):
    """Why gpusnoop's probes cannot run here, or None."""
    for ok, why in ((os.geteuid() == 0, "not root"), (pf["btf"], "no BTF"),
                    (pf["bpf"], "BPF not allowed"), (pf["uprobes"], "no uprobes")):
        if not ok:
            return why
    return None


def run_parser():
    p = argparse.ArgumentParser(prog="gpu-test/run", description=(
        "gpusnoop on a real NVIDIA GPU with PyTorch 2.x: preflight, then the checks this host "
        "can run. Exit 0 passed, 1 failed, 3 could not run (all of it) here."))
    p.add_argument("out", help="folder for summary.txt, summary.json and the traces")
    p.add_argument("--budget", type=float, default=420,
                   help="seconds for the whole run (default 420): fewer cost rounds to fit")
    p.add_argument("--steps", type=int, default=20, help="SGD steps compared (default 20)")
    p.add_argument("--rounds", type=int, default=5, help="cost rounds per mode (default 5)")
    p.add_argument("--launches", type=int, default=20000, help="launches per cost run")
    return p


def main_run(argv=None):
    global DEADLINE
    args = run_parser().parse_args(argv)
    DEADLINE = time.monotonic() + args.budget
    os.makedirs(args.out, exist_ok=True)
    python = os.environ.get("PYTHON") or shutil.which("python3") or sys.executable
    s = {"date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "host": platform.node(),
         "bundle": IN_BUNDLE, "gpusnoop": GPUSNOOP, "preflight_lines": [], "problems": [],
         "not_run": []}

    def say(name, text):
        line = "preflight %-13s %s" % (name + ":", text)
        s["preflight_lines"].append(line)
        print(line, flush=True)

    pf = s["preflight"] = machine_checks.run(say, python, without_injection(os.environ))
    if pf["why"]:
        s["not_run"].append("every check: " + pf["why"])
        write_summary(args.out, s, echo=False)
        print("gpu-test: could not run here: %s" % pf["why"], file=sys.stderr)
        return EXIT_CANNOT
    s["machine"] = dict(pf["driver"], torch=dict(pf["torch"], python=python))
    no_bpf = bpf_unusable(pf)
    if no_bpf:
        s["not_run"] += ["%s: %s" % (c, no_bpf) for c in (
            "1. kernels vs Kineto", "2. leaks vs torch's counters",
            "3. cost of record and record -e gpu", "4. mappings through entry points")]
        run_part(s, args.out, "cost", lambda: launch_cost(
            python, args.out, args.rounds, args.launches, ["untraced", "dormant"]))
    else:
        run_part(s, args.out, "accuracy", lambda: accuracy(python, args.out, args.steps))
        run_part(s, args.out, "memory", lambda: memory(python, args.out))
        run_part(s, args.out, "vmm", lambda: vmm(python, args.out))
        run_part(s, args.out, "cost", lambda: launch_cost(python, args.out, args.rounds,
                                                           args.launches))
    run_part(s, args.out, "binding", lambda: cupti_binding((s.get("cost") or {}).get("dormant")))
    write_summary(args.out, s, echo=False)
    print("\n".join(summary_text(s).splitlines()[-1 - len(s["problems"]) - len(s["not_run"]):]))
    return EXIT_FAIL if s["problems"] else EXIT_CANNOT if s["not_run"] else EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
