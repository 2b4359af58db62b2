#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_habits.py: issue 28's conveniences and `gpusnoop stats`: pid lists, --comm/--cgroup,
'everything was freed', output paths checked first, no file left on failure, binary formats
kept off terminals, usage errors exit 64, --inject suggested, command_line, completion, progress
lines on terminals only, and stats numbers equal to record's own summary."""
import gzip
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, GPUSNOOP, LIB, MiB, ROOT, TIMEOUT, Gpusnoop, Skip, Workload,
                     expect_eq, main, run_gpusnoop, test)

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}
INJECTION = os.path.join(ROOT, "libgpusnoop-cupti.so")
COMPLETION = os.path.join(ROOT, "scripts", "completion", "gpusnoop.bash")
LOAD_TIMEOUT = 120  # record -e gpu loads several BPF objects: slow on a busy 2-core machine


def end(w):
    """Lets a workload exit (released or not: a failed test must leave none held)."""
    try:
        w.finish()
    except subprocess.TimeoutExpired:
        pass
    finally:
        w.kill()


def final_report(g):
    reports = g.reports()
    expect_eq([r["report"] for r in reports][-1:], ["final"], "last report")
    return reports[-1]


def pids_of(report):
    return {p["pid"] for p in report["processes"]}


@test
def pid_list_with_commas_and_repeats():
    a = Workload("gs_leaky", env=NO_DRIVER)
    b = Workload("gs_leaky", env=NO_DRIVER)
    c = Workload("gs_leaky", env=NO_DRIVER)
    # what `-p "$(pgrep -f x)"` passes for several matches: newline-separated
    g = Gpusnoop("leaks", "-p", f"{a.pid},{b.pid}", "-p", f"{c.pid}\n{a.pid}", "--format",
                 "json")
    try:
        g.wait_tracing()
        for w in (a, b, c):
            w.release()
            w.wait_line("done")
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()})")
        expect_eq(pids_of(final_report(g)), {a.pid, b.pid, c.pid}, "processes reported")
    finally:
        g.kill()
        for w in (a, b, c):
            end(w)
    status, _, err = run_gpusnoop("leaks", "-p", "1,x", "-d", "1")
    expect_eq(status, 64, f"a bad list is a usage error ({err})")
    assert "invalid pid list '1,x'" in err, err


@test
def usage_errors_exit_64_in_every_subcommand():
    cases = [
        ["leaks"], ["leaks", "-p", "0"], ["leaks", "-a", "-p", "1"], ["leaks", "--bogus"],
        ["leaks", "--comm", "(", "-d", "1"],
        ["record"], ["record", "-a", "-F", "99", "-d", "1"], ["record", "-e", "nosuch"],
        ["record", "--inject", "-p", "1", "-d", "1"],
        ["profile"], ["profile", "-a", "-F", "0", "-d", "1"], ["profile", "-p", "abc"],
        ["top"], ["top", "-a", "-p", "1"], ["top", "--batch", "-a", "-o", "x"],
        ["daemon", "--bogus"], ["ctl"], ["stitch"], ["stats"], ["stats", "-f", "xml", "t"],
        ["check", "--bogus"], ["nosuchcommand"], [],
    ]
    for args in cases:
        status, out, err = run_gpusnoop(*args)
        expect_eq(status, 64, f"gpusnoop {' '.join(args)} ({err.strip()})")
        expect_eq(out, "", f"stdout of {args}")


@test
def record_command_line_is_argv_as_given():
    out = os.path.join(tempfile.mkdtemp(), "t.json")
    cmd = ["record", "-e", "cuda-sync", "-o", out, "--", os.path.join(BIN, "gs_kernels")]
    status, _, err = run_gpusnoop(*cmd)
    expect_eq(status, 0, f"record ({err})")
    with open(out) as f:
        md = json.load(f)["metadata"]
    expect_eq(md["command_line"], ["gpusnoop"] + cmd, "command_line")


