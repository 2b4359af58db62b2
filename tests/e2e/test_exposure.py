#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_exposure.py: what one process's stack or comm can make gpusnoop show (issue 22)."""
import glob
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (AS_NOBODY, LIB, ROOT, TIMEOUT, Gpusnoop, LineReader, end_input,  # noqa: E402
                     expect_eq, process, run_gpusnoop, test)

SECURITY_SRC = os.path.join(ROOT, "tests", "fixtures", "security")
PYCALLER = os.path.join(ROOT, "tests", "fixtures", "python", "gs_pycaller.py")
CUDART = os.path.join(LIB, "libcudart.so.13")
PY_NAMES = {"alloc_weights", "make_layer", "build_model", "main", "<module>"}


def python312():
    """pyenv's CPython 3.12 (as test_python.py's profile tests), else the one running us."""
    found = sorted(glob.glob(os.path.expanduser("~root/.pyenv/versions/3.12.*/bin/python3.12")))
    return found[-1] if found else sys.executable


def build_forger(tmp):
    exe = os.path.join(tmp, "gs_forged_frames")
    p = subprocess.run(["cc", "-O2", "-Wall", "-Werror", "-mno-red-zone", "-fno-omit-frame-pointer",
                        "-o", exe, os.path.join(SECURITY_SRC, "gs_forged_frames.c"),
                        "-L" + LIB, "-Wl,-rpath," + LIB, "-lcudart"],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    os.chmod(tmp, 0o755)
    return exe


@test
def forged_python_ids_never_show_another_process_names():
    """Finding 4: a C process forges bit-63 return addresses; a Python process's names stay its own.

    The Python process allocates first, so its frames get the first ids; the nobody-owned C
    process then allocates under a frame pointer chain of (1 << 63) | 0..63. Its stack must
    show none of the Python names and no Python frame at all (those are unknown addresses)."""
    tmp = tempfile.mkdtemp()
    forger = build_forger(tmp)
    py = subprocess.Popen([python312(), PYCALLER, "--hold", CUDART, "malloc"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    c = subprocess.Popen(AS_NOBODY + [forger], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=dict(os.environ, GS_FAKE_CUDA_NO_DRIVER="1"))
    g = None
    try:
        py_out, c_out = LineReader(py.stdout), LineReader(c.stdout)
        py_out.wait_for(lambda l: l.startswith("ready "), "python ready")
        c_pid = int(c_out.wait_for(lambda l: l.startswith("ready "), "forger ready").split()[1])
        g = Gpusnoop("leaks", "-p", str(py.pid), "-p", str(c_pid), "--format", "json")
        g.wait_tracing()
        py.send_signal(signal.SIGUSR1)
        py_out.wait_for(lambda l: l.startswith("done"), "python allocated")
        c.stdin.write(b"go\n")
        c.stdin.flush()
        expect_eq(c_out.wait_for(lambda l: l.startswith("done"), "forger allocated"), "done 0",
                  "forger's cudaMalloc")
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()})")
        report = g.reports()[-1]
        py_frames = [f for s in process(report, py.pid)["stacks"] for f in s["frames"]]
        assert PY_NAMES <= {f["symbol"] for f in py_frames if f.get("kind") == "python"}, \
            py_frames
        stacks = process(report, c_pid)["stacks"]
        expect_eq(len(stacks), 1, "the forger's one allocation stack")
        frames = stacks[0]["frames"]
        if frames[-1].get("kind") == "marker":  # the forged chain filled the stack
            expect_eq(frames.pop()["symbol"], "[truncated]", "the mark of a full native stack")
        forged = [f for f in frames if f["address"] >> 63]
        assert len(forged) >= 8, frames  # the chain was walked
        for f in frames:
            assert f.get("kind") is None, f"a Python frame in a C process: {f}"
            assert f["symbol"] not in PY_NAMES, f"another process's name: {f}"
            assert "python" not in json.dumps(f), f
    finally:
        if g:
            g.kill()
        end_input(c)
        py.kill()
        py.wait()


BUSY_COMM = b"gs\x1b]0;x\x07\x1b[2J"
BUSY = r"""
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(bytes.fromhex(sys.argv[1])), 0, 0, 0)  # PR_SET_NAME
end = time.monotonic() + 1.5
while time.monotonic() < end:
    pass
"""


@test
def folded_profile_escapes_a_hostile_comm():
    """Low item: a comm with terminal escapes is spelled \\xNN in profile's folded output."""
    path = os.path.join(tempfile.mkdtemp(), "p.folded")
    status, _, err = run_gpusnoop("profile", "-F", "199", "--format", "folded",
                                  "-o", path, "--", sys.executable, "-c", BUSY, BUSY_COMM.hex())
    expect_eq(status, 0, f"gpusnoop status ({err})")
    with open(path, "rb") as f:
        text = f.read()
    assert not re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", text), text[:400]
    mine = [l for l in text.splitlines() if l.startswith(b"gs\\x1b]0:x\\x07\\x1b[2J;")]
    assert mine, text[:400]


HOLDER = r"""
import ctypes, sys
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(bytes.fromhex(sys.argv[2])), 0, 0, 0)  # PR_SET_NAME
cuda = ctypes.CDLL(sys.argv[1])
print("ready", flush=True)
kept = []
for line in sys.stdin:  # one more kept 1 MiB allocation per line, until the daemon sees one
    kept.append(ctypes.c_void_p())
    print("done", cuda.cudaMalloc(ctypes.byref(kept[-1]), 1 << 20), flush=True)
"""


@test
def ctl_status_escapes_a_hostile_comm():
    """Low item: the daemon's `ctl status` line of a process spells its comm's escapes \\xNN."""
    tmp = tempfile.mkdtemp(prefix="gs-exposure-")
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, "ctl.sock")
    d = Gpusnoop("daemon", "--output-dir", os.path.join(tmp, "reports"), "--socket", sock,
                 "--metrics-addr", "127.0.0.1:0")
    w = None
    try:
        d.wait_stderr("daemon: following every CUDA process", 120)
        w = subprocess.Popen([sys.executable, "-c", HOLDER, CUDART, BUSY_COMM.hex()],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             env=dict(os.environ, GS_FAKE_CUDA_NO_DRIVER="1"))
        out = LineReader(w.stdout)
        out.wait_for(lambda l: l == "ready", "holder ready")
        line = None
        for _ in range(50):  # the daemon probes the runtime once it is loaded: allocate again
            w.stdin.write(b"go\n")
            w.stdin.flush()
            expect_eq(out.wait_for(lambda l: l.startswith("done"), "holder allocated"),
                      "done 0", "cudaMalloc")
            out.lines.clear()
            p = subprocess.run([os.path.join(ROOT, "gpusnoop"), "ctl", "--socket", sock,
                                "status"], capture_output=True, timeout=TIMEOUT)
            expect_eq(p.returncode, 0, f"ctl status ({p.stderr!r})")
            mine = [l for l in p.stdout.splitlines() if l.startswith(f"pid {w.pid} ".encode())]
            if mine and b" MiB outstanding" in mine[0]:
                line = mine[0]
                break
            time.sleep(0.2)
        assert line, p.stdout
        assert not re.search(rb"[\x00-\x1f\x7f]", p.stdout.replace(b"\n", b"")), p.stdout
        expect_eq(line.split(b":")[0],
                  f"pid {w.pid} (gs\\x1b]0;x\\x07\\x1b[2J)".encode(), "the status line's comm")
    finally:
        if w:
            end_input(w)
        d.kill()
