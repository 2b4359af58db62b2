#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_bundle.py: `make bundle`'s tarball, unpacked in minimal Debian roots (debootstrap
minbase bookworm, and bullseye for glibc 2.31) with none of the build dependencies, gives the
exact results of the normal tests; its gpu-test says it cannot run here, and why."""
import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, Skip, expect_eq, main, test  # noqa: E402
from test_gpu import expect_gpu_rows, expect_linked  # noqa: E402
from test_leaks import leaky_expectations  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import gpu_test  # noqa: E402

VERSION = "0.1.0"
BUNDLE = os.path.join(ROOT, ".output", "bundle")
NAME = f"gpusnoop-{VERSION}-x86_64"
TARBALL = os.path.join(BUNDLE, NAME + ".tar.gz")
# the stand-in runtime and workloads, built against the bundle's sysroot (make bundle-fixtures)
ROOT_FIXTURES = os.path.join(BUNDLE, "root-build", "fixtures")
SCRIPTS = os.path.join(ROOT, "scripts", "bundle")
ROOTS_TIMEOUT = 300  # a first debootstrap of both roots (CI starts with an empty cache)
RUN_TIMEOUT = 120
GLIBC = {"libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
         "ld-linux-x86-64.so.2", "linux-vdso.so.1", "/lib64/ld-linux-x86-64.so.2"}
# in the root: unpack the bundle where a user would, under /tmp (a tmpfs of this run's own)
UNPACK = f"cd /tmp && tar -xzf /tmp/in/{NAME}.tar.gz && cd {NAME}"

_roots = {}


def roots(name):
    """The cached root's path; both roots are made at once, the first time, in parallel."""
    if not os.path.exists(TARBALL) or not os.path.isdir(ROOT_FIXTURES):
        raise Skip(f"{TARBALL} or {ROOT_FIXTURES} not built (make bundle bundle-fixtures)")
    if not _roots:
        procs = {n: subprocess.Popen([os.path.join(SCRIPTS, "roots.sh"), n],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for n in ("bookworm", "bullseye")}
        for n, p in procs.items():
            out, err = p.communicate(timeout=ROOTS_TIMEOUT)
            _roots[n] = (p.returncode, out.strip(), err.strip())
    status, path, err = _roots[name]
    expect_eq(status, 0, f"roots.sh {name}: {err}")
    return path


def in_root(name, script, env=None):
    """Runs a shell script in the root with a fresh /tmp, the bundle and the fixtures in
    /tmp/in (this test's host folder, returned so outputs can be read); (status, out, err)."""
    d = tempfile.mkdtemp()
    shutil.copy(TARBALL, d)
    for sub in ("bin", "lib"):
        shutil.copytree(os.path.join(ROOT_FIXTURES, sub), os.path.join(d, "fixtures", sub),
                        symlinks=True)
    cmd = [os.path.join(SCRIPTS, "in-root.sh"), roots(name), d, "/usr/bin/env", "-i",
           "PATH=/usr/sbin:/usr/bin:/sbin:/bin", *[f"{k}={v}" for k, v in (env or {}).items()],
           "/bin/sh", "-ec", script]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    return p.returncode, p.stdout, p.stderr, d


def glibc_only(ldd_text):
    """The libraries ldd names that are not glibc's."""
    names = [line.split()[0] for line in ldd_text.splitlines() if line.strip()]
    return [n for n in names if os.path.basename(n) not in GLIBC and n not in GLIBC]


@test
def bundle_holds_everything_and_needs_glibc_only():
    if not os.path.exists(TARBALL):
        raise Skip(f"{TARBALL} not built (make bundle)")
    assert os.path.getsize(TARBALL) < 30 * 1024 * 1024, os.path.getsize(TARBALL)
    with tarfile.open(TARBALL) as t:
        names = set(t.getnames())
    for f in ("bin/gpusnoop", "lib/gpusnoop/libgpusnoop-cupti.so", "share/man/man8/gpusnoop.8",
              "share/man/man8/gpusnoop-leaks.8", "share/bash-completion/completions/gpusnoop",
              "lib/systemd/system/gpusnoop.service", "etc/gpusnoop.conf",
              "share/man/man5/gpusnoop.conf.5", "gpu-test/run", "gpu-test/gpu_test.py",
              "gpu-test/preflight.py", "gpu-test/train.py", "gpu-test/compare.py",
              "gpu-test/vmm.py",
              "gpu-test/bin/gs_bench_floor", "README"):
        assert f"{NAME}/{f}" in names, f"{f} not in the bundle"
    d = os.path.join(BUNDLE, NAME)
    p = subprocess.run([os.path.join(SCRIPTS, "check-glibc.sh"), f"{d}/bin/gpusnoop",
                        f"{d}/lib/gpusnoop/libgpusnoop-cupti.so",
                        f"{d}/gpu-test/bin/gs_bench_floor"], capture_output=True, text=True)
    expect_eq((p.returncode, p.stderr), (0, ""), "check-glibc.sh")


def runs_in(name, glibc):
    """ldd, --version, leaks and record -e gpu of the stand-in runtime, in the root."""
    script = f"""{UNPACK}
ldd bin/gpusnoop >/tmp/in/ldd.txt
ldd --version | head -1 >/tmp/in/glibc.txt
bin/gpusnoop --version >/tmp/in/version.txt
bin/gpusnoop leaks --format json -- /tmp/in/fixtures/bin/gs_leaky >/tmp/in/leaks.json \
    2>/tmp/in/leaks.err
LD_LIBRARY_PATH=/tmp/in/fixtures/lib bin/gpusnoop record -e gpu -o /tmp/in/gpu.json \
    -- /tmp/in/fixtures/bin/gs_gpu >/dev/null 2>/tmp/in/record.err
"""
    status, out, err, d = in_root(name, script)

    def read(f):
        with open(os.path.join(d, f)) as fh:
            return fh.read()

    logs = "".join(f"\n{f}: {read(f)}" for f in ("leaks.err", "record.err")
                   if os.path.exists(os.path.join(d, f)))
    expect_eq(status, 0, f"the script in {name}; stderr: {err}{logs}")
    assert f"GLIBC {glibc}" in read("glibc.txt") or f" {glibc}" in read("glibc.txt"), \
        read("glibc.txt")
    expect_eq(glibc_only(read("ldd.txt")), [], "libraries outside glibc")
    expect_eq(read("version.txt").strip(),
              f"gpusnoop {VERSION} (bundle: static libbpf 1.1.2, glibc >= 2.31)", "--version")
    reports = [json.loads(line) for line in read("leaks.json").splitlines()
               if line.startswith("{")]
    expect_eq([r["report"] for r in reports], ["exit", "final"], "reports written")
    proc = reports[0]["processes"][0]
    expect_eq(proc["comm"], "gs_leaky", "comm")
    leaky_expectations(proc)
    with open(os.path.join(d, "gpu.json")) as f:
        trace = json.load(f)
    expect_gpu_rows(trace)
    pids = {e["pid"] for e in trace["traceEvents"] if e.get("name") == "cudaLaunchKernel"}
    expect_eq(len(pids), 1, "one process launched")
    expect_linked(trace, pids.pop())


@test
def bundle_runs_in_bookworm_minbase():
    runs_in("bookworm", "2.36")


@test
def bundle_runs_in_bullseye_minbase_glibc_2_31():
    runs_in("bullseye", "2.31")


@test
def bundle_daemon_serves_metrics_over_plain_http():
    """The bundle's libmicrohttpd runs on the TLS stand-ins (scripts/bundle/no_tls.c): its
    constructor's set-up succeeds and the endpoint answers in plain HTTP."""
    exe = os.path.join(BUNDLE, NAME, "bin", "gpusnoop")
    if not os.path.exists(exe):
        raise Skip(f"{exe} not built (make bundle)")
    d = tempfile.mkdtemp()
    err_path = os.path.join(d, "err")
    with open(err_path, "w") as err:
        g = subprocess.Popen([exe, "daemon", "--output-dir", os.path.join(d, "reports"),
                              "--socket", os.path.join(d, "ctl.sock"), "--metrics-addr",
                              "127.0.0.1:0"], stdout=subprocess.DEVNULL, stderr=err)
    try:
        url, deadline = None, time.monotonic() + 60
        while url is None and time.monotonic() < deadline and g.poll() is None:
            with open(err_path) as f:
                text = f.read()
            # the first page is published once the daemon follows processes
            m = re.search(r"metrics on (http://\S+/metrics)", text)
            url = m.group(1) if m and "following every CUDA process" in text else None
            time.sleep(0.1)
        assert url, open(err_path).read()
        with urllib.request.urlopen(url, timeout=10) as r:
            expect_eq(r.status, 200, "metrics HTTP status")
            body = r.read().decode()
        assert "# TYPE gpusnoop_cuda_outstanding_bytes gauge" in body, body[:500]
        g.send_signal(signal.SIGINT)
        expect_eq(g.wait(timeout=30), 0, "daemon status")
    finally:
        if g.poll() is None:
            g.kill()
            g.wait()


GPU_TEST = f"""{UNPACK}
set +e
{{prefix}} gpu-test/run /tmp/in/gt >/tmp/in/gt.out 2>/tmp/in/gt.err
echo $? >/tmp/in/gt.status
"""


def gpu_test_in(name, prefix=""):
    status, out, err, d = in_root(name, GPU_TEST.replace("{prefix}", prefix))
    expect_eq(status, 0, f"the script in {name}; stderr: {err}")
    res = {}
    for f in ("gt.out", "gt.err", "gt.status", "gt/summary.txt", "gt/summary.json"):
        with open(os.path.join(d, f)) as fh:
            res[f] = fh.read()
    return res


def preflight_lines(text):
    return {line.split(":")[0].split()[1]: line.split(":", 1)[1].strip()
            for line in text.splitlines() if line.startswith("preflight ")}


@test
def bundle_gpu_test_says_no_driver_and_could_not_run():
    """With the host's python3 only (no PyTorch, no GPU): the preflight, one line each, BPF
    allowed; then 'no NVIDIA driver' and exit 3 (could not run), the summary written."""
    r = gpu_test_in("bullseye")
    expect_eq(r["gt.status"].strip(), "3", f"exit status; stderr {r['gt.err']}")
    pf = preflight_lines(r["gt.out"])
    expect_eq(list(pf), ["kernel", "BTF", "BPF", "uprobes", "uprobe_multi", "driver", "GPU",
                         "PyTorch"], "preflight lines")
    expect_eq(pf["kernel"], os.uname().release, "kernel")
    expect_eq(pf["BPF"], "allowed (a trivial program loads)", "BPF")
    expect_eq(pf["BTF"], "present (/sys/kernel/btf/vmlinux)", "BTF")
    expect_eq(pf["uprobes"], "yes", "uprobes")
    assert pf["driver"].startswith("no NVIDIA driver: libcuda.so.1"), pf
    expect_eq(r["gt.err"].strip().splitlines()[-1],
              "gpu-test: could not run here: " + pf["driver"], "the reason")
    s = json.loads(r["gt/summary.json"])
    expect_eq(s["not_run"], ["every check: " + pf["driver"]], "summary's not_run")
    assert "result: COULD NOT RUN everything here" in r["gt/summary.txt"], r["gt/summary.txt"]


@test
def bundle_gpu_test_preflight_without_bpf():
    """Without capabilities (as in a sandbox), loading a program is refused: said plainly."""
    r = gpu_test_in("bookworm", "setpriv --bounding-set=-all --inh-caps=-all --")
    expect_eq(r["gt.status"].strip(), "3", f"exit status; stderr {r['gt.err']}")
    pf = preflight_lines(r["gt.out"])
    expect_eq(pf["BPF"], "not allowed: loading a trivial program: Operation not permitted",
              "BPF")
    expect_eq(pf["uprobe_multi"], "unknown (no BPF)", "uprobe_multi")
    assert pf["driver"].startswith("no NVIDIA driver"), pf


# --- gpu-test/run's flow, its real checks stood in for (no GPU here) ---------------------------

H100 = {"driver": "580.159", "cuda_driver_version": 13000, "devices": 1, "gpu": "NVIDIA H100"}
NS_PER_LAUNCH = {"untraced": 4000, "dormant": 4100, "floor": 4800, "floor-gpu": 5000,
                 "record": 5200, "record-gpu": 5600}


def fake_preflight(bpf):
    def run(say, python, env):
        for name in ("kernel", "BTF", "BPF", "uprobes", "uprobe_multi", "driver", "GPU",
                     "PyTorch", "CUPTI"):
            say(name, "stood in")
        return {"kernel": "6.18", "btf": True, "bpf": bpf, "uprobes": True,
                "uprobe_multi": bpf, "driver": H100, "why": None,
                "torch": {"version": "2.11.0+cu130", "cuda": "13.0", "available": True,
                          "cupti": []}}
    return run


def run_flow(bpf, argv=(), memory_problems=(), api=130001):
    """gpu_test.main_run with preflight and the checks stood in: (status, summary, modes run)."""
    out = os.path.join(tempfile.mkdtemp(), "gt")
    modes = []

    def cost_run(mode, py, out_dir, launches):
        modes.append(mode)
        return {"ns_per_launch": NS_PER_LAUNCH[mode], "window_start_ns": 0, "window_end_ns": 1,
                "device": "NVIDIA H100", "cupti": ["/t/libcupti.so.13"],
                "cupti_api": {"/t/libcupti.so.13": api}, "injection_status": ""}

    fakes = {
        "accuracy": lambda py, o, steps: {"rows": [], "worst": 0.01, "problems": [],
                                          "gpu_metadata": None, "result": {"steps": steps}},
        "memory": lambda py, o: {"rows": [], "problems": list(memory_problems)},
        "vmm": lambda py, o: {"row": {"kept_bytes": 4 << 20, "kept_mappings": 2,
                                      "seen": [4 << 20, 2]}, "problems": []},
        "cost_run": cost_run, "launch_loop_problems": lambda o, r, n: []}
    saved = {k: getattr(gpu_test, k) for k in fakes}
    saved_pf = gpu_test.machine_checks.run
    try:
        for k, v in fakes.items():
            setattr(gpu_test, k, v)
        gpu_test.machine_checks.run = fake_preflight(bpf)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = gpu_test.main_run([out, "--rounds", "2", *argv])
    finally:
        for k, v in saved.items():
            setattr(gpu_test, k, v)
        gpu_test.machine_checks.run = saved_pf
        gpu_test.DEADLINE = float("inf")
    with open(os.path.join(out, "summary.json")) as f:
        return status, json.load(f), modes


@test
def gpu_test_run_exit_codes_and_parts():
    """All checks with BPF: 0, or 1 on a problem; without BPF only the dormant cost and the
    CUPTI binding (its clock method from the API version), the rest listed as not run: 3."""
    status, s, modes = run_flow(bpf=True)
    expect_eq((status, s["problems"], s["not_run"]), (0, [], []), "with BPF")
    expect_eq(sorted(set(modes)), sorted(NS_PER_LAUNCH), "cost modes with BPF")
    expect_eq((s["cost"]["rounds"], s["cost"]["costs"]["dormant"]["added_ns"]), (2, 100),
              "rounds, dormant cost")
    status, s, _ = run_flow(bpf=True, memory_problems=["after 3 steps: leaks says 1, PyTorch 2"])
    expect_eq((status, s["problems"]), (1, ["after 3 steps: leaks says 1, PyTorch 2"]),
              "a failed check")
    status, s, modes = run_flow(bpf=False, api=24)
    expect_eq(status, 3, "without BPF: could not run all")
    expect_eq(sorted(set(modes)), ["dormant", "untraced"], "cost modes without BPF")
    expect_eq(len(s["not_run"]), 4, f"checks not run: {s['not_run']}")
    assert all(n.endswith(": BPF not allowed") for n in s["not_run"]), s["not_run"]
    expect_eq((s["binding"]["api"], s["binding"]["clock_method"], s["binding"]["problems"]),
              (24, "cupti_clock_realtime_shifted", []), "CUPTI binding (12.6's API)")
    assert "accuracy" not in s and "memory" not in s and "vmm" not in s, s


@test
def gpu_test_run_cuts_cost_rounds_to_its_budget():
    status, s, _ = run_flow(bpf=True, argv=("--budget", "5"))
    expect_eq((status, s["cost"]["rounds"], s["cost"]["rounds_asked"]), (0, 1, 2),
              "one round fits a 5 s budget")
    assert "(2 asked: --budget allowed 1)" in "\n".join(gpu_test.cost_lines(s["cost"]))


if __name__ == "__main__":
    sys.exit(main())
