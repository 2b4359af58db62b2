#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_security_names.py: perf maps and names that an unprivileged process controls."""
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (AS_NOBODY, GPUSNOOP, LIB, TIMEOUT, LineReader, MiB, Gpusnoop, end_input,
                     expect_eq, test)

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}
HOSTILE_COMM = b"gs\xff\xfe\n\x1b[31m"

# A JIT-like program: x86-64 code in an anonymous executable mapping calls cudaMalloc(ptr, size)
# (push %rbp; mov %rsp,%rbp; call *%rdx; pop %rbp; ret), so the allocating stack starts in code
# that only a perf map can name. It prints "ready PID ADDR" and waits for a line on stdin before
# calling, then prints "done" and waits for stdin to close. It writes no perf map: the test does.
JIT = r"""
import ctypes, mmap, os, sys
comm = os.environ.get("GS_COMM")
if comm:
    libc = ctypes.CDLL(None)
    libc.prctl(15, ctypes.c_char_p(bytes.fromhex(comm)), 0, 0, 0)  # PR_SET_NAME
cuda = ctypes.CDLL(sys.argv[1])
code = bytes([0x55, 0x48, 0x89, 0xe5, 0xff, 0xd2, 0x5d, 0xc3])
m = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
              prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
m.write(code)
addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
jit = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p)(addr)
print("ready", os.getpid(), "%x" % addr, flush=True)
sys.stdin.readline()
ptr = ctypes.c_void_p()
ret = jit(ctypes.addressof(ptr), 5 << 20, ctypes.cast(cuda.cudaMalloc, ctypes.c_void_p).value)
print("done", ret, flush=True)
sys.stdin.read()
"""


