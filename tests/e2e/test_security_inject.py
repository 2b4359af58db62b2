#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_security_inject.py: --inject never leaves a target broken, and loads only a file root owns."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (NOBODY, ROOT, TIMEOUT, Gpusnoop, LineReader, Skip, expect_eq,  # noqa: E402
                     test)

SECURITY_SRC = os.path.join(ROOT, "tests", "fixtures", "security")
INJECTION = os.path.join(ROOT, "libgpusnoop-cupti.so")
LOAD_TIMEOUT = 150  # seconds for gpusnoop to load its BPF objects on a busy machine


def injection_library():
    if not os.path.exists(INJECTION):
        raise Skip(f"{INJECTION} not built (no CUPTI headers at build time)")
    return os.path.realpath(INJECTION)


def compile_c(*args):
    p = subprocess.run(["cc", "-O2", "-Wall", "-Werror"] + list(args), capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert p.returncode == 0, f"cc {args}: {p.stderr}"


def injected(pid, lib):
    with open(f"/proc/{pid}/maps") as f:
        return lib in f.read()


@test
def inject_timeout_leaves_the_target_running():
    """Finding 8: the remote dlopen waits on the loader lock past --inject's 10 s.

    Another thread of the target is inside a library constructor (the loader lock held) from
    before gpusnoop attaches until 16 s after. gpusnoop reports the timeout; the stopped thread
    finishes its dlopen later, comes back through the stub to where it was (pthread_join, a
    restarted futex wait) with the library loaded, and the target exits 0: no SIGSEGV at
    address 0."""
    lib = injection_library()
    tmp = tempfile.mkdtemp()
    slow, exe = os.path.join(tmp, "libgs_slow_ctor.so"), os.path.join(tmp, "gs_slow_dlopen")
    compile_c("-shared", "-fPIC", "-o", slow, os.path.join(SECURITY_SRC, "gs_slow_ctor.c"))
    compile_c("-o", exe, os.path.join(SECURITY_SRC, "gs_slow_dlopen.c"), "-pthread", "-ldl")
    w = subprocess.Popen([exe, slow, os.path.basename(lib)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    out = LineReader(w.stdout)
    g = None
    try:
        out.wait_for(lambda l: l.startswith("ready "), "target ready")
        out.wait_for(lambda l: l == "holding", "the constructor holding the loader lock")
        g = Gpusnoop("record", "-e", "gpu", "--inject", "-p", str(w.pid), "-o",
                     os.path.join(tmp, "gpu.json"))
        line = g.wait_stderr(f"--inject: pid {w.pid}:", LOAD_TIMEOUT)
        g.stop()
        expect_eq(w.wait(60), 0, f"target status ({w.stderr.read()!r})")
        # the dlopen gpusnoop gave up on finished in the stopped thread before it went on
        expect_eq(out.drain()[-2:], ["mapped yes", "done"], "the target's last lines")
        assert f"--inject: pid {w.pid}: dlopen({lib}) still running after 10 s" in line, line
    finally:
        if g:
            g.kill()
        if w.poll() is None:
            w.kill()
            w.wait()


@test
def inject_refuses_a_library_the_target_sees_writable():
    """Low item: the target's mount namespace shows a nobody-owned, world-writable file at the
    library's path (a bind mount over it); --inject refuses with one line, loads nothing."""
    lib = injection_library()
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    fake = os.path.join(tmp, "fake.so")
    shutil.copy(lib, fake)
    os.chown(fake, NOBODY, NOBODY)
    os.chmod(fake, 0o666)
    script = f'mount --bind "{fake}" "{lib}" && echo ready $$ && exec sleep 60'
    w = subprocess.Popen(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    g = None
    try:
        pid = int(LineReader(w.stdout).wait_for(lambda l: l.startswith("ready "),
                                                "target ready").split()[1])
        g = Gpusnoop("record", "-e", "gpu", "--inject", "-p", str(pid), "-o",
                     os.path.join(tmp, "gpu.json"))
        line = g.wait_stderr("--inject:", LOAD_TIMEOUT)
        expect_eq(line, f"gpusnoop: error: --inject: pid {pid}: {lib} as the process sees it is "
                  "not owned by root: not loaded", "the refusal")
        assert g.stop() != 0
        assert not injected(pid, lib) and not injected(pid, fake), "loaded anyway"
        expect_eq([l for l in g.err.lines if "--inject" in l], [line], "one line")
    finally:
        if g:
            g.kill()
        w.kill()
        w.wait()
