#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_oom_exit.py: a daemon OOM report of a process that exits right after its OOM, as a
crashing training script does, names the process and its frames."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LIB, TIMEOUT, LineReader, expect_eq, test
from test_daemon import OOM_ENV, Daemon, metric

MiB = 1 << 20

# Loads the stand-in runtime, allocates 32 MiB when told, then on the next line fails a 1 GiB
# cudaMalloc (error 2) and exits at once, without unwinding anything.
CHILD = r"""
import ctypes, os, sys
rt = ctypes.CDLL(sys.argv[1])
print("loaded", flush=True)
sys.stdin.readline()
p = ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(32 << 20)) == 0
print("allocated", flush=True)
sys.stdin.readline()
os._exit(7 if rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 30)) == 2 else 1)
"""


@test
def daemon_names_a_process_that_exits_right_after_its_oom():
    d = Daemon()
    child = None
    try:
        child = subprocess.Popen(["/usr/bin/python3", "-c", CHILD,
                                  os.path.join(LIB, "libcudart.so.13")],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 env=dict(os.environ, **OOM_ENV))
        out = LineReader(child.stdout)
        out.wait_for(lambda l: l == "loaded", "child loaded the runtime")
        d.wait_probed()
        child.stdin.write(b"\n")
        child.stdin.flush()
        out.wait_for(lambda l: l == "allocated", "child allocated")
        # the daemon has seen the process alive: its allocation is in the metrics
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                if metric(d.metrics(), "gpusnoop_cuda_outstanding_bytes", child.pid) == 32 * MiB:
                    break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(0.1)
        child.stdin.write(b"\n")
        child.stdin.flush()
        expect_eq(child.wait(TIMEOUT), 7, "child status (7: its cudaMalloc failed with 2)")
        line = d.g.wait_stderr(f"pid {child.pid} (python3): cuda-oom: report")
        path = line.split(": report ")[1]
        with open(path) as f:
            report = json.load(f)
        proc = report["processes"][0]
        expect_eq((proc["pid"], proc["comm"]), (child.pid, "python3"), "process")
        expect_eq(proc["outstanding_bytes"], 32 * MiB, "what it held")
        # its files were known: the frames name their modules (libffi called cudaMalloc)
        frames = report["trigger"]["frames"]
        assert frames and frames[0]["module"] and "libffi" in frames[0]["module"], frames
        for s in proc["stacks"]:
            assert s["frames"] and s["frames"][0]["module"], s
    finally:
        if child and child.poll() is None:
            child.kill()
            child.wait()
        d.stop()
