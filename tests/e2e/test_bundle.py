#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_bundle.py: `make bundle`'s tarball, unpacked in minimal Debian roots (debootstrap
minbase bookworm, and bullseye for glibc 2.31) with none of the build dependencies, gives the
exact results of the normal tests; its gpu-test says it cannot run here, and why."""
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, Skip, expect_eq, main, test  # noqa: E402
from test_gpu import expect_gpu_rows, expect_linked  # noqa: E402
from test_leaks import leaky_expectations  # noqa: E402

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
              "lib/systemd/system/gpusnoop.service", "gpu-test/run", "gpu-test/gpu_test.py",
              "gpu-test/preflight.py", "gpu-test/train.py", "gpu-test/compare.py",
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


if __name__ == "__main__":
    sys.exit(main())
