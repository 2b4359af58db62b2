#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_python314.py: Python frames on Debian unstable's stripped python3.14 and python3.15.

The interpreters run chrooted in the cached sid root (scripts/bundle/roots.sh sid), gpusnoop
outside it: the target's files are reached through its root, as for a container. Expected
lines are the script's marks, each checked against the interpreter's own co_positions().
"""
import atexit
import gzip
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import (LIB, LineReader, Gpusnoop, Workload, expect_eq, process,  # noqa: E402
                     run_gpusnoop, test, run_attached)
from test_python import (MALLOC_CALLERS, SCRIPT, TORCH_CPU_SCRIPT, interpreter,  # noqa: E402
                         marked_lines, python_frames, the_allocation)

ROOTS_SH = os.path.join(harness.ROOT, "scripts", "bundle", "roots.sh")
ROOTS_TIMEOUT = 900  # the first run makes the root: ~325 MB from Debian's mirror
VERSIONS = ("3.14", "3.15")
_state = {}


def sid():
    """(root, folder inside the root holding the script and the fake libcudart)."""
    if not _state:
        p = subprocess.run([ROOTS_SH, "sid"], capture_output=True, text=True,
                           timeout=ROOTS_TIMEOUT)
        expect_eq(p.returncode, 0, f"roots.sh sid: {p.stderr}")
        root = p.stdout.strip()
        inner = tempfile.mkdtemp(prefix="gs-py314-", dir=os.path.join(root, "tmp"))
        os.chmod(inner, 0o755)
        atexit.register(shutil.rmtree, inner, True)
        shutil.copy(SCRIPT, inner)
        shutil.copy(os.path.join(LIB, "libcudart.so.13"), inner)
        _state.update(root=root, inner="/tmp/" + os.path.basename(inner))
    return _state["root"], _state["inner"]


def command(version, mode, hold=False):
    root, inner = sid()
    return (["chroot", root, "python" + version, inner + "/gs_pycaller.py"]
            + (["--hold"] if hold else []) + [inner + "/libcudart.so.13", mode])


def script_in_root():
    return sid()[1] + "/gs_pycaller.py"


def interpreter_lines(version):
    """{qualname: set of lines} of the script's code objects, from co_positions()."""
    root, inner = sid()
    prog = ("import json, sys, types\n"
            "src = open(sys.argv[1]).read()\n"
            "out = {}\n"
            "def walk(c):\n"
            "    out.setdefault(c.co_qualname, set()).update(\n"
            "        p[0] for p in c.co_positions() if p[0] is not None)\n"
            "    for k in c.co_consts:\n"
            "        if isinstance(k, types.CodeType): walk(k)\n"
            "walk(compile(src, sys.argv[1], 'exec'))\n"
            "print(json.dumps({k: sorted(v) for k, v in out.items()}))\n")
    p = subprocess.run(["chroot", root, "python" + version, "-c", prog,
                        inner + "/gs_pycaller.py"], capture_output=True, text=True, timeout=60)
    expect_eq(p.returncode, 0, f"python{version} co_positions: {p.stderr}")
    return {k: set(v) for k, v in json.loads(p.stdout).items()}


def expected_frames(version, callers=MALLOC_CALLERS):
    """[(function, file in the root, line)], each line one the interpreter itself reports."""
    marks, lines = marked_lines(), interpreter_lines(version)
    out = []
    for mark in callers:
        fn = mark if mark in lines else mark.split(".")[0]  # "main.busy": a line of main
        assert marks[mark] in lines[fn], (version, mark, marks[mark], sorted(lines[fn]))
        out.append((fn, script_in_root(), marks[mark]))
    return out


class ChrootWorkload(Workload):
    def __init__(self, version, mode, python=None, cmd=None, env=None):
        cmd = cmd or command(version, mode, hold=True)
        if python:
            cmd[2] = python
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, **(env or {})))
        self.out = LineReader(self.proc.stdout)
        self.out.wait_for(lambda l: l.startswith("ready "), "workload ready")
        self.pid = self.proc.pid


