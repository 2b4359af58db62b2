#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_daemon_profile.py: the daemon's scheduled CPU profiles, as pprof files and over HTTP."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import GPUSNOOP, TIMEOUT, Skip, Workload, expect_eq, main, test  # noqa: E402
from test_daemon import Daemon, config_file  # noqa: E402

BURN_ENV = {"GS_BURN_ROUNDS": "1000000"}  # burns until killed


def go_pprof(*args, timeout=90):
    """`go tool pprof ARGS` (Debian's golang-go): (status, output)."""
    if not shutil.which("go"):
        raise Skip("go not installed (Debian golang-go; scripts/setup.sh test)")
    home = tempfile.mkdtemp(prefix="gs-pprof-home-")
    p = subprocess.run(["go", "tool", "pprof"] + list(args), capture_output=True,
                       timeout=timeout, env=dict(os.environ, HOME=home, PPROF_TMPDIR=home))
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def wait_lines(g, text, n, timeout=TIMEOUT):
    """Waits until the daemon's stderr has n lines holding text."""
    deadline = time.monotonic() + timeout
    while sum(text in l for l in g.err.lines) < n:
        left = deadline - time.monotonic()
        if left <= 0 or g.err._fill(left) is None:
            ours = [l for l in g.err.lines if "CUDA functions" not in l]
            raise AssertionError(f"{n} lines {text!r} not seen; got {ours!r}")


def http_get(url):
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def profiles(d, kind):
    return sorted(glob.glob(os.path.join(d.out, f"gpusnoop-{kind}-*.pb.gz")))


def burner_share(out):
    """Whether go tool pprof -top names both burners of gs_burn."""
    return "burn_a" in out and "burn_b" in out


@test
def daemon_scheduled_profiles_are_pprof_with_retention():
    _, conf = config_file("gs-dprof-", "schedule every 2s profile 1s hz=499 keep=1\n")
    w = Workload("gs_burn", env=BURN_ENV)
    d = Daemon("--config", conf)
    try:
        w.release()
        # a profile of every process names every process's frames: under a loaded machine
        # (real PyTorch libraries to read) it may take a while
        wait_lines(d.g, "profile done: ", 2, timeout=90)
        deadline = time.monotonic() + 5  # retention runs right after the line
        while len(profiles(d, "schedule0-all")) != 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        files = profiles(d, "schedule0-all")
        expect_eq(len(files), 1, f"profiles kept (keep=1): {os.listdir(d.out)}")
        status, out = go_pprof("-top", files[-1])
        expect_eq(status, 0, f"go tool pprof -top {files[-1]}:\n{out}")
        assert "Type: cpu" in out and burner_share(out), out
        m = d.metrics()
        started = int(re.search(r"^gpusnoop_profiles_started_total (\d+)$", m, re.M).group(1))
        assert started >= 2, m
        d.stop()
    finally:
        d.g.kill()
        w.kill()


@test
def daemon_profiles_of_cuda_processes_leave_others_out():
    _, conf = config_file("gs-dprof-cuda-", "schedule every 3s profile 1s hz=499 "
                          "processes=cuda\n")
    d = Daemon("--config", conf)
    burn = Workload("gs_burn", env=BURN_ENV)  # not a CUDA process
    flood = None
    try:
        burn.release()
        # a CUDA process busy on the CPU: cudaMalloc+cudaFree in a loop
        flood = Workload("gs_flood", env={"GS_FLOOD_N": "1000000000", "GS_FLOOD_MODE": "free",
                                          "GS_FAKE_CUDA_NO_DRIVER": "1"})
        d.wait_probed()
        flood.release()
        wait_lines(d.g, "profile done: ", 1, timeout=45)
        line = [l for l in d.g.err.lines if "profile of CUDA processes" in l][0]
        files = profiles(d, "schedule0-cuda")
        expect_eq(len(files), 1, f"profiles: {os.listdir(d.out)} ({line})")
        status, out = go_pprof("-top", "-nodefraction=0", files[0])
        expect_eq(status, 0, f"go tool pprof -top {files[0]}:\n{out}")
        assert "alloc_here" in out or "via_one" in out or "via_zero" in out, out
        assert "burn_a" not in out and "burn_b" not in out, out
        d.stop()
    finally:
        d.g.kill()
        burn.kill()
        if flood:
            flood.kill()


@test
def daemon_serves_profiles_to_go_tool_pprof_over_http():
    d = Daemon()
    w = Workload("gs_burn", env=BURN_ENV)
    base = d.metrics_url.replace("/metrics", "/debug/pprof/profile")
    try:
        w.release()
        status, body = http_get(base)
        expect_eq(status, 404, f"before any profile: {body!r}")
        for bad in ("0", "61", "-1", "2x", ""):
            status, body = http_get(base + "?seconds=" + bad)
            expect_eq(status, 400, f"seconds={bad}: {body!r}")
        status, out = go_pprof("-top", "-seconds", "2", "-timeout", "60", base)
        expect_eq(status, 0, f"go tool pprof over HTTP:\n{out}")
        assert "Type: cpu" in out and burner_share(out), out
        # the same profile is now the latest, served without running another
        status, out = go_pprof("-top", base)
        expect_eq(status, 0, f"go tool pprof, the latest:\n{out}")
        assert burner_share(out), out
        expect_eq(len(profiles(d, "http-all")), 1, "the on-demand profile's file")
        # metrics are served while a profile runs
        import threading
        slow = threading.Thread(target=http_get, args=(base + "?seconds=3",))
        slow.start()
        time.sleep(0.5)
        status, body = http_get(base + "?seconds=1")
        expect_eq(status, 429, f"a second profile while one runs: {body!r}")
        t0 = time.monotonic()
        assert "gpusnoop_processes" in d.metrics()
        assert time.monotonic() - t0 < 2, "a scrape waited for the profile"
        slow.join(TIMEOUT)
        d.stop()
    finally:
        d.g.kill()
        w.kill()


@test
def daemon_refuses_bad_profile_and_ringbuf_settings():
    for line, why in (("schedule every 1m profile 2m", "would overlap the next"),
                      ("schedule every 1m profile 1s hz=5000", "is not 'every DURATION profile"),
                      ("schedule every 1m profile 1s processes=gpu", "processes=all|cuda"),
                      ("ringbuf 3", "'3' is not a ring buffer size"),
                      ("ringbuf 4096", "is not a ring buffer size")):
        _, conf = config_file("gs-dprof-bad-", f"# line 1\n{line}\n")
        p = subprocess.run([GPUSNOOP, "daemon", "--config", conf], capture_output=True,
                           timeout=TIMEOUT)
        err = p.stderr.decode()
        expect_eq(p.returncode, 1, f"{line}: status ({err})")
        assert f"{conf}:2: " in err and why in err, f"{line}: {err}"


if __name__ == "__main__":
    sys.exit(main())