@test
def leaks_says_everything_allocated_was_freed():
    for fmt in ("text", "json"):
        w = Workload("gs_leaky", env=dict(NO_DRIVER, GS_FREE_ALL="1", GS_CHURN="100"))
        g = Gpusnoop("leaks", "-p", str(w.pid), "--format", fmt)
        try:
            g.wait_tracing()
            w.release()
            w.wait_line("done")
            expect_eq(g.stop(), 0, f"status ({g.stderr_text()})")
            # 4 weights + 100 churned + 3 activations: 256 + 100 + 24 MiB
            if fmt == "json":
                r = final_report(g)
                expect_eq((r["processes"], r["allocations_seen"], r["bytes_allocated_seen"]),
                          ([], 107, 380 * MiB), "report")
            else:
                text = g.stdout.decode()
                assert "no outstanding CUDA allocations: everything allocated was freed " \
                       "(107 allocations, 380.0 MiB)\n" in text, text
                assert "no CUDA allocations seen" not in text, text
        finally:
            g.kill()
            end(w)
    # and nothing seen at all says so
    w = Workload("gs_leaky", env=NO_DRIVER)
    try:
        status, out, err = run_gpusnoop("leaks", "-p", str(w.pid), "-d", "0.5")
        expect_eq(status, 0, f"status ({err})")
        assert "no CUDA allocations seen\n" in out, out
    finally:
        w.kill()


@test
def profile_missing_output_directory_fails_before_the_run():
    w = Workload("gs_leaky", env=NO_DRIVER)
    try:
        t0 = time.monotonic()
        status, out, err = run_gpusnoop("profile", "-p", str(w.pid), "-d", "60", "-o",
                                        "/nonexistent-gs-dir/sub/x.folded", timeout=40)
        expect_eq(status, 1, "status")
        expect_eq(err.strip().splitlines(),
                  ["gpusnoop: error: /nonexistent-gs-dir/sub/x.folded: No such file or "
                   "directory"], "one line")
        assert time.monotonic() - t0 < 40, "failed only after the run"
    finally:
        w.kill()


@test
def no_output_file_left_when_no_target_uses_cuda():
    d = tempfile.mkdtemp()
    for cmd in (["record", "-o", os.path.join(d, "t.json")],
                ["record", "-o", os.path.join(d, "t.json.gz")],
                ["leaks", "-o", os.path.join(d, "l.txt")]):
        status, _, err = run_gpusnoop(*cmd, "--", "true")
        expect_eq(status, 1, f"{cmd} status ({err})")
        assert "no target loaded a CUDA library" in err, err
        expect_eq(os.listdir(d), [], f"files left by {cmd}")
    # an existing file stays as it was
    keep = os.path.join(d, "keep.json")
    with open(keep, "w") as f:
        f.write("before\n")
    status, _, _ = run_gpusnoop("record", "-o", keep, "--", "true")
    expect_eq(status, 1, "status")
    expect_eq(open(keep).read(), "before\n", "the earlier file")
    expect_eq(os.listdir(d), ["keep.json"], "no temporary")


def run_on_pty(args, pty_stdout=False, pty_stderr=False, seconds=None, timeout=TIMEOUT):
    """Runs gpusnoop with stdout and/or stderr on a pseudo-terminal; returns (status, stdout
    bytes (of a pipe), terminal bytes, stderr bytes (of a pipe)). With seconds, SIGINT then."""
    master, slave = pty.openpty()
    p = subprocess.Popen([GPUSNOOP] + args, stdin=subprocess.DEVNULL,
                         stdout=slave if pty_stdout else subprocess.PIPE,
                         stderr=slave if pty_stderr else subprocess.PIPE)
    os.close(slave)
    term = b""
    deadline = time.monotonic() + (seconds if seconds is not None else timeout)
    open_end = pty_stdout or pty_stderr
    while time.monotonic() < deadline and p.poll() is None:
        r, _, _ = select.select([master] if open_end else [], [], [], 0.1)
        if r:
            try:
                term += os.read(master, 65536)
            except OSError:  # no process holds the terminal any more
                open_end = False
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=timeout)
    while True:
        r, _, _ = select.select([master], [], [], 0.1)
        if not r:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        term += chunk
    os.close(master)
    return p.returncode, out or b"", term, err or b""


@test
def pprof_refused_on_a_terminal_without_output():
    w = Workload("gs_leaky", env=NO_DRIVER)
    try:
        status, _, term, err = run_on_pty(["profile", "--format", "pprof", "-p", str(w.pid),
                                           "-d", "1"], pty_stdout=True)
        expect_eq(status, 64, f"status ({err!r})")
        assert b"pprof is binary: not written to a terminal" in err, err
        expect_eq(term, b"", "nothing on the terminal")
        # a pipe takes it, gzip as ever
        status, out, _, err = run_on_pty(["profile", "--format", "pprof", "-p", str(w.pid),
                                          "-d", "1"])
        expect_eq(status, 0, f"status into a pipe ({err!r})")
        expect_eq(out[:2], b"\x1f\x8b", "gzip into a pipe")
    finally:
        w.kill()


