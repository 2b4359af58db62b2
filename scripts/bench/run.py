#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""gpusnoop benchmarks: overhead against the empty-probe floor, drain, symbolization, memory.

Run as root from the repository root (`make bench` does). Prints one table; every ratio in it
comes from runs of this one invocation, interleaved in random order and repeated, medians kept,
so a busy machine moves absolute numbers more than ratios. Never part of the test suite.
"""
import argparse
import json
import os
import random
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import python_cost  # noqa: E402  (scripts/bench/ is the script's own directory)
import trace_size  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, ".output")
GPUSNOOP = os.environ.get("GS_BENCH_GPUSNOOP", os.path.join(ROOT, "gpusnoop"))
BENCH = os.path.join(OUT, "fixtures", "bin", "gs_bench")
FLOOR = os.path.join(OUT, "bench", "gs_bench_floor")
LIBDIR = os.path.join(OUT, "fixtures", "lib")
CUDART = os.path.join(LIBDIR, "libcudart.so.13")
LIBCUDA = os.path.join(LIBDIR, "libcuda.so.1")
PEER_BT = os.path.join(ROOT, "scripts", "bench", "peer.bt")
TORCH_TARGET = os.path.join(ROOT, "scripts", "bench", "torch_target.py")
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's, the one python3-torch is installed for
TIMEOUT = 120
CALLS_PER_ITER = 6  # 4 cudaLaunchKernel + cudaMalloc + cudaFree
NAN = float("nan")


class Lines:
    """Line reader over a pipe with timeouts; keeps everything read."""

    def __init__(self, stream):
        self.stream = stream
        self.buf = b""
        self.lines = []
        self.pos = 0

    def _fill(self, timeout):
        ready, _, _ = select.select([self.stream], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.stream.fileno(), 65536)
        if not chunk:
            raise EOFError
        self.buf += chunk
        *done, self.buf = self.buf.split(b"\n")
        self.lines += [l.decode(errors="replace") for l in done]
        return True

    def wait_for(self, pred, what, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        while True:
            while self.pos < len(self.lines):
                line = self.lines[self.pos]
                self.pos += 1
                if pred(line):
                    return line
            left = end - time.monotonic()
            if left <= 0:
                raise TimeoutError("timed out waiting for " + what)
            try:
                self._fill(left)
            except EOFError:
                raise RuntimeError("stream closed waiting for %s; read: %s"
                                   % (what, self.lines[-5:]))

    def rest(self, timeout=TIMEOUT):
        end = time.monotonic() + timeout
        try:
            while time.monotonic() < end:
                self._fill(end - time.monotonic())
        except EOFError:
            pass
        return self.lines


class Workload:
    """gs_bench (or the torch target) speaking sync.h's ready/done protocol, held."""

    def __init__(self, argv, env=None):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env or dict(os.environ))
        self.out = Lines(self.p.stdout)
        self.pid = int(self.out.wait_for(lambda l: l.startswith("ready "), "ready").split()[1])

    def release(self):
        os.kill(self.pid, signal.SIGUSR1)

    def line(self, prefix, timeout=TIMEOUT):
        return self.out.wait_for(lambda l: l.startswith(prefix), prefix, timeout)

    def finish(self):
        """After 'done': let it exit."""
        self.release()
        self.p.wait(timeout=TIMEOUT)
        if self.p.returncode:
            raise RuntimeError("workload failed: " + self.p.stderr.read().decode())

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class Tool:
    """A tracer attached to one pid; ready once `ready_text` shows on stdout or stderr."""

    def __init__(self, argv, ready_text, on_stdout=False):
        self.p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.out = Lines(self.p.stdout)
        self.err = Lines(self.p.stderr)
        self.t_start = time.monotonic()
        (self.out if on_stdout else self.err).wait_for(lambda l: ready_text in l, ready_text)
        self.t_ready = time.monotonic()

    def cpu_s(self):
        """CPU time of all its threads, ns precision (schedstat: time on CPU)."""
        total = 0
        for tid in os.listdir("/proc/%d/task" % self.p.pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (self.p.pid, tid)) as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass
        return total / 1e9

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        out = self.out.rest()
        err = self.err.rest()
        self.p.wait(timeout=TIMEOUT)
        return out, err

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def peer_script():
    with open(PEER_BT) as f:
        text = f.read()
    return text.replace("@CUDART@", CUDART).replace("@LIBCUDA@", LIBCUDA)


# GS_BENCH_BEFORE=PATH: each gpusnoop kind named KIND@before runs that binary (a build of the
# code before a change), interleaved with the rest: before/after in one run (--kinds)
BEFORE = os.environ.get("GS_BENCH_BEFORE", "")


