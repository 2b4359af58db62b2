#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_stops.py: gpusnoop stops a followed tree's processes to probe them; none is ever left stopped."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, TIMEOUT, Gpusnoop, expect_eq, main, run_gpusnoop, test

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}
LEAKY = os.path.join(BIN, "gs_leaky")
OTHER_UID = 4321
# a library no Python loads by itself: each dlopen and dlclose changes the link map
DLOPEN_LOOP = ("import _ctypes, sys\n"
               "n = 0\n"
               "while True:\n"
               "    _ctypes.dlclose(_ctypes.dlopen('libdl.so.2', 2))\n"
               "    n += 1\n"
               "    open(sys.argv[1], 'w').write(str(n))\n")


def state(pid):
    """The state letter of /proc/PID/stat, None once gone (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    st = s[s.rindex(")") + 2]
    return None if st in "ZX" else st


def descendants(root):
    """root and every process below it."""
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                s = f.read()
        except OSError:
            continue
        ppid = int(s[s.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def wait_until(pred, what, timeout=TIMEOUT):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def read_int(path):
    try:
        with open(path) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def kill_tree(root):
    """Ends a test's tree, stopped or not (cleanup of a failed run)."""
    for p in descendants(root):
        for sig in (signal.SIGKILL, signal.SIGCONT):
            try:
                os.kill(p, sig)
            except OSError:
                pass


def resume(pid):
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass


def poke(fifo, timeout=TIMEOUT):
    """Writes a line into fifo once its reader is there; fails past timeout, never blocks."""
    end = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError:
            if time.monotonic() > end:
                raise AssertionError(f"nobody reads {fifo}")
            time.sleep(0.05)
    os.write(fd, b"go\n")
    os.close(fd)


def stopped_left(root):
    """The processes of root's tree in state T now and still 0.5 s later."""
    first = [p for p in descendants(root) if state(p) == "T"]
    time.sleep(0.5)
    return [p for p in first if state(p) == "T"]


@test
def stops_buffer_full_at_exec_leaves_nothing_stopped():
    # gpusnoop is paused while a flood fills a 1 MiB ring buffer, then the tree runs 300
    # execs: a stop whose record finds no room must not happen (it was sent, and never
    # answered: the tree waited forever on a /bin/true in state T)
    d = tempfile.mkdtemp()
    fifo, marks = os.path.join(d, "go"), os.path.join(d, "marks")
    os.mkfifo(fifo)
    script = (f"echo $$ > {marks}.root; GS_CHURN=100000000 {LEAKY} > {marks}.leaky & "
              f"read x < {fifo}; for i in $(seq 300); do /bin/true; done; "
              f"echo done > {marks}; kill $!; wait")
    g = Gpusnoop("leaks", "--ringbuf", "1", "--format", "json", "--", "bash", "-c", script,
                 env=NO_DRIVER)
    root = 0
    try:
        wait_until(lambda: "ready" in open(f"{marks}.leaky").read()
                   if os.path.exists(f"{marks}.leaky") else False, "the flood")
        root = read_int(f"{marks}.root")
        os.kill(g.proc.pid, signal.SIGSTOP)
        time.sleep(1)  # the flood fills the buffer
        poke(fifo)
        wait_until(lambda: os.path.exists(marks), "the 300 execs, gpusnoop paused", 15)
        os.kill(g.proc.pid, signal.SIGCONT)
        expect_eq(g.wait(), 0, "gpusnoop status")
        report = g.reports()[-1]
        assert report["lost"]["ringbuf_full"] > 0, report["lost"]
        assert report["lost"]["stops_skipped"] > 0, report["lost"]
        expect_eq([p for p in descendants(root) if state(p)], [], "the tree after gpusnoop")
    finally:
        resume(g.proc.pid)
        if root:  # first: a stopped process holding gpusnoop's pipes would hang g.kill()
            kill_tree(root)
        g.kill()


def dlopen_tree(d):
    """gpusnoop leaks -- python running DLOPEN_LOOP; its iterations are counted in d/count."""
    count = os.path.join(d, "count")
    g = Gpusnoop("leaks", "--", sys.executable, "-c", DLOPEN_LOOP, count)
    wait_until(lambda: read_int(count) > 3, "the dlopen loop")
    return g, count


@test
def stops_sigkill_of_gpusnoop_resumes_what_it_stopped():
    d = tempfile.mkdtemp()
    g, count = dlopen_tree(d)
    py = g.proc.pid
    kids = [p for p in descendants(g.proc.pid) if p != g.proc.pid and state(p) is not None]
    try:
        py = [p for p in kids if open(f"/proc/{p}/cmdline", "rb").read().startswith(
            sys.executable.encode())][0]
        # paused, gpusnoop answers nothing: the loop stops at its next link-map change
        os.kill(g.proc.pid, signal.SIGSTOP)
        wait_until(lambda: state(py) == "T", "the loop stopped by gpusnoop")
        g.proc.kill()
        g.proc.wait()
        before = read_int(count)
        wait_until(lambda: read_int(count) > before + 2, "the loop running again", 5)
        expect_eq(stopped_left(py), [], "processes left stopped")
    finally:
        kill_tree(py)
        g.kill()


