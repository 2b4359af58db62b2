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
from harness import (AS_NOBODY, LIB, NOBODY, ROOT, TIMEOUT, Gpusnoop, LineReader, end_input,
                     expect_eq, process, run_gpusnoop, test)

CUDART = os.path.join(LIB, "libcudart.so.13")
MiB = 1 << 20
PT_LOAD, PT_NOTE, PT_INTERP = 1, 4, 3
SECURITY_SRC = os.path.join(ROOT, "tests", "fixtures", "security")

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
            AS_NOBODY + [sys.executable, script, lib],
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
        end_input(self.proc)


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


# Runs as root: calls the sled of tests/fixtures/security/gs_sled.c N times per line read.
SLED_CALLER = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.gs_sled_sum.restype = ctypes.c_uint32
print("ready", flush=True)
for n, line in enumerate(sys.stdin, 1):
    print("sum", n, *(lib.gs_sled_sum() for _ in range(int(line))), flush=True)
"""
SLED_SUM = (8192 * 0x01010101) & 0xffffffff  # gs_sled.c's 8192 adds, untouched
SWAP_ROUNDS_MIN, SWAP_ROUNDS_MAX = 8, 32  # fresh libcudart copies mapped, one per round
SWAP_FIRES = 6  # loader events per round at most, until gpusnoop has looked at the copy


class Commanded:
    """A process that says "ready", then answers each command line with "WORD N ...", N its
    count of answers so far (so one answer is never taken for the one before)."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.out = LineReader(self.proc.stdout)
        self.ready = self.out.wait_for(lambda l: l.startswith("ready"), f"{argv[0]} ready")
        self.asked = 0

    def ask(self, cmd, answer):
        """The answer's words after the count."""
        self.proc.stdin.write((cmd + "\n").encode())
        self.proc.stdin.flush()
        self.asked += 1
        want = f"{answer} {self.asked}"
        line = self.out.wait_for(lambda l: l == want or l.startswith(want + " "),
                                 f"{want!r} for {cmd!r}")
        return line.split()[2:]

    def finish(self):
        """Ends its input and waits; kills it past TIMEOUT. Its status."""
        return end_input(self.proc)


def file_offsets(path, *names):
    """{name: file offset} of exported functions of an ELF64 little-endian library."""
    with open(path, "rb") as f:
        data = f.read()
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    loads = []
    for i in range(phnum):
        ptype, _, off, vaddr, _, filesz = struct.unpack_from("<IIQQQQ", data,
                                                             phoff + i * phentsize)
        if ptype == PT_LOAD:
            loads.append((vaddr, off, filesz))
    out = subprocess.run(["nm", "-D", "-S", "--defined-only", path], capture_output=True,
                         text=True, check=True, timeout=TIMEOUT).stdout
    found = {}
    for line in out.splitlines():
        f = line.split()
        if f[-1] in names:
            addr = int(f[0], 16)
            for vaddr, off, filesz in loads:
                if vaddr <= addr < vaddr + filesz:
                    found[f[-1]] = (addr - vaddr + off, int(f[1], 16))
    expect_eq(sorted(found), sorted(names), f"functions found in {path}")
    return found