@test
def progress_lines_on_a_terminal_never_into_a_pipe():
    w = Workload("gs_leaky", env=NO_DRIVER)
    try:
        _, _, term, _ = run_on_pty(["leaks", "-p", str(w.pid), "--format", "json"],
                                   pty_stderr=True, seconds=4)
        assert re.search(rb"\r\x1b\[Ktracing: \d+ s, \d+ events, [\d.]+ \w*B outstanding in \d+ "
                         rb"processes, \d+ dropped", term), term
        _, _, term, _ = run_on_pty(["profile", "-p", str(w.pid), "-o", "/dev/null"],
                                   pty_stderr=True, seconds=4)
        assert re.search(rb"\r\x1b\[Kprofiling: \d+ s, \d+ samples in \d+ stacks, \d+ lost", term), \
            term
        for cmd in (["leaks", "-p", str(w.pid)], ["profile", "-p", str(w.pid), "-o",
                                                   "/dev/null"]):
            status, _, _, err = run_on_pty(cmd, seconds=4)
            expect_eq(status, 0, f"{cmd} status ({err!r})")
            assert b"\r" not in err and b"tracing:" not in err and b"profiling:" not in err, err
    finally:
        w.kill()


@test
def record_gpu_by_pid_suggests_inject():
    w = Workload("gs_kernels")
    out = os.path.join(tempfile.mkdtemp(), "t.json")
    g = Gpusnoop("record", "-e", "gpu", "-p", str(w.pid), "-o", out)
    try:
        g.wait_stderr("recording", timeout=LOAD_TIMEOUT)
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(), 0, f"status ({g.stderr_text()})")
        want = (f"gpusnoop: warning: -e gpu: pid {w.pid} was started without "
                "CUDA_INJECTION64_PATH: no GPU activity will come from it; add --inject to load "
                "the injection library into it")
        assert want in g.err.lines, g.stderr_text()
    finally:
        g.kill()
        end(w)


def bash_complete(line, cwd):
    """What an interactive bash with the completion loaded shows after `line<TAB>`."""
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.environ["PATH"] = ROOT + ":" + os.environ["PATH"]
        os.environ["INPUTRC"] = "/dev/null"
        os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])

    def read(seconds):
        out, end = b"", time.monotonic() + seconds
        while time.monotonic() < end:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                try:
                    out += os.read(fd, 4096)
                except OSError:
                    break
        return out
    try:
        os.write(fd, f"PS1='$ '; source {COMPLETION}; echo READY\n".encode())
        t0 = time.monotonic()
        got = b""
        while b"READY\r\n" not in got and time.monotonic() - t0 < 10:
            got += read(0.3)
        os.write(fd, line.encode() + b"\t")
        return read(2.0).decode(errors="replace")
    finally:
        os.write(fd, b"\x15exit\n")
        time.sleep(0.2)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        os.close(fd)


@test
def completion_ends_directories_with_a_slash():
    d = tempfile.mkdtemp()
    os.mkdir(os.path.join(d, "traces"))
    for line, want in (("gpusnoop record -o tra", "gpusnoop record -o traces/"),
                       ("gpusnoop stats tra", "gpusnoop stats traces/"),
                       ("gpusnoop stitch tra", "gpusnoop stitch traces/")):
        shown = bash_complete(line, d)
        assert shown.rstrip("\x07").endswith(want), (line, shown)
    # setup installs the package that loads completions
    text = open(os.path.join(ROOT, "scripts", "setup.sh")).read()
    build = text[text.index("BUILD_PACKAGES=("):text.index("TEST_PACKAGES=(")]
    assert re.search(r"^\s*bash-completion\b", build, re.M), build