@test
def stops_foreign_sigstop_is_kept():
    # someone else stops a process while gpusnoop has it stopped: gpusnoop's answer must not
    # end their stop
    d = tempfile.mkdtemp()
    g, count = dlopen_tree(d)
    py = 0
    try:
        py = [p for p in descendants(g.proc.pid) if p != g.proc.pid and state(p) and open(
            f"/proc/{p}/cmdline", "rb").read().startswith(sys.executable.encode())][0]
        os.kill(g.proc.pid, signal.SIGSTOP)
        wait_until(lambda: state(py) == "T", "the loop stopped by gpusnoop")
        os.kill(py, signal.SIGSTOP)  # the administrator's
        before = read_int(count)
        os.kill(g.proc.pid, signal.SIGCONT)
        time.sleep(1.5)  # gpusnoop answers at once, and sweeps each 0.5 s
        expect_eq((state(py), read_int(count)), ("T", before), "the loop, stopped by another")
        os.kill(py, signal.SIGCONT)
        wait_until(lambda: read_int(count) > before + 2, "the loop running again", 5)
        os.kill(py, signal.SIGKILL)
        g.wait()
    finally:
        if py:
            kill_tree(py)
        g.kill()


def spawn_with_pid(pid, argv):
    """argv started with pid (through ns_last_pid), or None if other forks keep taking it."""
    for _ in range(200):
        with open("/proc/sys/kernel/ns_last_pid", "w") as f:
            f.write(str(pid - 1))
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if p.pid == pid:
            return p
        p.wait()
    return None


@test
def stops_reused_pid_of_another_user_is_not_stopped():
    # a followed child exits while gpusnoop is paused; another user's process that gets its
    # pid must not be taken for it (it was stopped at exec, and reported as the tree's)
    d = tempfile.mkdtemp()
    fifo, marks = os.path.join(d, "go"), os.path.join(d, "child")
    os.mkfifo(fifo)
    script = f"sh -c 'echo $$ > {marks}; read x < {fifo}'; sleep 30"
    g = Gpusnoop("leaks", "--", "bash", "-c", script)
    root = 0
    try:
        wait_until(lambda: read_int(marks), "the child")
        child = read_int(marks)
        root = int(open(f"/proc/{child}/stat").read().rsplit(")", 1)[1].split()[1])
        os.kill(g.proc.pid, signal.SIGSTOP)
        poke(fifo)
        wait_until(lambda: state(child) is None, "the child's exit")
        time.sleep(0.2)  # its parent reaps it: the pid is free
        other = ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
                 "/bin/true"]
        p = spawn_with_pid(child, other)
        assert p is not None, f"pid {child} was never free for another process"
        try:
            expect_eq(p.wait(5), 0, "another user's /bin/true with a dead target's pid")
        except subprocess.TimeoutExpired:
            raise AssertionError(f"pid {child} of uid {OTHER_UID}: state {state(child)}, "
                                 "stopped as the old target")
        finally:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                os.kill(p.pid, signal.SIGCONT)
                p.wait()
    finally:
        resume(g.proc.pid)
        if root:  # first: a stopped process holding gpusnoop's pipes would hang g.kill()
            kill_tree(root)
        g.kill()


@test
def stops_interactive_shell_is_refused_in_one_line():
    p = subprocess.run(["./gpusnoop", "leaks", "--", "bash", "-i"], capture_output=True,
                       stdin=subprocess.DEVNULL, timeout=TIMEOUT,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                           os.path.abspath(__file__)))))
    lines = p.stderr.decode().strip().splitlines()
    assert p.returncode != 0, p
    expect_eq(len(lines), 1, "one line of error")
    assert "interactive shell" in lines[0] and "job control" in lines[0], lines


@test
def stops_probed_image_is_not_stopped_again():
    # a shell running /bin/true 300 times: each exec of an image probed already (and its
    # loader's start-up) goes on without a stop; 3 stops each before
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", "bash", "-c",
                                    f"for i in $(seq 300); do /bin/true; done; {LEAKY}",
                                    env=NO_DRIVER)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    report = [l for l in out.splitlines() if l.startswith("{")]
    stops = json.loads(report[-1])["process_stops"]
    assert 0 < stops < 100, f"{stops} stops for 300 execs of /bin/true"


if __name__ == "__main__":
    sys.exit(main())
