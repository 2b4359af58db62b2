#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_debuginfod.py: a stripped workload named from a real debuginfod server, opt-in only."""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_debuginfo  # noqa: E402  (its stripped CPU burner)
import test_profile  # noqa: E402  (its folded reader)
from harness import LIB, expect_eq, main, run_gpusnoop, test  # noqa: E402

# static functions: only .symtab names them, and the only copy is the served debug file
PROGRAM = r"""
#include <stddef.h>
typedef int cudaError_t;
cudaError_t cudaMalloc(void **p, size_t n);
static void *kept[3];
__attribute__((noinline)) static void fetched_leaf(int i)
{
	cudaMalloc(&kept[i], 1 << 20);
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void fetched_caller(void)
{
	for (int i = 0; i < 3; i++)
		fetched_leaf(i);
	__asm__ volatile("" ::: "memory");
}
int main(void)
{
	fetched_caller();
	return 0;
}
"""


def sh(*cmd):
    subprocess.run(list(cmd), check=True, capture_output=True)


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    return next(l.split()[-1] for l in out.splitlines() if "Build ID:" in l)


def workload(d, served):
    """The stripped workload in d; its debug file only in served. (exe, build id)"""
    src, full, exe = (os.path.join(d, n) for n in ("gsdbgd.c", "gsdbgd.full", "gsdbgd"))
    with open(src, "w") as f:
        f.write(PROGRAM)
    sh("cc", "-O1", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
       "-Wl,--build-id", "-o", full, src, os.path.join(LIB, "libcudart.so.13"),
       "-Wl,--enable-new-dtags,-rpath," + LIB)
    sh("objcopy", "--only-keep-debug", full, os.path.join(served, "gsdbgd.debug"))
    sh("strip", "--strip-all", "-o", exe, full)
    os.unlink(full)
    return exe, build_id(exe)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """Debian's debuginfod serving dir (-F), its log in a file; ready once bid is served."""

    def __init__(self, d, served, bid):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(os.path.join(d, "server.log"), "w+")
        self.proc = subprocess.Popen(
            ["debuginfod", "-F", "-p", str(self.port), "-d", os.path.join(d, "db.sqlite"),
             "-t", "0", "-g", "0", "-v", served],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/buildid/{bid}/debuginfo", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        else:
            raise AssertionError("debuginfod never served the debug file: " + self.text())
        self.ready_at = self.text().count(f"/buildid/{bid}/")

    def requests(self, bid):
        """Requests for bid since the test's own readiness probe."""
        return self.text().count(f"/buildid/{bid}/") - self.ready_at

    def text(self):
        self.log.flush()
        with open(self.log.name) as f:
            return f.read()

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.log.close()


def leak_symbols(exe, env):
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", exe, env=env, timeout=60)
    expect_eq(status, 0, f"status ({err})")
    report = [json.loads(l) for l in out.splitlines() if l.startswith("{")][0]
    proc = next(p for p in report["processes"] if p["comm"] == "gsdbgd")
    return [[f.get("symbol") for f in s["frames"]] for s in proc["stacks"]], err


def run_both(served_first):
    d = tempfile.mkdtemp(prefix="gs-debuginfod-")
    served = os.path.join(d, "served")
    os.makedirs(served)
    exe, bid = workload(d, served)
    server = Server(d, served, bid)
    try:
        cache = os.path.join(d, "cache")
        env = {"DEBUGINFOD_URLS": server.url if served_first else "",
               "DEBUGINFOD_CACHE_PATH": cache}
        stacks, err = leak_symbols(exe, env)
        return stacks, err, server.requests(bid), cache
    finally:
        server.stop()


@test
def debuginfod_names_a_stripped_workload_from_the_server():
    stacks, err, requests, cache = run_both(True)
    # a stack per call site: the loop may be unrolled
    assert stacks, "no leak stacks"
    expect_eq([s[:3] for s in stacks], [["fetched_leaf", "fetched_caller", "main"]] * len(stacks),
              f"frames ({err})")
    assert requests >= 1, "the server was never asked"
    # the library's cache, where $DEBUGINFOD_CACHE_PATH says
    cached = [f for _, _, fs in os.walk(cache) for f in fs]
    assert "debuginfo" in cached, cached


@test
def debuginfod_unset_fetches_nothing():
    stacks, err, requests, cache = run_both(False)
    assert stacks, "no leak stacks"
    names = [n for s in stacks for n in s]
    assert "fetched_leaf" not in names and "fetched_caller" not in names, names
    expect_eq(requests, 0, "requests to the server")
    expect_eq(os.listdir(cache) if os.path.exists(cache) else [], [], "cache contents")
    assert "gpusnoop: debuginfod" not in err, err


@test
def debuginfod_names_profile_samples_from_the_first():
    """The debug file is asked for when the target's maps are first read: no sample waits."""
    d = tempfile.mkdtemp(prefix="gs-debuginfod-")
    served = os.path.join(d, "served")
    os.makedirs(served)
    full, exe = test_debuginfo.build(d, "gsdbgd_prof")
    sh("objcopy", "--only-keep-debug", full, os.path.join(served, "gsdbgd_prof.debug"))
    os.unlink(full)
    server = Server(d, served, build_id(exe))
    try:
        env = {"DEBUGINFOD_URLS": server.url, "DEBUGINFOD_CACHE_PATH": os.path.join(d, "c")}
        status, out, err = run_gpusnoop("profile", "-F", "199", "-U", "--", exe, "1.5",
                                        env=env, timeout=60)
    finally:
        server.stop()
    expect_eq(status, 0, f"status ({err})")
    leaves = {}
    for frames, n in test_profile.parse_folded(out):
        if frames[0] == "gsdbgd_prof":
            leaves[frames[-1]] = leaves.get(frames[-1], 0) + n
    total = sum(leaves.values())
    assert total >= 50, leaves
    assert leaves.get("hidden_leaf", 0) >= 0.8 * total, leaves


if __name__ == "__main__":
    sys.exit(main())