def cgroup_dir(name):
    """A new cgroup (v2 where mounted, else v1's pids hierarchy) below our own; its path."""
    v2 = v1 = None
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        kind = fields[fields.index("-") + 1]
        if kind == "cgroup2" and not v2:
            v2 = fields[4]
        elif kind == "cgroup" and "pids" in fields[-1].split(","):
            v1 = fields[4]
    if not v2 and not v1:
        raise Skip("no cgroup hierarchy mounted")
    own = [l.rstrip("\n").split(":", 2) for l in open("/proc/self/cgroup")]
    rel = next(p for i, c, p in own if (c == "" if v2 else "pids" in c.split(",")))
    path = os.path.join(v2 or v1, rel.lstrip("/"), name)
    os.mkdir(path)
    return path


def filtered_report(args, cg):
    """Three held workloads (one gs_leaky in cg, one outside, a gs_threads) allocating under
    `leaks ARGS`: (the final report's pids, {name: pid})."""
    ws = {"inside": Workload("gs_leaky", env=NO_DRIVER),
          "outside": Workload("gs_leaky", env=NO_DRIVER),
          "threads": Workload("gs_threads", env=NO_DRIVER)}
    with open(os.path.join(cg, "cgroup.procs"), "w") as f:
        f.write(str(ws["inside"].pid))
    pids = {k: w.pid for k, w in ws.items()}
    g = Gpusnoop("leaks", "--format", "json",
                 *[a.format(**pids) for a in args])
    try:
        g.wait_tracing()
        for w in ws.values():
            w.release()
        for w in ws.values():
            w.wait_line("done")
        expect_eq(g.stop(), 0, f"{args} status ({g.stderr_text()})")
        return pids_of(final_report(g)), pids, final_report(g)
    finally:
        g.kill()
        for w in ws.values():
            end(w)


@test
def comm_and_cgroup_filters_pick_their_processes():
    cg = cgroup_dir(f"gs-habits-{os.getpid()}-{time.monotonic_ns()}")
    try:
        # --comm alone: every process (-a), those started later too, matching ones only
        got, p, report = filtered_report(["--comm", "^gs_leaky$"], cg)
        assert {p["inside"], p["outside"]} <= got and p["threads"] not in got, (got, p)
        for proc in report["processes"]:
            expect_eq(proc["comm"], "gs_leaky", "only matching processes")
        got, p, _ = filtered_report(["--cgroup", cg], cg)
        expect_eq(got, {p["inside"]}, "the cgroup's process alone")
        got, p, _ = filtered_report(["--comm", "^gs_thr", "-p", "{outside},{threads}"], cg)
        expect_eq(got, {p["threads"]}, "--comm narrows -p")
    finally:
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)


@test
def record_comm_keeps_the_matching_processes_only():
    leaky = Workload("gs_leaky", env=NO_DRIVER)
    threads = Workload("gs_threads", env=NO_DRIVER)
    out = os.path.join(tempfile.mkdtemp(), "t.json")
    g = Gpusnoop("record", "-e", "cuda-mem", "--comm", "^gs_threads$", "-o", out)
    try:
        g.wait_stderr("recording every process", timeout=LOAD_TIMEOUT)
        for w in (leaky, threads):
            w.release()
        for w in (leaky, threads):
            w.wait_line("done")
        expect_eq(g.stop(), 0, f"status ({g.stderr_text()})")
        with open(out) as f:
            trace = json.load(f)
        pids = {e["pid"] for e in trace["traceEvents"]
                if e["ph"] == "X" and e.get("cat") == "cuda_runtime"}
        assert threads.pid in pids and leaky.pid not in pids, (pids, threads.pid, leaky.pid)
        names = {e["args"]["name"] for e in trace["traceEvents"]
                 if e["ph"] == "M" and e["name"] == "process_name" and e["pid"] in pids}
        expect_eq(names, {"gs_threads"}, "processes in the trace")
    finally:
        g.kill()
        for w in (leaky, threads):
            end(w)


@test
def profile_comm_keeps_the_matching_processes_only():
    from test_profile import parse_folded
    w = Workload("gs_burn", env={"GS_BURN_ROUNDS": "1000000"})
    out = os.path.join(tempfile.mkdtemp(), "p.folded")
    g = Gpusnoop("profile", "--comm", "^gs_bur", "-o", out)
    try:
        g.wait_stderr("profiling every process")
        w.release()
        time.sleep(2)  # a few hundred samples of a machine that runs other things too
        expect_eq(g.stop(signal.SIGINT), 0, f"status ({g.stderr_text()})")
        with open(out) as f:
            stacks = parse_folded(f.read())
        expect_eq({frames[0] for frames, _ in stacks}, {"gs_burn"}, "comms sampled")
    finally:
        g.kill()
        w.kill()