def start_tool(kind, pid, tmp):
    global GPUSNOOP
    if kind.endswith("@before"):
        saved, GPUSNOOP = GPUSNOOP, BEFORE
        try:
            return start_tool(kind.removesuffix("@before"), pid, tmp)
        finally:
            GPUSNOOP = saved
    if kind == "untraced":
        return None
    if kind == "floor":
        return Tool([FLOOR, str(pid), "all"], "attached")
    if kind == "floor-mem":
        return Tool([FLOOR, str(pid), "mem"], "attached")
    if kind == "floor-min":
        return Tool([FLOOR, str(pid), "min"], "attached")
    if kind == "floor-min-mem":
        return Tool([FLOOR, str(pid), "min-mem"], "attached")
    if kind == "floor-min-daemon":
        return Tool([FLOOR, str(pid), "min-daemon"], "attached")
    if kind in ("daemon", "daemon-metrics", "daemon-sample"):
        return start_daemon(kind, tmp)
    if kind == "record":
        return Tool([GPUSNOOP, "record", "-p", str(pid), "-o", "/dev/null"], "recording")
    if kind == "record-latency":
        return Tool([GPUSNOOP, "record", "-e", RECORD_EVENTS + ",cuda-launch-latency", "-p",
                     str(pid), "-o", "/dev/null"], "recording")
    if kind == "record-nostacks":
        return Tool([GPUSNOOP, "record", "--stacks", "none", "-p", str(pid), "-o", "/dev/null"],
                    "recording")
    if kind in ("leaks", "leaks-nostacks"):
        return Tool([GPUSNOOP, "leaks", "-p", str(pid), "--format", "json", "-o",
                     os.path.join(tmp, "leaks.json")] +
                    (["--stacks", "none"] if kind == "leaks-nostacks" else []),
                    "tracing CUDA allocations")
    if kind == "bpftrace":
        path = os.path.join(tmp, "peer.bt")
        with open(path, "w") as f:
            f.write(peer_script())
        return Tool(["bpftrace", "-p", str(pid), path], "peer tracing", on_stdout=True)
    raise ValueError(kind)


def start_daemon(kind, tmp):
    """gpusnoop daemon, always-on: OOM reports and metrics, no recording; ready once it probes
    our runtime. daemon-metrics adds cuda-call-metrics (launches and syncs counted);
    daemon-sample is the default with stack-sample 64."""
    d = tempfile.mkdtemp(prefix="daemon-", dir=tmp)
    conf = os.path.join(d, "gpusnoop.conf")
    with open(conf, "w") as f:
        f.write("cuda-call-metrics %s\n" % ("on" if kind == "daemon-metrics" else "off"))
        if kind == "daemon-sample":  # not in the default set: --kinds ...,daemon-sample
            f.write("stack-sample 64\n")
    t = Tool([GPUSNOOP, "daemon", "--config", conf, "--output-dir", os.path.join(d, "out"),
              "--socket", os.path.join(d, "ctl.sock"), "--metrics-addr", "127.0.0.1:0"],
             "CUDA functions in " + CUDART)
    try:
        t.err.wait_for(lambda l: "daemon: following every CUDA process" in l, "the daemon ready")
    except BaseException:
        t.kill()
        raise
    return t