def no_refusal(err, version):
    assert "not supported" not in err, err


def check_leaks(version):
    want = expected_frames(version)
    w = ChrootWorkload(version, "malloc")
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json")
    frames = the_allocation(g.reports()[-1], w.pid)
    expect_eq(python_frames(frames), want, f"{version} frames by -p")
    no_refusal(g.stderr_text(), version)
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", *command(version, "malloc"))
    expect_eq(status, 0, f"gpusnoop status ({err})")
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    frames = the_allocation(report, report["processes"][0]["pid"])
    expect_eq(python_frames(frames), want, f"{version} frames by -- CMD")
    no_refusal(err, version)


def check_dwarf_in_place(version):
    # stripped interpreter: the eval loop's .cold part has no symbol, yet each run of it
    # gives way to the Python frames it ran, in place, between the native frames around it
    want = expected_frames(version)
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--stacks", "dwarf", "--",
                                    *command(version, "malloc"))
    expect_eq(status, 0, f"gpusnoop status ({err})")
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    frames = the_allocation(report, report["processes"][0]["pid"])
    expect_eq(python_frames(frames), want, f"{version} Python frames")
    symbols = [f["symbol"] or "" for f in frames]
    assert not any(f.get("kind") == "marker" for f in frames), symbols
    assert symbols.index("<module>") + 1 == symbols.index("PyEval_EvalCode"), symbols
    assert symbols.index("ffi_call") < symbols.index("alloc_weights"), symbols


def check_profile_folded(version):
    out = os.path.join(tempfile.mkdtemp(), "busy.folded")
    status, _, err = run_gpusnoop("profile", "-F", "199", "-o", out, "--",
                                  *command(version, "busy"), env={"GS_SPIN_SECONDS": "1"})
    expect_eq(status, 0, f"gpusnoop status ({err})")
    no_refusal(err, version)
    want = expected_frames(version, ["<module>", "main.busy"])
    path = script_in_root()
    chain = [f"<module> ({path}:{want[0][2]})", f"main ({path}:{want[1][2]})"]
    spin_lines = interpreter_lines(version)["spin"]
    spinning = 0
    with open(out) as f:
        for line in f:
            frames = line.rsplit(" ", 1)[0].split(";")
            spins = [x for x in frames if x.startswith(f"spin ({path}:")]
            if not spins:
                continue
            spinning += int(line.rsplit(" ", 1)[1])
            i = frames.index(spins[0])
            expect_eq(frames[i - 2:i], chain, "the callers of spin")
            assert int(spins[0].rsplit(":", 1)[1].rstrip(")")) in spin_lines, spins
    assert spinning >= 50, f"{spinning} samples in spin"


def check_profile_pprof(version):
    import test_profile  # noqa: E402  (its protobuf reader)
    out = os.path.join(tempfile.mkdtemp(), "busy.pb.gz")
    status, _, err = run_gpusnoop("profile", "--format", "pprof", "-F", "199", "-o", out, "--",
                                  *command(version, "busy"), env={"GS_SPIN_SECONDS": "1"})
    expect_eq(status, 0, f"gpusnoop status ({err})")
    p = test_profile.read_pprof(out)
    s, path = p["strings"], script_in_root()
    # one function per (qualified name, file), one line per location
    funcs = {(s[f[2]], s[f.get(4, 0)]): f[1] for f in p["functions"].values()}
    assert ("spin", path) in funcs and ("main", path) in funcs, sorted(funcs)[:20]

    def lines_of(sample, func):
        return {line.get(2) for loc in sample["loc"] for line in p["locations"][loc]["lines"]
                if line[1] == funcs[(func, path)]}

    in_spin = [x for x in p["samples"] if lines_of(x, "spin")]
    assert sum(x["val"][0] for x in in_spin) >= 50, p["samples"][:5]
    spin_lines = set().union(*(lines_of(x, "spin") for x in in_spin))
    assert spin_lines <= interpreter_lines(version)["spin"], spin_lines
    main_lines = set().union(*(lines_of(x, "main") for x in in_spin))
    expect_eq(main_lines, {expected_frames(version, ["main.busy"])[0][2]}, "main()'s line")


