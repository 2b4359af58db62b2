#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_top.py: `gpusnoop top` on a real terminal (tmux) and in --batch, against fixture workloads."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, FIXTURES, GPUSNOOP, TIMEOUT, Gpusnoop, LineReader, Skip, Workload,
                     expect_eq, main, run_gpusnoop, test)

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}
MiB = 1 << 20
GEMM = "gemm_kernel(float*, int)"
# the header of the full-screen table
TABLE = "    PID RANK COMM                MEM   ALLOC RESERVD TENSORS LAUNCH/s SYNC/s COPY/s OOMS"
BATCH_COLUMNS = ("    PID RANK COMM               MEM_BYTES  TORCH_ALLOC TORCH_RESERV  "
                 "TENSORS  LAUNCHES  LAUNCH/S SYNC_S/S  COPIES  COPY/S OOMS TOP_KERNEL")


class TmuxTop:
    """gpusnoop top in a tmux pane of its own server: keys in, screen out, how it ended."""

    def __init__(self, *args, cols=160, rows=40):
        if not shutil.which("tmux"):
            raise Skip("tmux is not installed (scripts/setup.sh test installs it)")
        self.dir = tempfile.mkdtemp()
        self.sock = f"gs-top-{os.getpid()}-{time.monotonic_ns()}"
        d = self.dir
        # the shell records the terminal's settings before and after, and gpusnoop's status;
        # gpusnoop's stderr goes to a file, where the test sees when it is ready
        script = (f'stty -g > {d}/before; echo $$ > {d}/shell; "$@" 2> {d}/stderr; '
                  f'echo $? > {d}/status; stty -g > {d}/after; exec sleep 600')
        self.tmux("new-session", "-d", "-x", str(cols), "-y", str(rows), "sh", "-c", script,
                  "sh", GPUSNOOP, "top", *args)
        self.wait_file("shell")

    def tmux(self, *args):
        return subprocess.run(["tmux", "-L", self.sock] + list(args), capture_output=True,
                              text=True, timeout=TIMEOUT, check=True).stdout

    def path(self, name):
        return os.path.join(self.dir, name)

    def wait_file(self, name, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while not (os.path.exists(self.path(name)) and os.path.getsize(self.path(name))):
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {name}; stderr: {self.stderr()!r}")
            time.sleep(0.05)
        with open(self.path(name)) as f:
            return f.read()

    def stderr(self):
        try:
            with open(self.path("stderr"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def wait_ready(self):
        deadline = time.monotonic() + TIMEOUT
        while "q or Ctrl-C to stop" not in self.stderr():
            if time.monotonic() > deadline or os.path.exists(self.path("status")):
                raise AssertionError(f"gpusnoop top not ready: {self.stderr()!r}")
            time.sleep(0.05)

    def gpusnoop_pid(self):
        shell = int(self.wait_file("shell"))
        with open(f"/proc/{shell}/task/{shell}/children") as f:
            return int(f.read().split()[0])

    def screen(self):
        return self.tmux("capture-pane", "-p").splitlines()

    def wait_screen(self, pred, what, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        lines = []
        while time.monotonic() < deadline:
            lines = self.screen()
            if pred(lines):
                return lines
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; screen:\n" + "\n".join(lines))

    def keys(self, *keys):
        self.tmux("send-keys", *keys)

    def pane(self, fmt):
        return self.tmux("display", "-p", fmt).strip()

    def ended(self):
        """gpusnoop's status, once the terminal is back as it was (else an AssertionError)."""
        status = int(self.wait_file("status"))
        after = self.wait_file("after")
        expect_eq(after, self.wait_file("before"), "terminal settings after gpusnoop top")
        expect_eq(self.pane("#{alternate_on}"), "0", "alternate screen left")
        expect_eq(self.pane("#{cursor_flag}"), "1", "cursor visible")
        return status

    def close(self):
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)


def row_of(lines, pid):
    for i, line in enumerate(lines):
        if line.split()[:1] == [str(pid)]:
            return i, line
    return None, None


def pids_in_order(lines, pids):
    found = sorted((row_of(lines, p)[0], p) for p in pids if row_of(lines, p)[0] is not None)
    return [p for _, p in found]


def header(lines):
    return next((l for l in lines if l.startswith("gpusnoop top:")), "")


@test
def top_shows_workload_numbers_sorts_and_details():
    """The rows' memory, launches and kernels are the workloads' own; keys sort and detail."""
    kernels = Workload("gs_kernels", env=NO_DRIVER)
    leaky = Workload("gs_leaky", env=NO_DRIVER)
    t = None
    try:
        t = TmuxTop("-d", "0.5", "-p", str(kernels.pid), "-p", str(leaky.pid))
        t.wait_ready()
        kernels.release()
        leaky.release()
        kernels.wait_line("done")
        leaky.wait_line("done")
        lines = t.wait_screen(lambda l: GEMM in (row_of(l, kernels.pid)[1] or "") and
                              " 280M " in (row_of(l, leaky.pid)[1] or ""), "both rows")
        assert any(l.startswith(TABLE) for l in lines), lines
        _, row = row_of(lines, kernels.pid)
        assert re.match(rf"\s*{kernels.pid}\s+-\s+gs_kernels\s+8\.0M\s+-\s+-\s+-\s", row), row
        assert row.rstrip().endswith(" 0 " + GEMM), row
        # sorted by memory: gs_leaky's 280 MiB first
        expect_eq(pids_in_order(lines, [kernels.pid, leaky.pid]), [leaky.pid, kernels.pid],
                  "rows by memory")
        t.keys("l")
        lines = t.wait_screen(lambda l: "sort launches," in header(l), "sort by launches")
        expect_eq(pids_in_order(lines, [kernels.pid, leaky.pid]), [kernels.pid, leaky.pid],
                  "rows by launches")
        t.keys("R")
        lines = t.wait_screen(lambda l: "(reversed)" in header(l), "reversed")
        expect_eq(pids_in_order(lines, [kernels.pid, leaky.pid]), [leaky.pid, kernels.pid],
                  "rows by launches, reversed")
        t.keys("R", "<")  # launches -> tensors: both none, by pid
        t.wait_screen(lambda l: "sort tensors," in header(l), "'<' moves the sort column")
        t.keys("c")
        lines = t.wait_screen(lambda l: "sort copies," in header(l), "sort by copies")
        expect_eq(pids_in_order(lines, [kernels.pid, leaky.pid]), [kernels.pid, leaky.pid],
                  "rows by copies")
        # the first row's detail: its allocating function and its kernels, exactly
        t.keys("1")
        lines = t.wait_screen(lambda l: any("Kernels:" in x for x in l), "detail pane")
        text = "\n".join(lines)
        assert f"pid {kernels.pid} (gs_kernels)" in text, text
        assert "CUDA memory 8.0M in 2 allocations" in text, text
        assert "launches 4010 (" in text and "syncs 102 (" in text, text
        assert "copies 14 (" in text, text
        expect_eq(len([l for l in lines if re.match(r"\s+4\.0M\s+1\s+cudaMalloc$", l)]), 2,
                  "two 4 MiB allocation stacks")
        assert re.search(r"^\s+setup\+0x[0-9a-f]+ \(.*/gs_kernels\)$", text, re.M), text
        for count, name in ((3000, GEMM), (1000, "relu_kernel(float*, int)"),
                            (10, "void scale<float>(float*, float, int)")):
            assert re.search(rf"^\s+{count}  {re.escape(name)}$", text, re.M), (name, text)
        t.keys("Escape")
        t.wait_screen(lambda l: any(x.startswith(TABLE) for x in l), "back to the table")
        # a narrower terminal: drawn again at once, every line cut to its width
        t.tmux("resize-window", "-x", "60")
        t.wait_screen(lambda l: TABLE[:60] in l and GEMM not in "".join(l), "a 60-column table",
                      timeout=5)
        t.keys("q")
        expect_eq(t.ended(), 0, "status after q")
    finally:
        if t:
            t.close()
        kernels.finish()
        leaky.finish()


def signal_ends_cleanly(sig, want_status):
    w = Workload("gs_kernels", env=NO_DRIVER)
    t = None
    try:
        t = TmuxTop("-d", "0.5", "-p", str(w.pid))
        t.wait_ready()
        t.wait_screen(lambda l: any(x.startswith(TABLE) for x in l), "the table")
        pid = t.gpusnoop_pid()
        # Ctrl-Z and SIGTSTP stop nothing: a stopped gpusnoop would hold the screen
        t.keys("C-z")
        os.kill(pid, signal.SIGTSTP)
        time.sleep(0.2)
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        assert state not in ("T", "t"), f"gpusnoop stopped ({state})"
        os.kill(pid, sig)
        expect_eq(t.ended(), want_status, f"status after {sig.name}")
        # the held workload was never stopped by gpusnoop, and is alive
        with open(f"/proc/{w.pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        assert state not in ("T", "t", "Z", "X"), f"workload {state}"
    finally:
        if t:
            t.close()
        w.kill()


@test
def top_sigterm_and_sigint_restore_the_terminal():
    signal_ends_cleanly(signal.SIGTERM, 0)
    signal_ends_cleanly(signal.SIGINT, 0)


@test
def top_target_exit_restores_the_terminal():
    w = Workload("gs_kernels", env=NO_DRIVER)
    t = None
    try:
        t = TmuxTop("-d", "0.5", "-p", str(w.pid))
        t.wait_ready()
        w.release()
        w.wait_line("done")
        t.wait_screen(lambda l: GEMM in (row_of(l, w.pid)[1] or ""), "the row")
        expect_eq(w.finish(), 0, "workload status")
        expect_eq(t.ended(), 0, "status after the target's exit")
    finally:
        if t:
            t.close()
        w.kill()


@test
def top_sighup_and_crash_restore_the_terminal():
    signal_ends_cleanly(signal.SIGHUP, 0)
    # a crash signal: the terminal first, then the default action (128 + SIGSEGV from sh)
    signal_ends_cleanly(signal.SIGSEGV, 128 + signal.SIGSEGV)


@test
def top_batch_prints_exact_lines_when_piped():
    """-b -n 2: two blocks, the workload's totals exact, the idle second interval at 0/s."""
    w = Workload("gs_kernels", env=dict(NO_DRIVER, RANK="3", LOCAL_RANK="1"))
    g = Gpusnoop("top", "-d", "4", "-n", "2", "-p", str(w.pid))  # stdout is a pipe: batch
    try:
        g.wait_stderr("q or Ctrl-C to stop")
        w.release()
        w.wait_line("done")
        expect_eq(g.wait(), 0, "gpusnoop top status")
        lines = g.stdout.decode().split("\n")
        expect_eq(len(lines), 9, f"two blocks of four lines: {lines!r}")
        expect_eq(lines[0], "gpusnoop top: iteration 1, 1 process, 0 events lost", "block 1")
        expect_eq(lines[1], BATCH_COLUMNS, "columns")
        first = lines[2].split(None, 13)
        expect_eq(first[:9], [str(w.pid), "3", "gs_kernels", str(8 * MiB), "-", "-", "-",
                              "4010", first[8]], "first block's row")
        assert float(first[8]) > 0, lines[2]  # the launches happened in that interval
        expect_eq((first[10], first[12], first[13]), ("14", "0", GEMM), "copies, OOMs, kernel")
        expect_eq(lines[3], "", "block end")
        expect_eq(lines[4], "gpusnoop top: iteration 2, 1 process, 0 events lost", "block 2")
        expect_eq(lines[5], BATCH_COLUMNS, "columns")
        expect_eq(lines[6], f"{w.pid:7d}    3 gs_kernels      {8 * MiB:12d}            -"
                            f"            -        -      4010       0.0    0.000      14"
                            f"     0.0    0 {GEMM}", "second block's row: nothing new")
        expect_eq(lines[7:], ["", ""], "end")
    finally:
        g.kill()
        w.finish()


@test
def top_batch_of_a_command_ends_with_its_last_figures():
    """-- CMD that ends before the first refresh: one last block with its totals (its memory
    went with it), then status 0."""
    status, out, err = run_gpusnoop("top", "-b", "-d", "20", "--", os.path.join(BIN, "gs_kernels"),
                                    env=NO_DRIVER)
    expect_eq(status, 0, f"status ({err})")
    lines = [l for l in out.split("\n") if not l.startswith(("ready ", "done"))]
    expect_eq(lines[0], "gpusnoop top: iteration 1, 1 process, 0 events lost", "header")
    expect_eq(lines[1], BATCH_COLUMNS, "columns")
    row = lines[2].split(None, 13)
    expect_eq((row[2], row[3], row[7], row[10], row[12], row[13]),
              ("gs_kernels", "0", "4010", "14", "0", GEMM), f"the row {lines[2]!r}")
    expect_eq(lines[3:], ["", ""], "one block")


@test
def top_batch_ends_quietly_when_its_reader_goes():
    """gpusnoop top -b | head -1: the closed pipe ends it with status 0, its target untouched."""
    w = Workload("gs_kernels", env=NO_DRIVER)
    try:
        p = subprocess.Popen(f"{GPUSNOOP} top -b -d 0.2 -p {w.pid} | head -1", shell=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, err = p.communicate(timeout=TIMEOUT)
        expect_eq(out.decode(), "gpusnoop top: iteration 1, 1 process, 0 events lost\n", "head")
        # the shell's status is head's; gpusnoop's own is checked through PIPESTATUS below
        p = subprocess.run(["bash", "-c", f"{GPUSNOOP} top -b -d 0.2 -p {w.pid} | head -1 "
                            "> /dev/null; echo ${PIPESTATUS[0]}"], capture_output=True,
                           timeout=TIMEOUT)
        expect_eq(p.stdout.decode(), "0\n", f"gpusnoop's status ({p.stderr.decode()!r})")
        assert "error" not in p.stderr.decode(), p.stderr.decode()
    finally:
        w.kill()


@test
def top_batch_shows_pytorch_memory_tensors_and_oom():
    """gs_torch at its end: 6 MiB + 3 activations allocated, 22 MiB reserved, 5 CUDA tensors
    (its CPU tensors are not GPU memory), one PyTorch OOM; its segments are the memory held."""
    w = Workload("gs_torch", env={"LD_LIBRARY_PATH": os.path.join(FIXTURES, "torch", "lib")})
    g = Gpusnoop("top", "-b", "-d", "0.5", "-p", str(w.pid))
    out = LineReader(g.proc.stdout)
    try:
        g.wait_stderr("q or Ctrl-C to stop")
        w.release()
        w.wait_line("oom CUDA out of memory")
        w.release()
        w.wait_line("done")
        allocated = 6 * MiB + 3 * 100352
        want = [str(w.pid), "-", "gs_torch", str(22 * MiB), str(allocated), str(22 * MiB), "5",
                "0", "0.0", "0.000", "0", "0.0", "1", "-"]
        out.wait_for(lambda l: l.split() == want, f"the final row {want}")
        expect_eq(g.stop(), 0, "gpusnoop top status")
    finally:
        g.kill()
        w.finish()


@test
def top_detail_of_a_pytorch_process_names_its_tensor_stacks():
    w = Workload("gs_torch", env={"LD_LIBRARY_PATH": os.path.join(FIXTURES, "torch", "lib")})
    t = None
    try:
        t = TmuxTop("-d", "0.5", "-p", str(w.pid))
        t.wait_ready()
        w.release()
        w.wait_line("oom CUDA out of memory")
        w.release()
        w.wait_line("done")
        lines = t.wait_screen(lambda l: re.search(r"\s22\.0M\s+6\.3M\s+22\.0M\s+5\s.*\s1 -$",
                                                  row_of(l, w.pid)[1] or ""), "the final row")
        t.keys("Enter")  # the selected (first) row
        lines = t.wait_screen(lambda l: any("Kernels:" in x for x in l), "detail pane")
        text = "\n".join(lines)
        assert ("CUDA memory 22.0M: 0B in 0 allocations, 22.0M reserved by PyTorch; "
                "PyTorch allocated 6.3M in 5 tensors") in text, text
        assert "OOMs 1" in text and "CUDA allocations" not in text, text
        assert re.search(r"^\s+6\.0M\s+2\s+cuda:0$", text, re.M), text
        assert re.search(r"^\s+keep_weights\(\)\+0x[0-9a-f]+ \(.*/gs_torch\)$", text, re.M), text
        t.keys("q")
        expect_eq(t.ended(), 0, "status after q")
    finally:
        if t:
            t.close()
        w.finish()


if __name__ == "__main__":
    sys.exit(main())