def ppid_of(pid):
    try:
        with open("/proc/%s/stat" % pid) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def foreign_all_sessions():
    """Pids of other users' `gpusnoop ... -a` sessions and daemons: they probe every CUDA
    process, ours too."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if argv and argv[0].endswith(b"gpusnoop") and (b"-a" in argv or b"daemon" in argv):
            if ppid_of(d) != os.getpid():  # our own daemon runs are what is measured
                found.append(int(d))
    return found


class QuietWatch:
    """Waits for a moment with no foreign -a session, then notes whether one starts."""

    waited_s = 0.0
    discarded = 0

    def __init__(self, limit_s=120):
        t0 = time.monotonic()
        while foreign_all_sessions() and time.monotonic() - t0 < limit_s:
            time.sleep(0.5)
        QuietWatch.waited_s += time.monotonic() - t0
        self.disturbed = False
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self):
        while not self.done.wait(0.1):
            if foreign_all_sessions():
                self.disturbed = True

    def stop(self):
        self.done.set()
        self.thread.join()
        if self.disturbed:
            QuietWatch.discarded += 1
        return not self.disturbed


def run_traced(kind, workload_argv, tmp, during=None):
    """Starts the workload held, attaches `kind`, releases it; returns (workload, tool, extra)."""
    w = Workload(workload_argv + ["--hold"])
    t = None
    try:
        t = start_tool(kind, w.pid, tmp)
        w.release()
        extra = during(w, t) if during else None
        w.line("done")
        return w, t, extra
    except BaseException:
        if t:
            t.kill()
        w.kill()
        raise


def finish(w, t):
    res = t.stop() if t else ([], [])
    w.finish()
    return res


def median(xs):
    return statistics.median(xs) if xs else float("nan")


# --- (a)-(e): per-event overhead ------------------------------------------------------------

OVERHEAD_KINDS = ["untraced", "floor", "floor-mem", "floor-min", "floor-min-mem",
                  "floor-min-daemon", "record", "record-latency", "record-nostacks", "leaks",
                  "leaks-nostacks", "daemon", "daemon-metrics", "bpftrace"]
# record's default events (record --help), all CUDA events with stacks
RECORD_EVENTS = "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy,torch-mem"


def bench_overhead(args, tmp):
    kinds = OVERHEAD_KINDS + [k for k in args.kinds.split(",")
                              if k.endswith("@before") or k == "daemon-sample"]
    results = {k: [] for k in kinds}
    wall = {k: [] for k in kinds}
    for rnd in range(args.rounds):
        order = [k for k in kinds if k in args.kinds.split(",")]
        random.shuffle(order)
        for kind in order:
            for attempt in range(5):
                watch = QuietWatch()
                w, t, _ = run_traced(kind, [BENCH, "loop", str(args.iters), str(args.batch)],
                                     tmp)
                line = [l for l in w.out.lines if l.startswith("ns_per_iter")][0].split()
                _, err = finish(w, t)
                if watch.stop() or attempt == 4:
                    break
            if kind == "record":
                m = re.search(r"(\d+) dropped", "\n".join(err))
                if m and int(m.group(1)):
                    print("warning: record dropped %s events" % m.group(1), file=sys.stderr)
            results[kind].append(float(line[4]))
            wall[kind].append(float(line[1]))
        print("  round %d/%d: %s" % (rnd + 1, args.rounds, "  ".join(
            "%s %.0f" % (k, results[k][-1]) for k in order)), file=sys.stderr)
    return ({k: median(v) for k, v in results.items()},
            {k: median(v) for k, v in wall.items()})


# --- GPU: the CUPTI injection library, dormant and traced --------------------------------------

GPU_KINDS = ["gpu-unset", "gpu-dormant", "gpu-floor", "gpu-record"]
INJECTION = os.path.join(ROOT, "libgpusnoop-cupti.so")


def gpu_run(kind, args):
    """gs_bench's loop with the stand-in CUPTI; the library named unless gpu-unset. CUDA starts
    before the hold, so the library is loaded and probed before the first timed launch."""
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, GS_BENCH_CUDA_FIRST="1")
    if kind != "gpu-unset":
        env["CUDA_INJECTION64_PATH"] = INJECTION
    w = Workload([BENCH, "loop", str(args.iters), str(args.batch), "--hold"], env=env)
    t = None
    try:
        if kind == "gpu-record":
            t = Tool([GPUSNOOP, "record", "-e", "gpu", "-p", str(w.pid), "-o", "/dev/null"],
                     "recording")
        elif kind == "gpu-floor":
            t = Tool([FLOOR, str(w.pid), "gpu"], "attached")
        w.release()
        line = w.line("ns_per_iter").split()
        w.line("done")
    except BaseException:
        if t:
            t.kill()
        w.kill()
        raise
    finish(w, t)
    return float(line[4])


def bench_gpu(args):
    """Medians of each kind, and each round's values (for the spread)."""
    results = {k: [] for k in GPU_KINDS}
    for rnd in range(args.rounds):
        order = GPU_KINDS[:]
        random.shuffle(order)
        for kind in order:
            for attempt in range(5):
                watch = QuietWatch()
                ns = gpu_run(kind, args)
                if watch.stop() or attempt == 4:
                    break
            results[kind].append(ns)
        print("  round %d/%d: %s" % (rnd + 1, args.rounds, "  ".join(
            "%s %.0f" % (k, results[k][-1]) for k in order)), file=sys.stderr)
    return {k: median(v) for k, v in results.items()}, results


def spread(values):
    return "%.2f to %.2f" % (min(values), max(values))


# --- drain throughput -------------------------------------------------------------------------

# ring-buffer records per iteration: record sees 4 launches + alloc + free entry + free return;
# leaks sees alloc + free entry (a successful free's return is not sent)
RECORDS_PER_ITER = {"record": 7, "leaks": 2}


def bench_drain(args, tmp, kind):
    QuietWatch().stop()
    def during(w, t):
        c0 = t.cpu_s()
        line = w.line("calls", timeout=args.flood_seconds + TIMEOUT)
        time.sleep(0.5)  # what is still in the ring buffer
        return c0, t.cpu_s(), int(line.split()[1])

    w, t, (c0, c1, calls) = run_traced(kind, [BENCH, "flood", str(args.flood_seconds)], tmp,
                                       during)
    out, err = finish(w, t)
    records = calls // CALLS_PER_ITER * RECORDS_PER_ITER[kind]
    dropped = dropped_of(kind, out, err, tmp)
    cpu = max(c1 - c0, 1e-9)
    return {"records": records, "rate": records / args.flood_seconds, "cpu_s": cpu,
            "per_core": records / cpu, "cpu_s_per_m": cpu / records * 1e6,
            "dropped": dropped}


def dropped_of(kind, out, err, tmp):
    if kind == "record":
        m = re.search(r"gpusnoop record: \d+ events in [\d.]+ s, (\d+) dropped", "\n".join(err))
        return int(m.group(1)) if m else -1
    with open(os.path.join(tmp, "leaks.json")) as f:
        reports = [json.loads(l) for l in f if l.strip()]
    return max(r["dropped_events"] for r in reports) if reports else -1


def bench_sustain(args, tmp, kind):
    QuietWatch().stop()
    w, t, _ = run_traced(kind, [BENCH, "rate", str(args.sustain_rate),
                                str(args.sustain_seconds)], tmp)
    line = [l for l in w.out.lines if l.startswith("calls")][0].split()
    out, err = finish(w, t)
    return {"calls": int(line[1]), "behind_ms": float(line[3]),
            "dropped": dropped_of(kind, out, err, tmp)}


# --- start-up and shutdown -----------------------------------------------------------------