def record_with_summary(events, workload, env=None):
    out = os.path.join(tempfile.mkdtemp(), "t.json.gz")
    status, _, err = run_gpusnoop("record", "-e", events, "-o", out, "--",
                                  os.path.join(BIN, workload), env=env, timeout=LOAD_TIMEOUT)
    expect_eq(status, 0, f"record status ({err})")
    lines = err.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith("gpusnoop record: "))
    # the engine's lines, then record's own (facts the trace has no rows of)
    own = ("  WARNING", "  torch-mem:", "  GPU records:", "  NVTX")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith(own)),
               len(lines))
    return out, lines[start + 1:end]


@test
def stats_prints_the_numbers_of_records_summary():
    if not os.path.exists(INJECTION):
        raise Skip(f"{INJECTION} not built (no CUPTI headers at build time)")
    out, summary = record_with_summary("gpu,cuda-launch,cuda-sync,cuda-memcpy,cuda-mem",
                                       "gs_gpu", env={"LD_LIBRARY_PATH": LIB})
    assert any("GPU kernels by device time" in l for l in summary), summary
    status, text, err = run_gpusnoop("stats", "--summary", out)
    expect_eq(status, 0, f"stats status ({err})")
    expect_eq(text.splitlines(), summary, "stats --summary vs record's summary")
    # stitched with a PyTorch profiler trace (its own CUDA rows): the gpusnoop part counts
    stitched = out + ".stitched.json"
    status, _, err = run_gpusnoop("stitch", out, os.path.join(ROOT, "tests", "fixtures", "kineto",
                                                              "train_step.pt.trace.json"),
                                  "-o", stitched)
    expect_eq(status, 0, f"stitch ({err})")
    status, text, err = run_gpusnoop("stats", "--summary", stitched)
    expect_eq(text.splitlines(), summary, "stats --summary of the stitched trace")
    # syncs, by process, named as in the trace
    out, summary = record_with_summary("cuda-launch,cuda-sync,cuda-memcpy", "gs_kernels")
    assert any(l.startswith("  sync: pid ") for l in summary), summary
    status, text, err = run_gpusnoop("stats", "--summary", out)
    expect_eq(text.splitlines(), summary, "stats --summary vs record's summary (syncs)")
    # the tables: the API calls record saw, exactly
    status, text, err = run_gpusnoop("stats", "-f", "json", out)
    expect_eq(status, 0, f"stats -f json ({err})")
    tables = json.loads(text)["tables"]
    with gzip.open(out, "rt") as f:
        rows = [e for e in json.load(f)["traceEvents"]
                if e["ph"] == "X" and e.get("cat") in ("cuda_runtime", "cuda_driver")]
    want = {}
    for e in rows:
        want[e["name"]] = want.get(e["name"], 0) + 1
    expect_eq({r["name"]: r["count"] for r in tables["cuda_api"]["rows"]}, want,
              "API calls by name")


@test
def stats_counts_the_nvtx_ranges_record_wrote():
    import test_nvtx
    path, _ = test_nvtx.c_recording()
    trace = test_nvtx.load(path)
    want = {}
    for e in test_nvtx.nvtx_rows(trace, "X"):
        want[e["name"]] = want.get(e["name"], 0) + 1
    for name in test_nvtx.async_pairs(trace):
        want[name] = want.get(name, 0) + 1
    status, text, err = run_gpusnoop("stats", "-f", "json", path)
    expect_eq(status, 0, f"stats ({err})")
    got = {}
    for r in json.loads(text)["tables"]["nvtx"]["rows"]:
        got[r["name"]] = got.get(r["name"], 0) + r["count"]
    expect_eq(got, want, "NVTX ranges by name")
    assert test_nvtx.C_RANGES.items() <= got.items(), got