def check_record_cpu(version):
    trace_path = os.path.join(tempfile.mkdtemp(), "cpu.json.gz")
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "199", "-o", trace_path, "--",
                                  *command(version, "busy"), env={"GS_SPIN_SECONDS": "1"})
    expect_eq(status, 0, f"gpusnoop status ({err})")
    no_refusal(err, version)
    with gzip.open(trace_path, "rt") as f:
        trace = json.load(f)
    path, line = script_in_root(), marked_lines()["spin"]
    samples = [e["args"]["stack"] for e in trace["traceEvents"] if e["ph"] == "i"]
    spinning = [s for s in samples if any(x.startswith(f"spin ({path}:") for x in s)]
    assert len(spinning) >= 50, samples[:3]
    at_loop = [s for s in spinning
               if f"spin ({path}:{line})" in s or f"spin ({path}:{line + 1})" in s]
    assert len(at_loop) >= len(spinning) // 2, spinning[:3]


def check_gil_released(version):
    # ctypes releases the GIL around cudaDeviceSynchronize: the thread's binding (3.14's
    # autoTSSkey, 3.15's thread-local) still names the thread's frames
    trace_path = os.path.join(tempfile.mkdtemp(), "sync.json")
    status, _, err = run_gpusnoop("record", "-e", "cuda-sync", "-o", trace_path, "--",
                                  *command(version, "sync"))
    expect_eq(status, 0, f"gpusnoop status ({err})")
    with open(trace_path) as f:
        trace = json.load(f)
    syncs = [e for e in trace["traceEvents"]
             if e["ph"] == "X" and e["name"] == "cudaDeviceSynchronize"]
    expect_eq(len(syncs), 1, "device synchronizations")
    stack = syncs[0]["args"]["stack"]
    want = expected_frames(version, ["wait_for_gpu"])[0]
    i = stack.index(f"wait_for_gpu ({want[1]}:{want[2]})")
    assert stack[i + 1].startswith("Thread.run ("), stack


@test
def exec_children_bring_no_false_refusal():
    # a vfork child of the interpreter execs ldconfig while its memory is being read: that
    # process is gone, not an unsupported interpreter (once 2 runs in 7 said so)
    python = interpreter("3.13")
    script = os.path.join(harness.ROOT, "tests", "fixtures", "python", "gs_pyexec.py")
    for _ in range(3):
        status, out, err = run_gpusnoop("leaks", "--format", "json", "--", python, script,
                                        os.path.join(LIB, "libcudart.so.13"), "60")
        expect_eq(status, 0, f"gpusnoop status ({err})")
        no_refusal(err, "3.13")
        report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
        frames = the_allocation(report, report["processes"][0]["pid"])
        expect_eq([f for f, _, _ in python_frames(frames)], ["<module>"], "Python frames")


def file_offset(elf, vaddr):
    """The file offset of vaddr in the ELF64 image elf (bytes), through its PT_LOAD headers."""
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum = struct.unpack_from("<HH", elf, 54)
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", elf, phoff + i * phentsize)
        if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_filesz:
            return vaddr - p_vaddr + p_offset
    raise AssertionError(f"{vaddr:#x} not in the file")