class Jit:
    """The JIT-like program, as nobody, held before its allocation."""

    def __init__(self, comm=None):
        env = dict(os.environ, **NO_DRIVER)
        if comm:
            env["GS_COMM"] = comm.hex()
        self.proc = subprocess.Popen(AS_NOBODY + [sys.executable, "-c", JIT,
                                               os.path.join(LIB, "libcudart.so.13")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.out = LineReader(self.proc.stdout)
        line = self.out.wait_for(lambda l: l.startswith("ready "), "JIT program ready")
        _, pid, addr = line.split()
        self.pid, self.addr = int(pid), int(addr, 16)
        self.perf_map = f"/tmp/perf-{self.pid}.map"

    def allocate(self):
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()
        line = self.out.wait_for(lambda l: l.startswith("done "), "JIT program allocated")
        expect_eq(line, "done 0", "cudaMalloc through the JIT code")

    def finish(self):
        end_input(self.proc)
        if os.path.lexists(self.perf_map):
            os.unlink(self.perf_map)


# gpusnoop under a parent of its own that reports its peak RSS (ru_maxrss of its only child)
RSS_WRAPPER = r"""
import resource, signal, subprocess, sys
p = subprocess.Popen(sys.argv[1:])
signal.signal(signal.SIGINT, lambda *a: p.send_signal(signal.SIGINT))
status = p.wait()
sys.stderr.write("maxrss_kib %d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(status)
"""


class Command(Gpusnoop):
    """Gpusnoop's stderr watching and stopping, for a command line of our own."""

    def __init__(self, cmd):  # pylint: disable=super-init-not-called
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.err = LineReader(self.proc.stderr)
        self.stdout = b""


def leaks_of(jit, *extra, rss=False):
    """`leaks -p` on the JIT program through its allocation; (status, stdout, stderr, maxrss)."""
    args = ["leaks", "-p", str(jit.pid), *extra]
    cmd = ([sys.executable, "-c", RSS_WRAPPER, GPUSNOOP] if rss else [GPUSNOOP]) + args
    g = Command(cmd)
    try:
        g.wait_tracing()
        jit.allocate()
        status = g.stop()
        err = g.stderr_text()
        m = re.search(r"^maxrss_kib (\d+)$", err, re.M)
        return status, g.stdout, err, int(m.group(1)) if m else None
    finally:
        g.kill()


def jit_frames(stdout, pid):
    """The frames of the one outstanding 5 MiB allocation of pid in the final JSON report."""
    reports = [json.loads(l) for l in stdout.decode("utf-8").splitlines() if l.strip()]
    expect_eq([r["report"] for r in reports], ["final"], "reports written")
    procs = [p for p in reports[0]["processes"] if p["pid"] == pid]
    expect_eq(len(procs), 1, "the JIT program in the report")
    expect_eq((procs[0]["outstanding_bytes"], procs[0]["outstanding_allocations"]), (5 * MiB, 1),
              "outstanding")
    return procs[0]["stacks"][0]["frames"]


def nobody_owns(path):
    os.lchown(path, 65534, 65534)


@test
def perf_map_symlink_to_a_root_only_file_is_not_read():
    secret = "gs_secret_" + secrets.token_hex(8)
    tmp = tempfile.mkdtemp(prefix="gs-secret-")  # 0700, root's
    target = os.path.join(tmp, "secret")
    jit = Jit()
    try:
        with open(target, "w") as f:
            f.write(f"{jit.addr:x} 100 {secret}\n0 ffffffffffff {secret}_all\n")
        os.chmod(target, 0o600)
        os.symlink(target, jit.perf_map)
        nobody_owns(jit.perf_map)  # as the user would have made it
        status, out, err, _ = leaks_of(jit, "--format", "json")
        expect_eq(status, 0, f"gpusnoop status ({err})")
        frames = jit_frames(out, jit.pid)
        assert secret.encode() not in out and secret not in err, f"secret read: {frames!r}"
        expect_eq(frames[0]["symbol"], None, "the JIT frame stays unnamed")
    finally:
        jit.finish()
        shutil.rmtree(tmp)

    # the control: the same line in the process's own regular file names the frame
    jit = Jit()
    try:
        with open(jit.perf_map, "w") as f:
            f.write(f"{jit.addr:x} 100 gs_jit_named\n")
        nobody_owns(jit.perf_map)
        status, out, err, _ = leaks_of(jit, "--format", "json")
        expect_eq(status, 0, f"gpusnoop status ({err})")
        frames = jit_frames(out, jit.pid)
        expect_eq((frames[0]["symbol"], frames[0]["module"], frames[0]["offset"]),
                  ("gs_jit_named", jit.perf_map, 6), "the JIT frame named by its own map")
    finally:
        jit.finish()


@test
def perf_map_fifo_does_not_block():
    jit = Jit()
    try:
        os.mkfifo(jit.perf_map, 0o600)
        nobody_owns(jit.perf_map)
        # nobody ever writes the FIFO: a reader that opened it would wait forever
        status, out, err, _ = leaks_of(jit, "--format", "json")
        expect_eq(status, 0, f"gpusnoop status ({err})")
        frames = jit_frames(out, jit.pid)
        expect_eq(frames[0]["symbol"], None, "the JIT frame stays unnamed")
    finally:
        jit.finish()


@test
def perf_map_of_a_gibibyte_costs_little_memory():
    jit = Jit()
    try:
        # 1 GiB, sparse, the process's own; its only symbol line lies beyond what is read
        with open(jit.perf_map, "wb") as f:
            f.seek(1 << 30)
            f.write(f"\n{jit.addr:x} 100 gs_beyond_the_bound\n".encode())
        nobody_owns(jit.perf_map)
        status, out, err, maxrss = leaks_of(jit, "--format", "json", rss=True)
        expect_eq(status, 0, f"gpusnoop status ({err})")
        frames = jit_frames(out, jit.pid)
        expect_eq(frames[0]["symbol"], None, "nothing past the bound is read")
        assert maxrss is not None, err
        assert maxrss < 200 * 1024, f"gpusnoop peak RSS {maxrss} KiB"
        assert "larger than 64 MiB, the rest ignored" in err, err
    finally:
        jit.finish()


@test
def hostile_comm_is_escaped_in_json_and_text():
    jit = Jit(comm=HOSTILE_COMM)
    try:
        with open(f"/proc/{jit.pid}/comm", "rb") as f:
            expect_eq(f.read(), HOSTILE_COMM + b"\n", "the comm the kernel holds")
        # both reports of one run: JSON on stdout, and text from a second instance
        text = subprocess.Popen([GPUSNOOP, "leaks", "-p", str(jit.pid)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        text_err = LineReader(text.stderr)
        try:
            text_err.wait_for(lambda l: "tracing CUDA allocations" in l, "text gpusnoop ready")
            status, out, err, _ = leaks_of(jit, "--format", "json")
            text.send_signal(signal.SIGINT)
            text_out, _ = text.communicate(timeout=TIMEOUT)
        finally:
            if text.poll() is None:
                text.kill()
                text.communicate()
        expect_eq(status, 0, f"gpusnoop status ({err})")
        expect_eq(text.returncode, 0, "text gpusnoop status")

        # strict UTF-8 and strict JSON: the invalid bytes became U+FFFD, the controls escapes
        doc = json.loads(out.decode("utf-8", errors="strict"), strict=True)
        assert b"\\n" in out and b"\\u001b[31m" in out and b"\x1b" not in out, out
        procs = [p for p in doc["processes"] if p["pid"] == jit.pid]
        expect_eq(procs[0]["comm"], "gs\ufffd\ufffd\n\x1b[31m", "comm in the JSON report")

        # the text report: no raw control byte, the comm's bytes shown escaped
        assert not re.search(rb"[\x00-\x08\x0b-\x1f\x7f]", text_out), text_out
        assert f"pid {jit.pid} (gs\\xff\\xfe\\x0a\\x1b[31m):".encode() in text_out, text_out
    finally:
        jit.finish()


@test
def hostile_comm_in_metrics_passes_promtool():
    from test_daemon import Daemon  # the daemon set-up of test_daemon.py
    if not shutil.which("promtool"):
        raise AssertionError("promtool is not installed (Debian's prometheus package)")
    d = Daemon()
    jit = None
    try:
        jit = Jit(comm=HOSTILE_COMM)
        d.wait_probed()
        jit.allocate()
        want = (f'gpusnoop_cuda_outstanding_bytes{{pid="{jit.pid}",'
                'comm="gs\ufffd\ufffd\\n\\\\x1b[31m"} 5242880')
        # the exposition is refreshed every second
        deadline = time.monotonic() + 10
        while True:
            with urllib.request.urlopen(d.metrics_url, timeout=5) as r:
                raw = r.read()
            text = raw.decode("utf-8", errors="strict")
            if want in text.splitlines() or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert want in text.splitlines(), f"{want!r} not in:\n{text}"
        check = subprocess.run(["promtool", "check", "metrics"], input=raw,
                               capture_output=True, timeout=TIMEOUT)
        expect_eq(check.returncode, 0, f"promtool ({check.stdout!r} {check.stderr!r})")
    finally:
        if jit:
            jit.finish()
        d.stop()
        shutil.rmtree(d.dir, ignore_errors=True)