LIFECYCLE_KINDS = ["record", "leaks", "profile", "leaks-torch", "record-torch", "bpftrace"]
# the PyTorch stand-in (maps libc10.so and libc10_cuda.so): torch.bpf.o is loaded for it too
TORCH = os.path.join(OUT, "fixtures", "bin", "gs_torch")
TORCH_LIBS = os.path.join(OUT, "fixtures", "torch", "lib")


def lifecycle_workload(kind):
    if kind.endswith("-torch"):
        return Workload([TORCH, "--hold"], env=dict(os.environ, LD_LIBRARY_PATH=TORCH_LIBS))
    return Workload([BENCH, "loop", "1", "1", "--hold"])


def lifecycle_argv(kind, pid, tmp):
    """(argv, ready text, on stdout, output file or None) of one tool attached to pid."""
    kind = kind.removesuffix("-torch")
    if kind == "record":
        out = os.path.join(tmp, "life.json")
        return [GPUSNOOP, "record", "-p", str(pid), "-o", out], "recording", False, out
    if kind == "leaks":
        out = os.path.join(tmp, "life-leaks.json")
        return ([GPUSNOOP, "leaks", "-p", str(pid), "--format", "json", "-o", out],
                "tracing CUDA allocations", False, out)
    if kind == "profile":
        out = os.path.join(tmp, "life.folded")
        return [GPUSNOOP, "profile", "-p", str(pid), "-o", out], "profiling", False, out
    # the peer: entry and return probes on the very functions record probes, empty bodies
    path = os.path.join(tmp, "same-set.bt")
    lines = subprocess.run([FLOOR, str(pid), "all", "--list"], check=True,
                           stdout=subprocess.PIPE).stdout.decode().split()
    probes = ",\n".join("%s:%s" % (kind_, l) for l in lines for kind_ in ("uprobe", "uretprobe"))
    with open(path, "w") as f:
        f.write('BEGIN { printf("peer tracing\\n"); }\n%s\n{ @n = count(); }\n' % probes)
    return ["bpftrace", "-p", str(pid), path], "peer tracing", True, None


def valid_output(kind, path):
    if kind == "record":
        with open(path) as f:
            json.load(f)
    elif kind == "leaks":
        with open(path) as f:
            for line in f:
                if line.strip():
                    json.loads(line)
    return True


def lifecycle_run(kind, tmp):
    """Start to ready, then SIGINT to a valid output file and to exit, on an idle target."""
    QuietWatch().stop()
    w = lifecycle_workload(kind)
    t = None
    try:
        argv, ready, on_stdout, out = lifecycle_argv(kind, w.pid, tmp)
        if out and os.path.exists(out):
            os.unlink(out)
        t = Tool(argv, ready, on_stdout)
        time.sleep(0.5)  # idle; bpftrace 0.17 loses a SIGINT sent right after BEGIN ran
        t.p.send_signal(signal.SIGINT)
        t_sig = time.monotonic()
        t_file = None
        while t.p.poll() is None:
            if out and t_file is None and os.path.exists(out):
                t_file = time.monotonic()
            time.sleep(0.001)
        t_exit = time.monotonic()
        if out and t_file is None and os.path.exists(out):
            t_file = t_exit
        t.stop()
        if out and not valid_output(kind.removesuffix("-torch"), out):
            raise RuntimeError(kind + ": no valid output")
        if kind.endswith("-torch"):
            w.kill()  # its run holds again after its OOM; only the start-up counts here
        else:
            w.release()
            w.line("done")
            w.finish()
    except BaseException:
        if t:
            t.kill()
        w.kill()
        raise
    return {"ready": t.t_ready - t.t_start, "file": (t_file - t_sig) if t_file else None,
            "exit": t_exit - t_sig}


def bench_lifecycle(args, tmp):
    res = {k: {"ready": [], "file": [], "exit": []} for k in LIFECYCLE_KINDS}
    for _ in range(args.rounds):
        order = LIFECYCLE_KINDS[:]
        random.shuffle(order)
        for kind in order:
            r = lifecycle_run(kind, tmp)
            for k, v in r.items():
                if v is not None:
                    res[kind][k].append(v)
    return {k: {m: median(v) for m, v in d.items()} for k, d in res.items()}


# --- symbolization of the first report for a process mapping libtorch -----------------------

def evict(paths):
    """Drops the page cache of these files (pages mapped by a live process stay)."""
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def mapped_files(pid):
    files = set()
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                files.add(parts[5].strip())
    return sorted(files | {GPUSNOOP})


def bench_symbolize(args, tmp, cold):
    QuietWatch().stop()
    w = Workload([SYSTEM_PYTHON, TORCH_TARGET, CUDART])
    t = None
    try:
        files = mapped_files(w.pid)
        if cold:
            evict(files)
        t = Tool([GPUSNOOP, "leaks", "-p", str(w.pid), "--format", "json"],
                 "tracing CUDA allocations")
        t_release = time.monotonic()
        w.release()
        w.line("done")
        t.p.send_signal(signal.SIGINT)
        report = json.loads(t.out.wait_for(lambda l: l.startswith("{"), "report"))
        t_report = time.monotonic()
        t.stop()
        w.finish()
    except BaseException:
        if t:
            t.kill()
        w.kill()
        raise
    frames = [f for p in report["processes"] for s in p["stacks"] for f in s["frames"]]
    torch_frames = [f for f in frames if "libtorch" in (f["module"] or "")]
    torch_mib = sum(os.path.getsize(f) for f in files if "libtorch" in f) / 2**20
    return {"attach_s": t.t_ready - t.t_start, "report_s": t_report - t_release,
            "first_report_s": (t.t_ready - t.t_start) + (t_report - t_release),
            "frames": len(frames), "torch_frames": len(torch_frames),
            "torch_named": sum(1 for f in torch_frames if f["symbol"]), "torch_mib": torch_mib}