def fake_newer(patch_words=()):
    """python3.15 copied as python3.16 into the root, its version (Py_Version and
    _Py_DebugOffsets) said to be 3.16.0a1, and words of _Py_DebugOffsets replaced
    ({index: value}): a version gpusnoop has no description of. Its path in the root."""
    root, inner = sid()
    with open(os.path.join(root, "usr/bin/python3.15"), "rb") as f:
        elf = bytearray(f.read())
    syms = subprocess.run(["nm", "-D", os.path.join(root, "usr/bin/python3.15")],
                          capture_output=True, text=True, check=True).stdout.split("\n")
    addr = {x.split()[2]: int(x.split()[0], 16) for x in syms if len(x.split()) == 3}
    version = 0x031000a1
    struct.pack_into("<I", elf, file_offset(elf, addr["Py_Version"]), version)
    runtime = file_offset(elf, addr["_PyRuntime"])
    assert elf[runtime:runtime + 8] == b"xdebugpy"
    words = {1: version}
    words.update(patch_words)
    for index, value in words.items():
        struct.pack_into("<Q", elf, runtime + 8 * index, value)
    name = "python3.16" if not patch_words else "bad/python3.16"
    path = os.path.join(root, inner.lstrip("/"), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(elf)
    os.chmod(path, 0o755)
    return inner + "/" + name


@test
def newer_version_is_checked_on_its_frames_then_named():
    # 3.16 (3.15 said to be 3.16): read with 3.15's description, used once a live frame
    # chain read with it ends at <module>: at once by -p, after the first frames by --
    python = fake_newer()
    root, inner = sid()
    want = [(fn, inner + "/gs_pycaller.py", n) for fn, _, n in expected_frames("3.15")]
    w = ChrootWorkload("3.15", "malloc", python)
    g = run_attached(w, "leaks", "-v", "-p", str(w.pid), "--format", "json")
    frames = the_allocation(g.reports()[-1], w.pid)
    expect_eq(python_frames(frames), want, "3.16 frames by -p")
    assert "CPython 3.16 (offsets read as 3.15's): frame chains end at a <module>" in \
        g.stderr_text(), g.stderr_text()
    no_refusal(g.stderr_text(), "3.16")
    status, out, err = run_gpusnoop("leaks", "-v", "--format", "json", "--", "chroot", root,
                                    python, inner + "/gs_pycaller.py",
                                    inner + "/libcudart.so.13", "malloc")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    assert "frame chains end at no frames yet" in err, err  # looked at from its exec on
    no_refusal(err, "3.16")
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    frames = the_allocation(report, report["processes"][0]["pid"])
    expect_eq(python_frames(frames), want, "3.16 frames by -- CMD")


@test
def newer_version_whose_offsets_mislead_is_refused():
    # frame.previous said to be f_funcobj's offset: in range and aligned, so only the walk of
    # a live chain shows it wrong; refused in one line, the stacks stay native
    python = fake_newer({39 + 1: 16})
    w = ChrootWorkload("3.15", "malloc", python)
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json")
    frames = the_allocation(g.reports()[-1], w.pid)
    expect_eq(python_frames(frames), [], "Python frames")
    said = [l for l in g.stderr_text().splitlines() if "CPython 3.16" in l]
    expect_eq(len(said), 1, f"lines about the interpreter ({g.stderr_text()})")
    assert "its frame chains" in said[0] and "is not supported" in said[0], said


@test
def torch_cpu_tensor_names_its_python_function_3_14():
    # Debian unstable's python3-torch on its python3.14 (the sid-torch root): the kept CPU
    # tensors' stack names keep_tensors() (3.12+ inline the list comprehension) at its line
    p = subprocess.run([ROOTS_SH, "sid-torch"], capture_output=True, text=True,
                       timeout=ROOTS_TIMEOUT)
    expect_eq(p.returncode, 0, f"roots.sh sid-torch: {p.stderr}")
    root = p.stdout.strip()
    inner = tempfile.mkdtemp(prefix="gs-py314-", dir=os.path.join(root, "tmp"))
    os.chmod(inner, 0o755)
    atexit.register(shutil.rmtree, inner, True)
    shutil.copy(TORCH_CPU_SCRIPT, inner)
    script = "/tmp/" + os.path.basename(inner) + "/" + os.path.basename(TORCH_CPU_SCRIPT)
    w = ChrootWorkload(None, None, cmd=["chroot", root, "python3.14", script, "--hold"])
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json")
    t = process(g.reports()[-1], w.pid)["torch"]
    no_refusal(g.stderr_text(), "3.14")
    expect_eq(len(t["stacks"]), 1, "one stack for the kept tensors")
    py = python_frames(t["stacks"][0]["frames"])
    with open(TORCH_CPU_SCRIPT) as f:
        src = f.read().splitlines()
    line = next(n for n, text in enumerate(src, 1) if "def keep_tensors" in text) + 1
    expect_eq(py[:2], [("keep_tensors", script, line),
                       ("main", script, next(n for n, text in enumerate(src, 1)
                                             if "kept = keep_tensors()" in text))],
              f"frames {py}")


PY_SPY = os.environ.get("GS_PY_SPY", "/var/cache/gpusnoop-tests/venv/bin/py-spy")


def check_agrees_with_py_spy(version):
    # the same spinning process, sampled by gpusnoop profile -p and dumped by py-spy (the
    # tests' venv, scripts/setup.sh): py-spy's stack is one of gpusnoop's, name for name and
    # line for line, with the file the process itself names
    w = ChrootWorkload(version, "busy", env={"GS_SPIN_SECONDS": "2"})
    out = os.path.join(tempfile.mkdtemp(), "spy.folded")
    g = Gpusnoop("profile", "-F", "199", "-p", str(w.pid), "-o", out)
    try:
        g.wait_stderr("Ctrl-C to stop")
        w.release()
        time.sleep(0.3)  # into spin(), which runs 2 s
        dump = subprocess.run([PY_SPY, "dump", "--full-filenames", "--pid", str(w.pid)],
                              capture_output=True, text=True, timeout=60)
        w.wait_line("done")
        expect_eq(g.stop(), 0, "gpusnoop status")
    finally:
        g.kill()
        w.finish()
    expect_eq(dump.returncode, 0, f"py-spy dump ({dump.stderr})")
    spy = [l.strip() for l in dump.stdout.splitlines() if l.startswith("    ")]
    spy = [l.split(" (")[0] + " (" + l.split(" (")[1] for l in spy]  # "fn (file:line)"
    assert spy and spy[-1].startswith("<module> ("), dump.stdout
    ours = set()
    with open(out) as f:
        for line in f:
            frames = line.rsplit(" ", 1)[0].split(";")
            ours.add(tuple(reversed([x for x in frames if x.endswith(")") and ".py:" in x])))
    assert tuple(spy) in ours, (spy, sorted(ours)[:10])


def check_daemon(version):
    # the daemon (every CUDA process): a 3.14/3.15 process held after loading the runtime
    # is probed and its interpreter found, so its one allocation names its Python callers
    from test_daemon import Daemon  # noqa: E402
    want = expected_frames(version)
    root, inner = sid()
    d = Daemon("-v")
    w = None
    try:
        w = ChrootWorkload(version, "malloc")
        # probed, then its interpreter looked up (the line -v adds): only then released
        d.g.wait_stderr(f"pid {w.pid}: CPython {version} in {root}/usr/bin/python{version}: "
                        "Python frames on")
        w.release()
        w.wait_line("done")
        status, out, err = d.ctl("leaks", str(w.pid), "--format", "json")
        expect_eq(status, 0, f"ctl leaks ({err})")
        frames = the_allocation(json.loads(out), w.pid)
        expect_eq(python_frames(frames), want, f"{version} frames from the daemon")
        no_refusal(d.g.stderr_text(), version)
    finally:
        if w:
            w.finish()
        d.stop()


def register():
    for version in VERSIONS:
        for name, fn in (("leaks_names_python_callers", check_leaks),
                         ("dwarf_stacks_merge_in_place_stripped", check_dwarf_in_place),
                         ("profile_folded_names_spin", check_profile_folded),
                         ("profile_pprof_names_spin", check_profile_pprof),
                         ("record_cpu_names_spin", check_record_cpu),
                         ("gil_released_thread_keeps_frames", check_gil_released),
                         ("agrees_with_py_spy", check_agrees_with_py_spy),
                         ("daemon_names_python_callers", check_daemon)):
            def run(version=version, fn=fn):
                fn(version)
            run.__name__ = name + "_" + version.replace(".", "_")
            run.__module__ = __name__
            test(run)


register()
