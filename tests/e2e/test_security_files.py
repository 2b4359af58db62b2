#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_security_files.py: files of unprivileged processes: crafted, swapped, theirs; -p 2."""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (LIB, TIMEOUT, Gpusnoop, LineReader, expect_eq, process, run_gpusnoop,
                     test)

NOBODY = 65534
CUDART = os.path.join(LIB, "libcudart.so.13")
MiB = 1 << 20
PT_NOTE, PT_INTERP = 4, 3

# Runs as nobody: loads a library with ctypes, answers commands on stdin, one line each.
AGENT = r"""
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1])
print("ready", os.getpid(), flush=True)
children = []
for line in sys.stdin:
    cmd, *args = line.split()
    if cmd == "malloc":
        p = ctypes.c_void_p()
        print("ok", lib.cudaMalloc(ctypes.byref(p), int(args[0])), flush=True)
    elif cmd == "fork_malloc":
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            p = ctypes.c_void_p()
            os.write(w, b"%d\n" % lib.cudaMalloc(ctypes.byref(p), int(args[0])))
            os.read(0, 1)  # held until stdin closes, so it is alive for the report
            os._exit(0)
        children.append(pid)
        print("child", pid, os.read(r, 16).decode().strip(), flush=True)
for pid in children:
    os.waitpid(pid, 0)
"""


class Agent:
    """The agent as nobody (setpriv), with its own library path."""

    def __init__(self, tmp, lib, env=None):
        script = os.path.join(tmp, "agent.py")
        with open(script, "w") as f:
            f.write(AGENT)
        self.proc = subprocess.Popen(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
             sys.executable, script, lib],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=dict(os.environ, GS_FAKE_CUDA_NO_DRIVER="1", **(env or {})))
        self.out = LineReader(self.proc.stdout)
        line = self.out.wait_for(lambda l: l.startswith("ready "), "agent ready")
        self.pid = int(line.split()[1])

    def ask(self, cmd, answer):
        self.proc.stdin.write((cmd + "\n").encode())
        self.proc.stdin.flush()
        return self.out.wait_for(lambda l: l.startswith(answer), f"agent {cmd!r}").split()

    def finish(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def nobody_dir():
    """A temporary directory nobody can enter and write to."""
    tmp = tempfile.mkdtemp(prefix="gs_sec_")
    os.chmod(tmp, 0o755)
    os.chown(tmp, NOBODY, NOBODY)
    return tmp


def patch_phdr(path, ptype, new_type, offset, filesz):
    """Rewrites the first program header of type ptype (ELF64, little-endian)."""
    with open(path, "r+b") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            ph = bytearray(f.read(56))
            if struct.unpack_from("<I", ph, 0)[0] != ptype:
                continue
            struct.pack_into("<I", ph, 0, new_type)
            struct.pack_into("<Q", ph, 8, offset)
            struct.pack_into("<Q", ph, 32, filesz)
            f.seek(phoff + i * phentsize)
            f.write(ph)
            return
    raise AssertionError(f"{path}: no program header of type {ptype}")


@test
def crafted_interp_library_is_survived():
    """A library whose PT_INTERP offset + size wraps past 2^64 (it crashed `leaks -p`)."""
    tmp = nobody_dir()
    agent = g = None
    try:
        lib = os.path.join(tmp, "libcudart.so.13")
        shutil.copy(CUDART, lib)
        patch_phdr(lib, PT_NOTE, PT_INTERP, (1 << 64) - 16, 32)
        os.chown(lib, NOBODY, NOBODY)
        agent = Agent(tmp, lib)
        g = Gpusnoop("leaks", "-p", str(agent.pid), "--format", "json")
        g.wait_tracing()
        expect_eq(agent.ask(f"malloc {MiB}", "ok"), ["ok", "0"], "cudaMalloc")
        expect_eq(g.stop(), 0, "gpusnoop status")
        reports = g.reports()
        expect_eq([r["report"] for r in reports], ["final"], "reports written")
        proc = process(reports[0], agent.pid)
        expect_eq((proc["outstanding_bytes"], proc["outstanding_allocations"]), (MiB, 1),
                  "the allocation made through the crafted library")
    finally:
        if g:
            g.kill()
        if agent:
            agent.finish()
        shutil.rmtree(tmp)


@test
def users_library_is_probed_per_process_under_all():
    """-a: a library nobody owns gets probes for its process only, not for every process.

    A child forked after attach maps the same file but is not that process: with probes for
    every process (as before) its cudaMalloc was traced too."""
    tmp = nobody_dir()
    agent = g = None
    try:
        lib = os.path.join(tmp, "libcudart.so.13")
        shutil.copy(CUDART, lib)
        os.chown(lib, NOBODY, NOBODY)
        agent = Agent(tmp, lib)
        g = Gpusnoop("leaks", "-a", "--format", "json")
        g.wait_tracing()  # the scan of every process, this one too, is done by then
        expect_eq(agent.ask(f"malloc {MiB}", "ok"), ["ok", "0"], "parent's cudaMalloc")
        _, child, res = agent.ask(f"fork_malloc {2 * MiB}", "child")
        expect_eq(res, "0", "child's cudaMalloc")
        expect_eq(g.stop(), 0, "gpusnoop status")
        reports = g.reports()
        expect_eq([r["report"] for r in reports], ["final"], "reports written")
        proc = process(reports[0], agent.pid)
        expect_eq((proc["outstanding_bytes"], proc["outstanding_allocations"]), (MiB, 1),
                  "the agent's own allocation")
        pids = [p["pid"] for p in reports[0]["processes"]]
        assert int(child) not in pids, f"child {child} traced through nobody's file: {pids}"
        err = g.stderr_text()
        assert f"pid {agent.pid}: {lib} is not root's or is writable by others: probed in " \
            "this process only" in err, err
        assert f"in {lib} (all processes)" not in err, err
    finally:
        if g:
            g.kill()
        if agent:
            agent.finish()
        shutil.rmtree(tmp)


@test
def kernel_thread_pid_is_refused():
    """-p 2 (kthreadd) has no user space: one line and a failure, not a wait for CUDA."""
    status, out, err = run_gpusnoop("leaks", "-p", "2")
    assert status != 0, (status, err)
    lines = err.strip().splitlines()
    expect_eq(len(lines), 1, f"one line on stderr: {err!r}")
    assert lines[0].endswith("pid 2 (kthreadd): a kernel thread, it runs no user code to probe"), \
        lines[0]
    assert "waiting" not in err, err
    expect_eq(out, "", "stdout")
