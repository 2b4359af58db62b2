#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_daemon.py: `gpusnoop daemon` and `gpusnoop ctl` against real fixture processes."""
import glob
import gzip
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, FIXTURES, GPUSNOOP, LIB, NOBODY, TIMEOUT, LineReader, MiB, Gpusnoop,
                     Workload, expect_eq, run_gpusnoop, test)
from test_torch import OOM_DEVICES, devices, first_workload_frame

GiB = 1024 * MiB
OOM_ENV = {"GS_FAKE_CUDA_MEM_LIMIT": str(256 * MiB), "GS_FAKE_CUDA_NO_DRIVER": "1"}


def config_file(prefix, text):
    """A fresh directory holding a gpusnoop.conf with text in it: (directory, config path)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    conf = os.path.join(tmp, "gpusnoop.conf")
    with open(conf, "w") as f:
        f.write(text)
    return tmp, conf


class Daemon:
    """gpusnoop daemon with its own output directory, socket and an OS-chosen metrics port."""

    def __init__(self, *extra):
        self.dir = tempfile.mkdtemp(prefix="gs-daemon-")
        os.chmod(self.dir, 0o755)  # the socket must be reachable by the non-root client
        self.out = os.path.join(self.dir, "reports")
        self.sock = os.path.join(self.dir, "ctl.sock")
        self.g = Gpusnoop("daemon", "--output-dir", self.out, "--socket", self.sock,
                          "--metrics-addr", "127.0.0.1:0", *extra)
        line = self.g.wait_stderr("metrics on http://", timeout=60)
        self.metrics_url = re.search(r"(http://\S+/metrics)", line).group(1)
        self.g.wait_stderr("daemon: following every CUDA process", timeout=60)

    def wait_probed(self, lib="libcudart.so.13"):
        """Blocks until the daemon probes our fixture runtime (at start or when it loads)."""
        self.g.wait_stderr(f"CUDA functions in {os.path.join(LIB, lib)}")

    def reports(self, pattern="*.json"):
        """Report files by pattern; the flight-recorder traces beside them only if asked."""
        return sorted(p for p in glob.glob(os.path.join(self.out, "gpusnoop-" + pattern))
                      if "trace" in pattern or not p.endswith(".trace.json"))

    def metrics(self):
        with urllib.request.urlopen(self.metrics_url, timeout=5) as r:
            expect_eq(r.status, 200, "metrics HTTP status")
            assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers
            return r.read().decode()

    def ctl(self, *args, uid=None):
        p = subprocess.run([GPUSNOOP, "ctl", "--socket", self.sock] + list(args),
                           capture_output=True, timeout=TIMEOUT,
                           preexec_fn=(lambda: os.setuid(uid)) if uid is not None else None)
        return p.returncode, p.stdout.decode(), p.stderr.decode()

    def stop(self):
        expect_eq(self.g.stop(), 0, f"daemon status ({self.g.stderr_text()})")
        assert not os.path.exists(self.sock), "control socket removed at exit"


def metric(text, name, pid):
    m = re.search(rf'^{name}{{pid="{pid}",comm="[^"]*"}} (\d+)$', text, re.M)
    assert m, f"{name} for pid {pid} not in:\n{text}"
    return int(m.group(1))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_scrape(d, query):
    """Debian's Prometheus scrapes the daemon; returns the query's value as it stored it."""
    tmp = tempfile.mkdtemp(prefix="gs-prometheus-")
    target = d.metrics_url.split("//")[1].split("/")[0]
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n"
                f"  - job_name: gpusnoop\n    static_configs:\n      - targets: ['{target}']\n")
    port = free_port()
    prom = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml",
                             f"--storage.tsdb.path={tmp}/data",
                             f"--web.listen-address=127.0.0.1:{port}"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = (f"http://127.0.0.1:{port}/api/v1/query?" +
           urllib.parse.urlencode({"query": query}))
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(url, timeout=5) as r:
                    result = json.load(r)["data"]["result"]
                if result:
                    expect_eq(result[0]["metric"]["job"], "gpusnoop", "scrape job")
                    return int(result[0]["value"][1])
            except (urllib.error.URLError, ConnectionError):
                pass  # still starting
            time.sleep(0.5)
        raise AssertionError(f"prometheus never stored {query}")
    finally:
        prom.terminate()
        prom.wait(TIMEOUT)


def oom_workload(d):
    """gs_oom held until the daemon probes it; returns it after its OOM (still alive)."""
    w = Workload("gs_oom", env=OOM_ENV)
    d.wait_probed()
    w.release()
    w.wait_line("oom 2")
    return w


@test
def daemon_writes_oom_report_serves_metrics_and_answers_ctl():
    d = Daemon()
    w = None
    try:
        w = oom_workload(d)
        deadline = time.monotonic() + 1.0  # the bound: a report within a second
        while not d.reports("cuda-oom-*.json") and time.monotonic() < deadline:
            time.sleep(0.02)
        files = d.reports("cuda-oom-*.json")
        expect_eq(len(files), 1, "OOM reports within a second")
        expect_eq(stat.S_IMODE(os.stat(files[0]).st_mode), 0o600, "report file mode")
        assert os.path.exists(files[0][:-5] + ".txt"), "text report beside the JSON"
        with open(files[0]) as f:
            report = json.load(f)
        expect_eq(report["report"], "trigger", "report reason")
        t = report["trigger"]
        expect_eq((t["kind"], t["pid"], t["api"], t["error"], t["bytes_requested"]),
                  ("cuda-oom", w.pid, "cudaMalloc", 2, GiB), "trigger")
        expect_eq([f["symbol"] for f in t["frames"][:2]], ["oom_request", "main"],
                  "failing call's stack")
        expect_eq(len(report["processes"]), 1, "one process per report")
        p = report["processes"][0]
        expect_eq((p["pid"], p["outstanding_bytes"], p["outstanding_allocations"]),
                  (w.pid, 96 * MiB, 3), "what the process held")
        expect_eq([(s["bytes"], s["allocations"], s["frames"][0]["symbol"]) for s in p["stacks"]],
                  [(96 * MiB, 3, "fill_device")], "held memory by stack")
        expect_eq(p["failed_allocations"], 1, "failed allocations")

        # the flight recorder: the process's last seconds as a trace, ending at the OOM
        with open(files[0][:-5] + ".trace.json") as f:
            trace = json.load(f)
        calls = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        expect_eq([(e["name"], e["args"]["bytes"], e["args"].get("error")) for e in calls],
                  [("cudaMalloc", 32 * MiB, None)] * 3 + [("cudaMalloc", GiB, 2)],
                  "calls in the flight recorder window")
        expect_eq(calls[-1]["args"]["stack"][0].split("+")[0], "oom_request", "OOM call stack")
        counter = [e["args"]["bytes"] for e in trace["traceEvents"] if e["ph"] == "C"]
        expect_eq(counter, [32 * MiB, 64 * MiB, 96 * MiB], "outstanding memory counter")
        expect_eq([e["name"] for e in trace["traceEvents"] if e["ph"] == "i"], ["cuda-oom"],
                  "trigger marker")
        expect_eq(trace["metadata"]["events"], 4, "events in the window")

        # the exposition is refreshed every second: wait for one that includes the OOM
        deadline = time.monotonic() + 3
        m = d.metrics()
        while f'pid="{w.pid}"' not in m and time.monotonic() < deadline:
            time.sleep(0.1)
            m = d.metrics()
        expect_eq(metric(m, "gpusnoop_cuda_outstanding_bytes", w.pid), 96 * MiB, "bytes metric")
        expect_eq(metric(m, "gpusnoop_cuda_outstanding_allocations", w.pid), 3, "allocs metric")
        expect_eq(metric(m, "gpusnoop_cuda_allocations_total", w.pid), 3, "allocations_total")
        expect_eq(metric(m, "gpusnoop_cuda_failed_allocations_total", w.pid), 1, "failures")
        assert re.search(r'^gpusnoop_oom_events_total\{source="cuda"\} [1-9]', m, re.M), m
        assert re.search(r"^gpusnoop_reports_written_total [1-9]", m, re.M), m

        expect_eq(prometheus_scrape(d, f'gpusnoop_cuda_outstanding_bytes{{pid="{w.pid}"}}'),
                  96 * MiB, "outstanding bytes as Prometheus scraped them")

        status, out, err = d.ctl("status")
        expect_eq(status, 0, f"ctl status ({err})")
        assert f"pid {w.pid} (gs_oom): 96.0 MiB outstanding in 3 allocations" in out, out

        status, out, err = d.ctl("leaks", str(w.pid), "--format", "json")
        expect_eq(status, 0, f"ctl leaks ({err})")
        doc = json.loads(out)
        expect_eq((doc["report"], doc["processes"][0]["outstanding_bytes"]),
                  ("snapshot", 96 * MiB), "ctl leaks report")

        status, out, err = d.ctl("snapshot", str(w.pid))
        expect_eq(status, 0, f"ctl snapshot ({err})")
        path = out.strip()
        assert path.startswith(os.path.join(d.out, "gpusnoop-snapshot-")), out
        with open(path) as f:
            expect_eq(json.load(f)["processes"][0]["pid"], w.pid, "snapshot file")

        # another uid may not read someone else's process, nor see it in status
        status, out, err = d.ctl("leaks", str(w.pid), uid=NOBODY)
        expect_eq((status, out), (1, ""), "ctl leaks by a non-owner")
        assert "permission denied" in err and len(err.splitlines()) == 1, err
        status, out, err = d.ctl("status", uid=NOBODY)
        expect_eq(status, 0, f"ctl status by a non-owner ({err})")
        assert f"pid {w.pid}" not in out, out

        status, _, err = d.ctl("frobnicate")
        expect_eq(status, 64, "unknown request: a usage error")
        assert "unknown request 'frobnicate'" in err, err
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def daemon_reload_keeps_a_good_config_and_caps_the_output_directory():
    tmp, conf = config_file("gs-daemon-conf-",
                            "# test config\noom-reports on\ntrigger-interval 0  # every OOM\n")
    d = Daemon("--config", conf)
    w = None
    try:
        with open(conf, "w") as f:
            f.write("trigger-interval 0\noutput-max-bytes 1\n")
        d.g.proc.send_signal(signal.SIGHUP)
        d.g.wait_stderr("configuration reloaded")
        w = oom_workload(d)
        for _ in range(2):
            status, _, err = d.ctl("snapshot", str(w.pid))
            expect_eq(status, 0, f"ctl snapshot ({err})")
        # a 1-byte cap keeps only the newest report file
        expect_eq(len(os.listdir(d.out)), 1, f"files left under the cap: {os.listdir(d.out)}")

        with open(conf, "w") as f:
            f.write("trigger-interval 0\nfrobnicate yes\n")
        d.g.proc.send_signal(signal.SIGHUP)
        d.g.wait_stderr(f"{conf}:2: unknown setting 'frobnicate'")
        d.g.wait_stderr("reload: keeping the running configuration")
        status, _, err = d.ctl("status")
        expect_eq(status, 0, f"still answering after a bad reload ({err})")
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def daemon_bad_settings_are_one_line_errors():
    tmp = tempfile.mkdtemp(prefix="gs-daemon-bad-")
    conf = os.path.join(tmp, "bad.conf")
    with open(conf, "w") as f:
        f.write("output-dir /tmp/x\nmetrics-addr nowhere\n")
    status, out, err = run_gpusnoop("daemon", "--config", conf)
    expect_eq((status, out), (1, ""), "bad config")
    expect_eq(err.strip(), f"gpusnoop: error: {conf}:2: 'nowhere' is not HOST:PORT (or off)",
              "bad config message")

    link = os.path.join(tmp, "link")
    os.symlink(tmp, link)
    status, _, err = run_gpusnoop("daemon", "--output-dir", link, "--socket",
                                  os.path.join(tmp, "s"), "--metrics-addr", "off", timeout=90)
    expect_eq(status, 1, "output directory that is a symlink")
    assert f"output directory {link}: is a symlink" in err, err

    status, _, err = run_gpusnoop("ctl", "--socket", os.path.join(tmp, "none"), "status")
    expect_eq(status, 1, "ctl without a daemon")
    assert "cannot reach the daemon" in err and len(err.strip().splitlines()) == 1, err


def memory_cgroup(limit):
    """A new memory cgroup (v2 or v1) limited to limit bytes; returns its directory."""
    name = f"gs-oom-{os.getpid()}-{time.monotonic_ns()}"
    if "memory" in open("/sys/fs/cgroup/cgroup.controllers").read().split() \
            if os.path.exists("/sys/fs/cgroup/cgroup.controllers") else False:
        path = os.path.join("/sys/fs/cgroup", name)
        os.mkdir(path)
        with open(os.path.join(path, "memory.max"), "w") as f:
            f.write(str(limit))
        with open(os.path.join(path, "memory.swap.max"), "w") as f:
            f.write("0")
        return path
    own = [l.split(":", 2)[2].strip() for l in open("/proc/self/cgroup")
           if l.split(":")[1] == "memory"]
    path = os.path.join("/sys/fs/cgroup/memory", own[0].lstrip("/"), name)
    os.mkdir(path)
    with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
        f.write(str(limit))
    return path


def valid_trace(path):
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    assert isinstance(trace["traceEvents"], list), path
    assert "monotonic_to_realtime_ns" in trace["metadata"], trace["metadata"]
    return trace


@test
def daemon_oom_kill_report_recordings_and_schedule_retention():
    tmp, conf = config_file("gs-daemon-sched-", "trigger-interval 0\noom-record 1s\n"
                            "schedule every 3s record 1s keep=2\n")
    d = Daemon("--config", conf)
    w = hog = cg = None
    try:
        # a CUDA OOM: the report, then a recording of what the process does next
        w = oom_workload(d)
        line = d.g.wait_stderr("recording done: " + os.path.join(d.out, "gpusnoop-record-"),
                               timeout=90)
        valid_trace(line.split("recording done: ")[1])

        # the kernel OOM killer ends a CUDA process in a memory-limited cgroup
        cg = memory_cgroup(64 * MiB)
        hog = Workload("gs_hostoom", env={"GS_FAKE_CUDA_NO_DRIVER": "1"})
        join_cgroup_of(hog.pid, cg)
        hog.release()
        expect_eq(hog.proc.wait(TIMEOUT), -signal.SIGKILL, "hog killed by the OOM killer")
        d.g.wait_stderr(f"pid {hog.pid} (gs_hostoom): oom-kill: report")
        files = d.reports(f"oom-kill-{hog.pid}-*.json")
        expect_eq(len(files), 1, "OOM-kill reports")
        with open(files[0]) as f:
            report = json.load(f)
        expect_eq(report["trigger"], {"kind": "oom-kill", "pid": hog.pid}, "trigger")
        p = report["processes"][0]
        expect_eq([(s["bytes"], s["allocations"], s["frames"][0]["symbol"]) for s in p["stacks"]],
                  [(96 * MiB, 3, "load_weights")], "what the killed process held")

        # ctl record: a trace of a process on demand
        status, out, err = d.ctl("record", str(w.pid), "1", "cuda-mem")
        expect_eq(status, 0, f"ctl record ({err})")
        path = out.strip()
        d.g.wait_stderr(f"recording done: {path}", timeout=90)
        valid_trace(path)

        # the schedule keeps its newest two traces
        seen = 0
        deadline = time.monotonic() + 120
        while seen < 3 and time.monotonic() < deadline:
            d.g.wait_stderr("recording done: " + os.path.join(d.out, "gpusnoop-schedule0-"),
                            timeout=90)
            seen = sum("recording done: " + os.path.join(d.out, "gpusnoop-schedule0-") in l
                       for l in d.g.err.lines)
            if seen < 3:
                d.g.err._fill(1)
        assert seen >= 3, d.g.stderr_text()
        kept = d.reports("schedule0-*.json.gz")
        expect_eq(len(kept), 2, f"scheduled traces kept: {kept}")
        for path in kept:
            valid_trace(path)
        d.stop()
    finally:
        d.g.kill()
        for proc in (w, hog):
            if proc:
                proc.kill()
        if cg:
            os.rmdir(cg)


def join_cgroup_of(pid, cg):
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def daemon_footprint(pid):
    """(probe fds, other fds, RSS bytes): a probe is a perf_event fd and its bpf_link."""
    probes = other = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except FileNotFoundError:
            continue
        if target in ("anon_inode:[perf_event]", "anon_inode:bpf_link"):
            probes += 1
        else:
            other += 1
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    return probes, other, rss * 1024


def churn(n):
    """n short-lived CUDA processes, a few at a time (gs_leaky: 1007 allocations each)."""
    exe = os.path.join(BIN, "gs_leaky")
    running = []
    for _ in range(n):
        running.append(subprocess.Popen([exe], stdout=subprocess.DEVNULL,
                                        env=dict(os.environ, GS_FAKE_CUDA_NO_DRIVER="1")))
        if len(running) == 8:
            expect_eq(running.pop(0).wait(TIMEOUT), 0, "churn workload status")
    for p in running:
        expect_eq(p.wait(TIMEOUT), 0, "churn workload status")


@test
def daemon_stays_flat_under_process_churn():
    d = Daemon()
    try:
        churn(200)  # warm-up: caches, allocator arenas, ring buffer pages
        time.sleep(2)
        probes0, fds0, rss0 = daemon_footprint(d.g.proc.pid)
        churn(1500)
        time.sleep(2)
        probes1, fds1, rss1 = daemon_footprint(d.g.proc.pid)
        status, out, _ = d.ctl("status")
        expect_eq(status, 0, "ctl status")
        expect_eq(fds1, fds0, "daemon file descriptors (not probes) after 1500 more processes")
        # probes are per library file: only libraries other processes on the host loaded
        # meanwhile add some; anything kept per process would be 1500 or more
        assert probes1 - probes0 < 100, f"probe fds {probes0} -> {probes1}"
        # nothing per process may stay: 1500 processes x even 1 KiB would show
        assert rss1 - rss0 < 1024 * 1024, f"RSS grew {rss1 - rss0} bytes: {rss0} -> {rss1}"
        lost = re.search(r"(\d+) events lost", out).group(1)
        expect_eq(lost, "0", f"events lost ({out})")
        d.stop()
    finally:
        d.g.kill()


@test
def slurm_fanout_script_records_at_the_common_start():
    out = tempfile.mkdtemp(prefix="gs-slurm-")
    w = Workload("gs_leaky", env={"GS_FAKE_CUDA_NO_DRIVER": "1"})
    try:
        start = int(time.time()) + 3
        script = subprocess.Popen([os.path.join(os.path.dirname(GPUSNOOP), "scripts",
                                                "deploy", "gpusnoop-slurm.sh"),
                                   "-s", str(start), "-d", "20", "-e", "cuda-mem", "-g", GPUSNOOP,
                                   out], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = LineReader(script.stderr)
        err.wait_for(lambda l: "recording every process" in l, "the recording to start", 60)
        assert time.time() >= start, "started before the common start time"
        w.release()
        w.wait_line("done")
        script.wait(90)
        expect_eq(script.returncode, 0, f"script status ({err.drain()})")
        traces = glob.glob(os.path.join(out, "*.json.gz"))
        expect_eq(len(traces), 1, "one trace per node")
        trace = valid_trace(traces[0])
        allocs = [e for e in trace["traceEvents"]
                  if e.get("pid") == w.pid and e.get("name") == "cudaMalloc"]
        expect_eq(len(allocs), 1007, "cudaMalloc calls of the workload in the node's trace")
    finally:
        w.kill()


@test
def daemon_call_metrics_count_launches_and_sync_time():
    tmp, conf = config_file("gs-daemon-calls-", "cuda-call-metrics on\n")
    d = Daemon("--config", conf)
    w = None
    try:
        w = Workload("gs_kernels", env={"GS_FAKE_CUDA_NO_DRIVER": "1"})
        d.wait_probed()
        w.release()
        w.wait_line("done")
        deadline = time.monotonic() + 5
        m = d.metrics()
        while (f'gpusnoop_cuda_syncs_total{{pid="{w.pid}",comm="gs_kernels"}} 102' not in m
               and time.monotonic() < deadline):
            time.sleep(0.2)
            m = d.metrics()
        # 3000 gemm + 1000 relu + 10 scale, 100 stream + 1 device + 1 event syncs
        expect_eq(metric(m, "gpusnoop_cuda_launches_total", w.pid), 4010, "launches")
        expect_eq(metric(m, "gpusnoop_cuda_syncs_total", w.pid), 102, "synchronizations")
        secs = float(re.search(rf'^gpusnoop_cuda_sync_seconds_total{{pid="{w.pid}",[^}}]*}} (\S+)$',
                               m, re.M).group(1))
        assert secs >= 102 * 0.002, f"sync time {secs}s below the fake's 2 ms per call"
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def daemon_reports_a_pytorch_oom_with_tensors_by_device():
    d = Daemon()
    w = None
    try:
        w = Workload("gs_torch", env={"LD_LIBRARY_PATH": os.path.join(FIXTURES, "torch", "lib")})
        d.g.wait_stderr(f"{os.path.join(FIXTURES, 'torch', 'lib')}/libc10_cuda.so): CUDA tensors "
                        "from USDT")
        d.wait_probed()  # the caching allocator's cudaMalloc too: its segments are the point
        w.release()
        w.wait_line("oom CUDA out of memory")  # it waits here, holding its memory
        d.g.wait_stderr(f"pid {w.pid} (gs_torch): torch-oom: report")
        files = d.reports(f"torch-oom-{w.pid}-*.json")
        expect_eq(len(files), 1, "PyTorch OOM reports")
        with open(files[0]) as f:
            report = json.load(f)
        t = report["trigger"]
        expect_eq((t["kind"], t["pid"], t["source"], t["bytes_requested"], t["device"]),
                  ("torch-oom", w.pid, "reportOutOfMemoryToProfiler", GiB, "cuda:0"), "trigger")
        expect_eq(first_workload_frame(t["frames"], "/gs_torch"), "oom_request()", "OOM stack")
        torch = report["processes"][0]["torch"]
        expect_eq(devices(torch), OOM_DEVICES, "allocated vs reserved per device at the OOM")

        deadline = time.monotonic() + 3
        m = d.metrics()
        want = f'gpusnoop_torch_allocated_bytes{{pid="{w.pid}",comm="gs_torch",device="cuda:0"}}'
        while want not in m and time.monotonic() < deadline:
            time.sleep(0.2)
            m = d.metrics()
        for dev, numbers in OOM_DEVICES.items():
            for metric_name, key in (("gpusnoop_torch_allocated_bytes", "allocated_bytes"),
                                     ("gpusnoop_torch_reserved_bytes", "reserved_bytes")):
                if key not in numbers:
                    continue
                line = f'{metric_name}{{pid="{w.pid}",comm="gs_torch",device="{dev}"}} '
                assert line + str(numbers[key]) + "\n" in m, f"{line}{numbers[key]} not in\n{m}"
        assert re.search(r'^gpusnoop_oom_events_total\{source="torch"\} 1$', m, re.M), m
        w.release()
        w.wait_line("done")
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


@test
def daemon_reload_keeps_start_only_settings():
    """SIGHUP applies the rest but not torch/cuda-call-metrics: they decide what is probed."""
    tmp, conf = config_file("gs-daemon-start-only-", "torch on\ncuda-call-metrics off\n")
    d = Daemon("--config", conf)
    w = None
    try:
        with open(conf, "w") as f:
            f.write("torch off\ncuda-call-metrics on\n")
        d.g.proc.send_signal(signal.SIGHUP)
        d.g.wait_stderr("reload: torch, cuda-call-metrics unchanged: read at start only, "
                        "restart the daemon to change")
        d.g.wait_stderr("configuration reloaded")
        # metrics-addr port 0: the reopened endpoint listens on a port of its own
        reopened = [line for line in d.g.err.lines if "metrics on http://" in line][-1]
        d.metrics_url = re.search(r"(http://\S+/metrics)", reopened).group(1)
        w = Workload("gs_torch", env={"LD_LIBRARY_PATH": os.path.join(FIXTURES, "torch", "lib")})
        d.g.wait_stderr(f"{os.path.join(FIXTURES, 'torch', 'lib')}/libc10_cuda.so): CUDA tensors "
                        "from USDT")
        d.wait_probed()  # the caching allocator's cudaMalloc too: its segments are the point
        w.release()
        w.wait_line("oom CUDA out of memory")
        d.g.wait_stderr(f"pid {w.pid} (gs_torch): torch-oom: report")
        with open(d.reports(f"torch-oom-{w.pid}-*.json")[0]) as f:
            report = json.load(f)
        # segments are still PyTorch's reserved memory, not raw CUDA allocations
        expect_eq(devices(report["processes"][0]["torch"]), OOM_DEVICES,
                  "allocated vs reserved per device after the reload")
        deadline = time.monotonic() + 3
        m = d.metrics()
        want = f'gpusnoop_torch_allocated_bytes{{pid="{w.pid}",comm="gs_torch",device="cuda:0"}}'
        while want not in m and time.monotonic() < deadline:
            time.sleep(0.2)
            m = d.metrics()
        assert want in m, f"torch metrics gone after the reload:\n{m}"
        assert "gpusnoop_cuda_launches_total" not in m, "launch metrics without launch probes"
        w.release()
        w.wait_line("done")
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()