# --- memory with a million outstanding allocations ------------------------------------------

def status_kib(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def ringbuf_kib(pid):
    """Resident KiB of gpusnoop's mmapped BPF maps (the ring buffer)."""
    total, in_bpf = 0, False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                in_bpf = "bpf" in line
            elif in_bpf and line.startswith("Rss:"):
                total += int(line.split()[1])
    return total


def wait_idle(t, settle=1.0, timeout=TIMEOUT):
    """Waits until the tool used no CPU for `settle` seconds (it has drained the buffer)."""
    end = time.monotonic() + timeout
    last = t.cpu_s()
    while time.monotonic() < end:
        time.sleep(settle)
        now = t.cpu_s()
        if now == last:
            return
        last = now


def bench_memory(args, tmp):
    QuietWatch().stop()
    samples = {}
    w = Workload([BENCH, "hold", str(args.hold_allocs), str(args.churn_seconds), "--hold"])
    t = None
    try:
        t = start_tool("leaks", w.pid, tmp)
        base = status_kib(t.p.pid, "VmRSS")
        w.release()
        w.line("held", timeout=600)
        wait_idle(t)
        rb = ringbuf_kib(t.p.pid)
        samples["held"] = status_kib(t.p.pid, "VmHWM"), status_kib(t.p.pid, "VmRSS")
        w.release()
        w.line("done", timeout=args.churn_seconds + TIMEOUT)
        wait_idle(t)
        samples["churned"] = status_kib(t.p.pid, "VmHWM"), status_kib(t.p.pid, "VmRSS")
        rb = max(rb, ringbuf_kib(t.p.pid))
        pid = t.p.pid
        t.p.send_signal(signal.SIGINT)
        t.out.rest(timeout=5)
        # the final report is being built: sample until the process is gone
        hwm = samples["churned"][0]
        while t.p.poll() is None:
            try:
                hwm = max(hwm, status_kib(pid, "VmHWM"))
            except (OSError, ValueError):
                break
            time.sleep(0.05)
        samples["report"] = hwm, 0
        t.stop()
        w.finish()
    except BaseException:
        if t:
            t.kill()
        w.kill()
        raise
    with open(os.path.join(tmp, "leaks.json")) as f:
        reports = [json.loads(l) for l in f if l.strip()]
    held = sum(p["outstanding_allocations"] for r in reports[-1:] for p in r["processes"])
    return {"base_kib": base, "ringbuf_kib": rb, "samples": samples, "outstanding": held}


# --- stitch ---------------------------------------------------------------------------------

def synthetic_trace(path, host, pid, events, offset_ns):
    """A gpusnoop trace of `events` launch slices (args and a 3-frame stack, as record writes)."""
    with open(path, "w") as f:
        f.write('{"displayTimeUnit":"ns","traceEvents":[\n')
        f.write('{"ph":"M","name":"process_name","pid":%d,"tid":0,"ts":0,"args":{"name":"train"}}'
                % pid)
        ts = 1000000000
        for i in range(events):
            ts += 20000 + (i * 7919) % 500  # ~50k launches/s: a busy training process
            f.write(',\n{"ph":"X","name":"cudaLaunchKernel","cat":"cuda_runtime","pid":%d,'
                    '"tid":%d,"ts":%d.%03d,"dur":3.250,"args":{"kernel":"gemm_kernel(float*, int)",'
                    '"grid":[128,2,1],"block":[256,1,1],"shared_mem":4096,"stream":"0x5a5a",'
                    '"stack":["launch_gemm+0x8d (/opt/train)","main+0x13 (/opt/train)",'
                    '"/usr/lib/x86_64-linux-gnu/libc.so.6+0x2724a"]}}'
                    % (pid, pid + i % 4, ts // 1000, ts % 1000))
        f.write('\n],"metadata":{"tool":"gpusnoop","host":"%s","monotonic_to_realtime_ns":%d,'
                '"dropped_events":0}}\n' % (host, offset_ns))


def bench_stitch(args, tmp):
    """MB/s of `gpusnoop stitch` merging two large traces of two hosts, and its peak RSS."""
    events = args.stitch_events
    inputs = []
    for i, host in enumerate(("bench-host-a", "bench-host-b")):
        path = os.path.join(tmp, "stitch-%s.json" % host)
        synthetic_trace(path, host, 4242, events, 1795000000000000000 + i * 1500000)
        inputs.append(path)
    out = os.path.join(tmp, "stitched.json")
    size = sum(os.path.getsize(p) for p in inputs)
    t0 = time.monotonic()
    p = subprocess.Popen([GPUSNOOP, "stitch"] + inputs + ["-o", out], stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)  # this child's own peak RSS and CPU time
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit("bench: gpusnoop stitch failed: %s" % p.stderr.read().decode().strip())
    cpu = usage.ru_utime + usage.ru_stime
    with open(out) as f:
        merged = sum(1 for line in f if '"cudaLaunchKernel"' in line)
    for path in inputs + [out]:
        os.unlink(path)
    if merged != 2 * events:
        raise SystemExit("bench: stitch wrote %d of %d events" % (merged, 2 * events))
    mib = size / 2**20
    return [("stitch two %.0f MiB traces (%d events each)" % (mib / 2, events),
             "%.1f MB/s" % (size / 1e6 / wall),
             "%.1f s wall, %.1f CPU-s" % (wall, cpu)),
            ("stitch peak RSS", fmt_mib(usage.ru_maxrss), "of the stitch process (wait4)")]


# --- the table ------------------------------------------------------------------------------

def fmt_mib(kib):
    return "%.1f MiB" % (kib / 1024)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", 5)))
    ap.add_argument("--iters", type=int, default=int(os.environ.get("BENCH_ITERS", 20000)))
    ap.add_argument("--batch", type=int, default=500)
    ap.add_argument("--kinds", default=",".join(OVERHEAD_KINDS),
                    help="overhead runs to make (while iterating on one; ratios need floor)")
    ap.add_argument("--flood-seconds", type=float,
                    default=float(os.environ.get("BENCH_FLOOD_S", 10)))
    ap.add_argument("--sustain-rate", type=int, default=100000)
    ap.add_argument("--sustain-seconds", type=float,
                    default=float(os.environ.get("BENCH_SUSTAIN_S", 60)))
    ap.add_argument("--hold-allocs", type=int,
                    default=int(os.environ.get("BENCH_HOLD_ALLOCS", 1000000)))
    ap.add_argument("--churn-seconds", type=float, default=10)
    ap.add_argument("--stitch-events", type=int, default=500000,
                    help="launch events in each of the two traces stitch merges")
    ap.add_argument("--only", default=os.environ.get("BENCH_ONLY", ""),
                    help="comma list of overhead,python,gpu,drain,sustain,symbolize,memory,"
                    "trace,stitch")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench: needs root (BPF)")
    only = set(filter(None, args.only.split(",")))

    def want(x):
        return not only or x in only

    rows = []
    with tempfile.TemporaryDirectory(prefix="gs-bench-") as tmp:
        if want("overhead"):
            print("per-iteration overhead, %d rounds..." % args.rounds, file=sys.stderr)
            med, wall = bench_overhead(args, tmp)
            if set(OVERHEAD_KINDS) - set(args.kinds.split(",")):
                for k in med:
                    if med[k] == med[k]:  # measured (not nan)
                        print("  %-18s %8.0f ns CPU  %8.0f ns wall" % (k, med[k], wall[k]))
                for k, f in [("daemon", "floor-mem"), ("daemon-metrics", "floor-min-daemon")] + \
                        [(k, "floor-min-daemon" if "metrics" in k else "floor-mem")
                         for k in med if k.startswith("daemon") and k.endswith("@before")]:
                    if med.get(k, NAN) == med.get(k, NAN) and med.get(f, NAN) == med.get(f, NAN):
                        print("  %s / %s: %.3fx (daemon target <= 1.1x)" % (k, f, med[k] / med[f]))
                return
            a, b, bm = med["untraced"], med["floor"], med["floor-mem"]
            fmin, fmin_mem = med["floor-min"], med["floor-min-mem"]
            rows.append(("overhead per iteration (4 launch + malloc + free = 6 calls): CPU ns "
                         "of the workload thread, median of %d interleaved runs" % args.rounds,
                         None, None))
            for k, label in [("untraced", "(a) untraced"),
                             ("floor", "(b) floor: empty probes, record's set"),
                             ("floor-mem", "(b') floor: empty probes, leaks' set"),
                             ("floor-min", "(m) minimal floor of record: launches entry only"),
                             ("floor-min-mem", "(m') minimal floor of leaks: frees entry only"),
                             ("record", "(c) gpusnoop record, all events + stacks"),
                             ("record-latency", "(c') record + cuda-launch-latency"),
                             ("record-nostacks", "(cn) record --stacks none"),
                             ("leaks", "(d) gpusnoop leaks"),
                             ("leaks-nostacks", "(dn) leaks --stacks none"),
                             ("floor-min-daemon", "(md) minimal floor of the daemon with "
                              "cuda-call-metrics: (b') + launches entry, syncs"),
                             ("daemon", "(da) gpusnoop daemon, default: OOM + metrics"),
                             ("daemon-metrics", "(dm) gpusnoop daemon, cuda-call-metrics on"),
                             ("bpftrace", "(e) bpftrace peer script")]:
                rows.append((label, "%.0f ns" % med[k],
                             ("wall %.0f ns" % wall[k]) + ("" if k == "untraced" else
                             "; +%.0f ns/call over (a)" % ((med[k] - a) / CALLS_PER_ITER))))
            rows.append(("(c)/(b) record vs floor", "%.2fx" % (med["record"] / b),
                         "cost above (a): %.2fx the floor's" % ((med["record"] - a) / (b - a))))
            rows.append(("(c)-(a) / (m)-(a): record vs its minimal floor, added cost",
                         "%.2fx" % ((med["record"] - a) / (fmin - a)),
                         "target <= 1.3x; (b), today's same-probe-set floor, adds %.2fx (m)'s"
                         % ((b - a) / (fmin - a))))
            rows.append(("(c')-(c): the launch-latency opt-in",
                         "+%.0f ns" % (med["record-latency"] - med["record"]),
                         "+%.0f ns per launch; (c')-(a) / (m)-(a) = %.2fx"
                         % ((med["record-latency"] - med["record"]) / 4,
                            (med["record-latency"] - a) / (fmin - a))))
            rows.append(("(d)-(a) / (m')-(a): leaks vs its minimal floor, added cost",
                         "%.2fx" % ((med["leaks"] - a) / (fmin_mem - a)),
                         "target <= 1.3x; (b'), allocations and frees entry + return, adds "
                         "%.2fx (m')'s" % ((bm - a) / (fmin_mem - a))))
            rows.append(("(cn)-(a) / (m)-(a): record --stacks none vs its minimal floor",
                         "%.2fx" % ((med["record-nostacks"] - a) / (fmin - a)), "target <= 1.1x"))
            rows.append(("(dn)-(a) / (m')-(a): leaks --stacks none vs its minimal floor",
                         "%.2fx" % ((med["leaks-nostacks"] - a) / (fmin_mem - a)),
                         "target <= 1.1x"))
            fmd = med["floor-min-daemon"]
            # The default daemon's floor is (b'), not (m'): its `ctl leaks` and reports count a
            # failed free and keep the allocation it left in place, which only the free's
            # return probe sees (leaks keeps that probe for the same reason).
            rows.append(("(da)/(b'): daemon always-on (OOM + metrics) vs its floor, allocations "
                         "and frees entry + return", "%.3fx" % (med["daemon"] / bm),
                         "target <= 1.1x; /(m') %.3fx; /(a) %.3fx; added cost (da)-(a) / "
                         "(b')-(a) = %.2fx" % (med["daemon"] / fmin_mem, med["daemon"] / a,
                                               (med["daemon"] - a) / (bm - a))))
            rows.append(("(dm)/(md): daemon + cuda-call-metrics vs its floor",
                         "%.3fx" % (med["daemon-metrics"] / fmd),
                         "target <= 1.1x; /(a) %.3fx; added cost (dm)-(a) / (md)-(a) = %.2fx"
                         % (med["daemon-metrics"] / a, (med["daemon-metrics"] - a) / (fmd - a))))
            rows.append(("(d)/(b) leaks vs floor", "%.2fx" % (med["leaks"] / b),
                         "vs (b'), same probe set: %.2fx; cost above (a): %.2fx (b')'s"
                         % (med["leaks"] / bm, (med["leaks"] - a) / (bm - a))))
            rows.append(("(e)/(b) bpftrace vs floor", "%.2fx" % (med["bpftrace"] / b),
                         "cost above (a): %.2fx the floor's" % ((med["bpftrace"] - a) / (b - a))))
        if want("python"):
            print("Python frames...", file=sys.stderr)
            rows.extend(python_cost.bench(sys.modules[__name__], args, tmp))
        if want("lifecycle"):
            print("start-up and shutdown, %d rounds..." % args.rounds, file=sys.stderr)
            life = bench_lifecycle(args, tmp)
            rows.append(("start-up and shutdown on an idle held gs_bench (libcudart mapped; "
                         "*-torch: the PyTorch stand-in gs_torch, libc10 mapped too): median "
                         "of %d interleaved runs; bpftrace: entry + return probes on record's "
                         "functions, empty bodies" % args.rounds, None, None))
            for kind in LIFECYCLE_KINDS:
                r = life[kind]
                target = "target <= 1 s" if kind.endswith("-torch") else "target <= 0.5 s"
                rows.append(("%s: start to ready" % kind, "%.3f s" % r["ready"],
                             target if kind != "bpftrace" else "the peer"))
                if kind != "bpftrace":
                    rows.append(("%s: SIGINT to a valid output file" % kind,
                                 "%.3f s" % r["file"], "target <= 0.2 s"))
                rows.append(("%s: SIGINT to exit" % kind, "%.3f s" % r["exit"],
                             "target <= 0.5 s" if kind != "bpftrace" else "the peer"))
        if want("gpu") and os.path.exists(INJECTION):
            print("GPU injection library, %d rounds..." % args.rounds, file=sys.stderr)
            g, per_round = bench_gpu(args)
            g0, gf = g["gpu-unset"], g["gpu-floor"]
            rounds = list(zip(*(per_round[k] for k in GPU_KINDS)))
            rows.append(("CUDA_INJECTION64_PATH: CPU ns per iteration (6 calls, 4 launches) with "
                         "the stand-in CUPTI, median of %d interleaved runs" % args.rounds,
                         None, None))
            rows.append(("(g0) variable unset", "%.0f ns" % g0, ""))
            rows.append(("(g1) set, no gpusnoop: the library dormant", "%.0f ns" %
                         g["gpu-dormant"], "%.3fx (g0), +%.0f ns per launch (rounds: %s "
                         "ns); the stand-in CUPTI's own record-making included" %
                         (g["gpu-dormant"] / g0, (g["gpu-dormant"] - g0) / 4,
                          spread([(r[1] - r[0]) / 4 for r in rounds]))))
            rows.append(("(gf) floor: empty probes on (g2)'s set, the library active",
                         "%.0f ns" % gf, "%.3fx (g0), +%.0f ns per launch" %
                         (gf / g0, (gf - g0) / 4)))
            rows.append(("(g2) set, gpusnoop record -e gpu -p", "%.0f ns" % g["gpu-record"],
                         "%.3fx (g0), +%.0f ns per launch (rounds: %s us)" %
                         (g["gpu-record"] / g0, (g["gpu-record"] - g0) / 4,
                          spread([(r[3] - r[0]) / 4000 for r in rounds]))))
            rows.append(("(g2)-(g0) / (gf)-(g0): record -e gpu vs its floor, added cost",
                         "%.2fx" % ((g["gpu-record"] - g0) / (gf - g0)),
                         "rounds: %s; (g2)/(gf) %.2fx" %
                         (spread([(r[3] - r[0]) / (r[2] - r[0]) for r in rounds]),
                          g["gpu-record"] / gf)))
        if want("drain"):
            for kind in ("leaks", "record"):
                print("drain, %s, %.0f s flood..." % (kind, args.flood_seconds),
                      file=sys.stderr)
                d = bench_drain(args, tmp, kind)
                rows.append(("drain %s: events/s consumed, dropped" % kind,
                             "%.0f/s" % d["rate"], "%d dropped" % d["dropped"]))
                rows.append(("drain %s: events per CPU-second (one core)" % kind,
                             "%.0f/s" % d["per_core"],
                             "%.2f CPU-s per 1M events (%.2f CPU-s measured)"
                             % (d["cpu_s_per_m"], d["cpu_s"])))
        if want("sustain"):
            for kind in ("leaks", "record"):
                print("sustained %d calls/s for %.0f s, %s..."
                      % (args.sustain_rate, args.sustain_seconds, kind), file=sys.stderr)
                s = bench_sustain(args, tmp, kind)
                rows.append(("sustained %dk calls/s %.0f s, %s, default buffer"
                             % (args.sustain_rate // 1000, args.sustain_seconds, kind),
                             "%d dropped" % s["dropped"],
                             "%.0f calls/s reached, pacing lag max %.0f ms"
                             % (s["calls"] / args.sustain_seconds, s["behind_ms"])))
        if want("symbolize"):
            for cold in (True, False):
                print("first report, libtorch process, %s..." % ("cold" if cold else "warm"),
                      file=sys.stderr)
                s = bench_symbolize(args, tmp, cold)
                rows.append(("first leak report, torch process (%.0f MiB libtorch), %s"
                             % (s["torch_mib"], "cold cache" if cold else "warm cache"),
                             "%.2f s" % s["first_report_s"],
                             "attach %.2f s + report %.2f s; %d frames, %d in libtorch"
                             % (s["attach_s"], s["report_s"], s["frames"],
                                s["torch_frames"])))
        if want("memory"):
            print("memory, %d outstanding allocations..." % args.hold_allocs, file=sys.stderr)
            m = bench_memory(args, tmp)
            rb = m["ringbuf_kib"]
            for phase, label in [("held", "after %d allocations held" % args.hold_allocs),
                                 ("churned", "+ %.0f s of alloc/free churn" % args.churn_seconds),
                                 ("report", "+ building the final report")]:
                hwm, rss = m["samples"][phase]
                rows.append(("leaks peak RSS beyond ring buffer, " + label,
                             fmt_mib(hwm - rb),
                             ("RSS now %s; " % fmt_mib(rss - rb) if rss else "") +
                             "ring buffer %s, start %s" % (fmt_mib(rb), fmt_mib(m["base_kib"]))))
            rows.append(("  outstanding allocations in the report", str(m["outstanding"]), ""))
        if want("trace"):
            print("trace size and record's memory in a %.0f s flood..." % args.flood_seconds,
                  file=sys.stderr)
            rows.extend(trace_size.rows(trace_size.measure(args.iters, args.flood_seconds),
                                        args.flood_seconds))
        stitch = bench_stitch(args, tmp) if want("stitch") else None
        if stitch:
            rows.extend(stitch)

    if QuietWatch.waited_s >= 1 or QuietWatch.discarded:
        rows.append(("waited for other users' `gpusnoop -a` sessions to end",
                     "%.0f s" % QuietWatch.waited_s,
                     "%d overhead runs redone (an -a session probes our workload too)"
                     % QuietWatch.discarded))
    uname = os.uname()
    print()
    print("gpusnoop bench  %s  kernel %s  %d CPUs  %s" % (
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), uname.release, os.cpu_count(),
        "load %.1f %.1f %.1f" % os.getloadavg()))
    width = max([len(r[0]) for r in rows if r[1] is not None] + [20])
    for label, value, note in rows:
        if value is None:
            print(label)
        else:
            print("  %-*s %12s  %s" % (width, label, value, note or ""))


if __name__ == "__main__":
    main()