@test
def stats_of_rows_csv_json_text_and_rank_directories():
    d = tempfile.mkdtemp()
    rows = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 0,
             "args": {"name": "train (rank 1)"}}]
    for i in range(10):
        rows.append({"ph": "X", "name": "forward" if i % 2 else "backward", "cat": "nvtx",
                     "pid": 7, "tid": 7, "ts": 100 * i, "dur": 10 + i})
        rows.append({"ph": "X", "name": "cudaMemcpyAsync", "cat": "cuda_runtime", "pid": 7,
                     "tid": 7, "ts": 100 * i + 1, "dur": 2,
                     "args": {"bytes": 4096 * (i + 1), "kind": "HtoD"}})
    # a start/end range (async, ended on another thread), and one never ended
    rows += [{"ph": "b", "name": "epoch", "cat": "nvtx", "pid": 7, "tid": 7, "ts": 0, "id": 1},
             {"ph": "e", "cat": "nvtx", "pid": 7, "tid": 8, "ts": 2500, "id": 1},
             {"ph": "b", "name": "open", "cat": "nvtx", "pid": 7, "tid": 7, "ts": 5, "id": 2}]
    trace = {"traceEvents": rows, "metadata": {"tool": "gpusnoop"}}
    with open(os.path.join(d, "rank-0.json"), "w") as f:
        json.dump(trace, f)
    with gzip.open(os.path.join(d, "rank-1.json.gz"), "wt") as f:
        json.dump(trace, f)
    status, text, err = run_gpusnoop("stats", "-f", "json", os.path.join(d, "rank-0.json"))
    expect_eq(status, 0, f"status ({err})")
    nvtx = {r["name"]: r for r in json.loads(text)["tables"]["nvtx"]["rows"]}
    expect_eq((nvtx["forward"]["count"], nvtx["forward"]["total"], nvtx["forward"]["label"]),
              (5, (11 + 13 + 15 + 17 + 19) * 1000, "train (rank 1)"), "forward ranges")
    expect_eq((nvtx["backward"]["count"], nvtx["backward"]["total"]),
              (5, (10 + 12 + 14 + 16 + 18) * 1000), "backward ranges")
    expect_eq((nvtx["epoch"]["count"], nvtx["epoch"]["total"], "open" in nvtx),
              (1, 2500 * 1000, False), "the async range")
    expect_eq(json.loads(text)["nvtx_unended"], 1, "ranges never ended")
    status, text, err = run_gpusnoop("stats", "-f", "csv", d)
    expect_eq(status, 0, f"status of the directory ({err})")
    lines = text.splitlines()
    expect_eq(lines[0], "table,by,id,label,name,unit,count,total,mean,p50,p99,max,failed",
              "CSV header")
    copies = [l for l in lines if l.startswith("copies,")]
    expect_eq(copies, ["copies,process,7,train (rank 1),HtoD,bytes,20,450560,22528,"
                       + copies[0].split(",")[9] + ",40960,40960,0"], "both ranks' copies")
    status, text, err = run_gpusnoop("stats", d)
    expect_eq(status, 0, "text status")
    assert "NVTX ranges by time:" in text and "Copies by kind and size" in text, text


@test
def stats_malformed_traces_are_one_line_and_65():
    d = tempfile.mkdtemp()
    good = json.dumps({"traceEvents": [{"ph": "X", "name": "k", "cat": "kernel", "pid": 0,
                                        "tid": 1, "ts": 1, "dur": 2}]})
    cases = {
        "truncated.json": good[:40],
        "garbage.json": "\x00\xff not json",
        "ts.json": '{"traceEvents":[{"ph":"X","ts":"x","pid":1}]}',
        "deep.json": "[" * 100000,
        "empty.json": "",
    }
    for name, text in cases.items():
        with open(os.path.join(d, name), "w", encoding="latin-1") as f:
            f.write(text)
    with open(os.path.join(d, "bad.json.gz"), "wb") as f:
        f.write(gzip.compress(good.encode())[:30])
    for name in sorted(cases) + ["bad.json.gz"]:
        status, out, err = run_gpusnoop("stats", os.path.join(d, name))
        expect_eq(status, 65, f"{name} status ({err})")
        lines = err.strip().splitlines()
        expect_eq(len(lines), 1, f"{name}: one line: {lines}")
        assert lines[0].startswith(f"gpusnoop: error: {d}/{name}: "), lines
        expect_eq(out, "", f"{name}: nothing on stdout")
    status, _, err = run_gpusnoop("stats", os.path.join(d, "missing.json"))
    expect_eq(status, 66, f"a missing input ({err})")
    out = os.path.join(d, "out.txt")
    status, _, err = run_gpusnoop("stats", "-o", out, os.path.join(d, "ts.json"))
    expect_eq((status, os.path.exists(out)), (65, False), "no output file left")


if __name__ == "__main__":
    sys.exit(main())
