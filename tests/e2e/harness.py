# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""harness.py: run fixture workloads and gpusnoop as real processes, and a tiny test runner."""
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GPUSNOOP = os.path.join(ROOT, "gpusnoop")
FIXTURES = os.path.join(ROOT, ".output", "fixtures")
BIN = os.path.join(FIXTURES, "bin")
LIB = os.path.join(FIXTURES, "lib")
TIMEOUT = 30  # seconds any single wait may take before the test fails

MiB = 1 << 20
NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


class Skip(Exception):
    pass


class LineReader:
    """Reads a pipe line by line with a deadline, keeping everything read."""

    def __init__(self, stream):
        self.stream = stream
        self.lines = []
        self._buf = b""

    def _fill(self, timeout):
        ready, _, _ = select.select([self.stream], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.stream.fileno(), 65536)
        if not chunk:
            return None
        self._buf += chunk
        *complete, self._buf = self._buf.split(b"\n")
        self.lines.extend(l.decode(errors="replace") for l in complete)
        return True

    def wait_for(self, predicate, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            for line in self.lines[seen:]:
                if predicate(line):
                    return line
            seen = len(self.lines)
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"timed out waiting for {what}; got {self.lines!r}")
            if self._fill(left) is None:
                raise AssertionError(f"stream closed before {what}; got {self.lines!r}")

    def drain(self):
        while self._fill(0.05):
            pass
        return self.lines


class Workload:
    """A fixture workload speaking the ready/done protocol of tests/fixtures/workloads/sync.h."""

    def __init__(self, name, *args, hold=True, env=None, exe=None):
        cmd = [exe or os.path.join(BIN, name)] + (["--hold"] if hold else []) + list(args)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, **(env or {})))
        self.out = LineReader(self.proc.stdout)
        self.out.wait_for(lambda l: l.startswith("ready "), "workload ready")
        self.pid = self.proc.pid

    def release(self):
        os.kill(self.pid, signal.SIGUSR1)

    def wait_line(self, text):
        return self.out.wait_for(lambda l: l.startswith(text), f"workload line {text!r}")

    def finish(self):
        """Lets a held workload exit and returns its status."""
        try:
            self.release()
        except ProcessLookupError:
            pass
        return self.proc.wait(TIMEOUT)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class Gpusnoop:
    """gpusnoop running in the background; stderr is watched for its progress lines."""

    def __init__(self, *args, env=None):
        self.proc = subprocess.Popen([GPUSNOOP] + list(args), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE,
                                     env=dict(os.environ, **(env or {})))
        self.err = LineReader(self.proc.stderr)
        self.stdout = b""

    def wait_stderr(self, text, timeout=TIMEOUT):
        return self.err.wait_for(lambda l: text in l, f"gpusnoop stderr {text!r}", timeout)

    def wait_tracing(self):
        return self.wait_stderr("tracing CUDA allocations")

    def stop(self, sig=signal.SIGINT):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.wait()

    def wait(self):
        out, err = self.proc.communicate(timeout=TIMEOUT)
        self.stdout += out
        self.err.lines.extend(err.decode(errors="replace").splitlines())
        return self.proc.returncode

    def stderr_text(self):
        return "\n".join(self.err.lines)

    def reports(self):
        """Every JSON document gpusnoop wrote, one per line."""
        docs = []
        for line in self.stdout.decode().splitlines():
            if line.strip():
                docs.append(json.loads(line))
        return docs

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


def run_attached(w, *args, ready="tracing CUDA allocations", timeout=TIMEOUT):
    """The attach/release/stop sequence of tests on a running process: gpusnoop ARGS (-p w.pid,
    or -a) started while the workload w is held, w released once gpusnoop's stderr says
    `ready`, run to its 'done' line, gpusnoop stopped with SIGINT and its status checked to
    be 0. Both end on every path (w is let finish). Returns the stopped Gpusnoop, its stdout
    and stderr read."""
    g = Gpusnoop(*args)
    try:
        g.wait_stderr(ready, timeout)
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()})")
        return g
    finally:
        g.kill()
        w.finish()


def end_input(proc):
    """Closes a process's stdin and waits for it; kills it past TIMEOUT. Its status."""
    if proc.poll() is None:
        proc.stdin.close()
        try:
            proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def run_gpusnoop(*args, env=None, timeout=TIMEOUT):
    """Runs gpusnoop to completion; returns (status, stdout, stderr)."""
    p = subprocess.run([GPUSNOOP] + list(args), capture_output=True, timeout=timeout,
                       env=dict(os.environ, **(env or {})))
    return p.returncode, p.stdout.decode(), p.stderr.decode()


def process(report, pid):
    for p in report["processes"]:
        if p["pid"] == pid:
            return p
    raise AssertionError(f"pid {pid} not in report: {report!r}")


def stacks_by_function(proc):
    """{innermost symbol: totals} over the outstanding-allocation stacks of a process.

    One function with several call sites has several stacks; their totals add up here."""
    out = {}
    for s in proc["stacks"]:
        name = s["frames"][0]["symbol"] if s["frames"] else None
        t = out.setdefault(name, {"bytes": 0, "allocations": 0, "api": s["api"],
                                  "memory": s["memory"], "stacks": 0})
        t["bytes"] += s["bytes"]
        t["allocations"] += s["allocations"]
        t["stacks"] += 1
        assert t["api"] == s["api"], proc["stacks"]
    return out


def expect_eq(got, want, what):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def require_root():
    if os.geteuid() != 0:
        raise Skip("needs root for BPF")
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        raise Skip("kernel has no BTF")


def selected(fn, only):
    """True if the command line names fn: its name, its module, or a part of module.name."""
    if not only:
        return True
    full = f"{fn.__module__}.{fn.__name__}"
    return any(word in full for word in only)


def main():
    """Runs the selected tests with tempfile's directory set to one of the run's own.

    Tests make their scratch directories with tempfile.mkdtemp() and leave them (a module may
    share one across its tests); they all land in this directory, removed when the run ends,
    so a run leaves nothing behind in /tmp. It is root's and 0755, as /tmp is searchable, for
    the processes some tests run as nobody."""
    scratch = tempfile.mkdtemp(prefix="gs-e2e-")
    os.chmod(scratch, 0o755)
    tempfile.tempdir = scratch
    try:
        return run_tests(sys.argv[1:])
    finally:
        tempfile.tempdir = None
        shutil.rmtree(scratch, ignore_errors=True)


def run_tests(only):
    ci = os.environ.get("CI") == "true"
    passed = failed = skipped = 0
    for fn in TESTS:
        if not selected(fn, only):
            continue
        t0 = time.monotonic()
        try:
            require_root()
            fn()
        except Skip as e:
            if ci:
                print(f"FAIL {fn.__name__}: skipped in CI: {e}")
                failed += 1
            else:
                print(f"skip {fn.__name__}: {e}")
                skipped += 1
            continue
        except Exception:
            print(f"FAIL {fn.__name__}")
            traceback.print_exc(file=sys.stdout)
            failed += 1
            continue
        print(f"ok   {fn.__name__} ({time.monotonic() - t0:.1f}s)")
        passed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0