def compile_c(*args):
    p = subprocess.run(["cc", "-O2", "-Wall", "-Werror"] + list(args), capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert p.returncode == 0, f"cc {args}: {p.stderr}"


@test
def swapped_mapping_gets_no_probes():
    """-a: a user swaps a root process's library into the range of a libcudart it maps.

    nobody maps a fresh copy of a libcudart (root's, so probed in every process: only the
    descriptor protects anyone here) and, as fast as mmap(MAP_FIXED) goes, swaps into the same
    range the library a root process runs, then makes the loader report a change. gpusnoop
    reads the maps while the copy is there and opens /proc/PID/map_files/A-B while either file
    may be. Before 77f9d86 it parsed that path and attached each uprobe through it again, so
    probes placed at the copy's function offsets went into the root library, inside the
    immediates of gs_sled.c's adds, and the root process's sum changed until gpusnoop exited:
    16 of 16 runs against that code failed here, after round 0 to 24 (median 1). Now a copy
    is opened once, checked, and probed through that descriptor: the sum never changes, and a
    copy found swapped at the open is skipped with a warning. When the race hits is the
    scheduler's choice, so rounds go on until that warning was seen at least once (1 to 6 of
    the first 8 rounds showed it in 11 runs here, 2 cores under load), SWAP_ROUNDS_MAX at
    most; no warning in all of them fails too."""
    tmp = tempfile.mkdtemp(prefix="gs_swap_")
    victim = attacker = g = None
    try:
        os.chmod(tmp, 0o755)  # root's, and nobody can read and map what is in it
        sled, nop = os.path.join(tmp, "libgs_sled.so"), os.path.join(tmp, "libgs_nop.so")
        cudart, swap = os.path.join(tmp, "cudart.so"), os.path.join(tmp, "gs_map_swap")
        compile_c("-shared", "-fPIC", "-o", sled, os.path.join(SECURITY_SRC, "gs_sled.c"))
        compile_c("-shared", "-fPIC", "-Wl,-soname,libcudart.so.13", "-o", cudart,
                  os.path.join(SECURITY_SRC, "gs_min_cudart.c"))
        compile_c("-shared", "-fPIC", "-o", nop, "-x", "c", "/dev/null")
        compile_c("-pthread", "-o", swap, os.path.join(SECURITY_SRC, "gs_map_swap.c"))
        os.chmod(sled, 0o644)
        # libcudart's probes, planted in the other file, land in the sled, one at least inside
        # an immediate (xor is 2 bytes, then 5 per add)
        (sled_off, sled_size), = file_offsets(sled, "gs_sled_sum").values()
        probed = [off for off, _ in file_offsets(cudart, "cudaMalloc", "cudaFree").values()]
        assert all(sled_off + 2 <= off < sled_off + sled_size - 1 for off in probed), probed
        assert any((off - sled_off - 2) % 5 for off in probed), (sled_off, probed)

        script = os.path.join(tmp, "sled_caller.py")
        with open(script, "w") as f:
            f.write(SLED_CALLER)
        victim = Commanded([sys.executable, script, sled])
        expect_eq(victim.ask("3", "sum"), [str(SLED_SUM)] * 3, "the sum before gpusnoop")

        g = Gpusnoop("leaks", "-a", "--format", "json")
        g.wait_tracing()
        attacker = Commanded(AS_NOBODY + [swap, sled, nop])
        apid = int(attacker.ready.split()[1])
        copies = os.path.join(tmp, "libcudart.so.13.")

        def skipped(line):
            return line.startswith(f"gpusnoop: warning: pid {apid}: {copies}") and \
                line.endswith(": skipped: another file is mapped there now")

        for i in range(SWAP_ROUNDS_MAX):
            if i >= SWAP_ROUNDS_MIN and any(skipped(l) for l in g.err.lines):
                break
            copy = os.path.join(tmp, f"libcudart.so.13.{i:02d}")
            shutil.copy(cudart, copy)
            os.chmod(copy, 0o644)
            attacker.ask(f"map {copy}", "fired")
            # done once gpusnoop has probed (or failed to probe) the copy; a loader event
            # whose maps had the other file there is not about the copy, so fire again
            for _ in range(SWAP_FIRES):
                if g.proc.poll() is not None:
                    break
                try:
                    g.err.wait_for(lambda l: copy in l and not skipped(l),
                                   f"gpusnoop probing {copy}", timeout=1)
                    break
                except AssertionError:
                    attacker.ask("fire", "fired")
            expect_eq(victim.ask("3", "sum"), [str(SLED_SUM)] * 3,
                      f"the root process's sum after round {i}")
        expect_eq(attacker.finish(), 0,
                  f"gs_map_swap status ({attacker.proc.stderr.read().decode()})")
        expect_eq(g.stop(), 0, "gpusnoop status")
        expect_eq(victim.ask("3", "sum"), [str(SLED_SUM)] * 3, "the sum after gpusnoop")
        err = g.stderr_text()
        # root's copies were probed in every process: only the descriptor kept the sled safe
        assert any(f"CUDA functions in {copies}" in l and l.endswith(" (all processes)")
                   for l in g.err.lines), err
        assert any(skipped(l) for l in g.err.lines), err
        assert sled not in err, err
    finally:
        if attacker:
            attacker.proc.kill()
            attacker.finish()
        if g:
            g.kill()
        if victim:
            victim.finish()
        shutil.rmtree(tmp)



# Runs as nobody: loads each library named on its command line, then waits for stdin to close.
LOADER = r"""
import ctypes, os, sys
libs = [ctypes.CDLL(path) for path in sys.argv[1:]]
print("ready", os.getpid(), len(libs), flush=True)
sys.stdin.read()
"""
QUOTA = 32  # profilers/probe_quota.h: GS_PROBE_QUOTA_PER_USER


def loader(tmp, libs):
    """LOADER as nobody, holding libs until its finish(); its pid."""
    script = os.path.join(tmp, "loader.py")
    with open(script, "w") as f:
        f.write(LOADER)
    p = Commanded(AS_NOBODY + [sys.executable, script] + libs)
    _, pid, loaded = p.ready.split()
    expect_eq(int(loaded), len(libs), "libraries loaded")
    return p, int(pid)


def probed_copies(err, pid, copies):
    """The copies gpusnoop says it probed in pid."""
    return {c for c in copies
            if any(f"pid {pid}: probing " in l and l.endswith(f" in {c}")
                   for l in err.splitlines())}


@test
def users_own_files_are_capped_and_given_back_at_exit():
    """-a: one user's own CUDA-named files get probes in at most QUOTA (process, file) pairs.

    Each costs a set of uprobes until its process exits; unbounded, one user mapping
    thousands of copies made root hold thousands of probes. A process loading QUOTA + 1
    copies gets QUOTA of them probed and one refused; once it exits, its probes and its share
    are given back, and the next process of that user is probed again."""
    tmp = nobody_dir()
    first = second = g = None
    try:
        lib = os.path.join(tmp, "libmin.so")
        compile_c("-shared", "-fPIC", "-o", lib, os.path.join(SECURITY_SRC, "gs_min_cudart.c"))
        copies = []
        for i in range(QUOTA + 2):
            copies.append(os.path.join(tmp, f"libcudart.so.13.{i}"))
            shutil.copy(lib, copies[-1])
            os.chown(copies[-1], NOBODY, NOBODY)
        g = Gpusnoop("leaks", "-a", "--format", "json")
        g.wait_tracing()
        first, first_pid = loader(tmp, copies[:QUOTA + 1])
        refused = g.wait_stderr(f"has {QUOTA} files of its own probed already")
        assert f"pid {first_pid}: {os.path.join(tmp, 'libcudart.so.13.')}" in refused and \
            f": skipped: uid {NOBODY} has {QUOTA} files" in refused, refused
        first.finish()
        second, second_pid = loader(tmp, copies[QUOTA + 1:])
        g.wait_stderr(f"pid {second_pid}: probing 2/")
        expect_eq(g.stop(), 0, "gpusnoop status")
        err = g.stderr_text()
        expect_eq(len(probed_copies(err, first_pid, copies)), QUOTA, "copies probed in the first")
        expect_eq(err.count(f"files of its own probed already"), 1, f"refusals in {err}")
        expect_eq(probed_copies(err, second_pid, copies), {copies[QUOTA + 1]},
                  "copies probed in the second, after the first exited")
    finally:
        if g:
            g.kill()
        for p in (first, second):
            if p:
                p.finish()
        shutil.rmtree(tmp)
