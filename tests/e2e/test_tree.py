#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_tree.py: the process tree of a -- CMD or -p --children target: scripts, launchers, ranks."""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, MiB, Gpusnoop, Workload, expect_eq, main, run_gpusnoop,
                     stacks_by_function, test)
from test_leaks import leaky_expectations

# start-up is dominated by the BPF verifier, which a busy machine slows down a lot
RUN_TIMEOUT = 180
LEAKY = os.path.join(BIN, "gs_leaky")
RANKS = os.path.join(BIN, "gs_ranks")


def json_docs(stdout):
    """The reports among the lines the traced commands also wrote to the same stdout."""
    return [json.loads(l) for l in stdout.splitlines() if l.startswith("{")]


def ready_pids(stdout):
    return [int(l.split()[1]) for l in stdout.splitlines() if l.startswith("ready ")]


def procs_of(reports):
    """{pid: process} over every report, each pid exactly once."""
    out = {}
    for r in reports:
        for p in r["processes"]:
            assert p["pid"] not in out, (p["pid"], reports)
            out[p["pid"]] = p
    return out


def shell_script():
    path = os.path.join(tempfile.mkdtemp(), "steps.sh")
    with open(path, "w") as f:
        f.write(f"echo shell $$\n{LEAKY}\n{LEAKY}\n{LEAKY} &\n{LEAKY} &\nwait\n")
    return path


def rank_expectations(proc, rank, ppid):
    expect_eq((proc["ppid"], proc["comm"]), (ppid, "gs_ranks"), f"rank {rank}'s parent and comm")
    by_fn = stacks_by_function(proc)
    expect_eq(sorted(by_fn), ["rank_alloc"], f"rank {rank}'s allocating functions")
    expect_eq((by_fn["rank_alloc"]["bytes"], by_fn["rank_alloc"]["allocations"]),
              ((rank + 1) * MiB, rank + 1), f"rank {rank}'s outstanding memory")
    expect_eq(proc["stacks"][0]["frames"][1]["symbol"], "rank_work", f"rank {rank}'s caller")
    expect_eq(proc["unknown_frees"], 0, f"rank {rank}'s frees of unknown pointers")


@test
def shell_script_steps_and_background_jobs_each_reported():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", "bash", shell_script(),
                                    timeout=RUN_TIMEOUT)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    shell = int(next(l for l in out.splitlines() if l.startswith("shell ")).split()[1])
    workloads = ready_pids(out)
    expect_eq(len(workloads), 4, "workloads started")
    reports = json_docs(out)
    expect_eq([r["report"] for r in reports], ["exit"] * 4, "one exit report per workload")
    procs = procs_of(reports)
    expect_eq(sorted(procs), sorted(workloads), "processes reported: the workloads, no shell")
    for pid in workloads:
        p = procs[pid]
        expect_eq((p["comm"], p["ppid"], p["rank"], p["exited"]), ("gs_leaky", shell, -1, True),
                  f"pid {pid}")
        leaky_expectations(p)
        expect_eq(reports[0]["dropped_events"], 0, "dropped events")


@test
def no_children_traces_the_shell_alone():
    status, out, err = run_gpusnoop("leaks", "--no-children", "--format", "json", "--", "bash",
                                    shell_script(), timeout=RUN_TIMEOUT)
    expect_eq(status, 1, "gpusnoop status: nothing of the shell's own used CUDA")
    assert "no target loaded a CUDA library" in err, err
    shell = int(next(l for l in out.splitlines() if l.startswith("shell ")).split()[1])
    reports = json_docs(out)
    expect_eq([r["report"] for r in reports], ["exit"], "the shell's exit report alone")
    p = reports[0]["processes"][0]
    expect_eq((p["pid"], p["comm"], p["ppid"], p["outstanding_bytes"]), (shell, "bash", 0, 0),
              "the shell, holding nothing")


def rank_reports(out, launcher, nr):
    reports = json_docs(out)
    expect_eq([r["report"] for r in reports], ["exit"] * nr, "one exit report per rank")
    procs = procs_of(reports)
    by_rank = {p["rank"]: p for p in procs.values()}
    expect_eq(sorted(by_rank), list(range(nr)), "ranks reported")
    for rank, p in by_rank.items():
        expect_eq(p["local_rank"], rank, f"rank {rank}'s local rank")
        rank_expectations(p, rank, launcher)


@test
def launcher_ranks_that_exec_are_reported_with_their_ranks():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", "env", "GS_RANKS=3",
                                    RANKS, timeout=RUN_TIMEOUT)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    rank_reports(out, ready_pids(out)[0], 3)


@test
def forked_children_calling_cuda_at_once_are_traced():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", "env", "GS_RANKS=3",
                                    "GS_RANKS_MODE=fork", RANKS, timeout=RUN_TIMEOUT)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    launcher = ready_pids(out)[0]
    procs = procs_of(json_docs(out))
    expect_eq(len(procs), 3, "children reported")
    # no exec: a child's environment is the launcher's, without RANK; told apart by bytes
    by_bytes = {p["outstanding_bytes"]: p for p in procs.values()}
    expect_eq(sorted(by_bytes), [MiB, 2 * MiB, 3 * MiB], "each child's bytes")
    for rank in range(3):
        p = by_bytes[(rank + 1) * MiB]
        expect_eq(p["rank"], -1, "no rank in a forked child's environment")
        rank_expectations(p, rank, launcher)


@test
def record_names_one_process_group_per_rank():
    path = os.path.join(tempfile.mkdtemp(), "ranks.json")
    status, out, err = run_gpusnoop("record", "-o", path, "--", "env", "GS_RANKS=4", RANKS,
                                    timeout=RUN_TIMEOUT)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    launcher = ready_pids(out)[0]
    with open(path) as f:
        trace = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert launcher not in names, names
    expect_eq(sorted(names.values()), [f"gs_ranks (rank {r}, local {r})" for r in range(4)],
              "process groups")
    launches = collections.Counter(e["pid"] for e in trace["traceEvents"]
                                   if e["ph"] == "X" and e["name"] == "cudaLaunchKernel")
    got = {names[pid]: n for pid, n in launches.items()}
    expect_eq(got, {f"gs_ranks (rank {r}, local {r})": 10 * (r + 1) for r in range(4)},
              "launches per rank")
    expect_eq(trace["metadata"]["dropped_events"], 0, "dropped events")


def attach_to_launcher(*gs_args):
    """gs_ranks held before it forks, attached by -p; returns (launcher pid, stdout)."""
    w = Workload("gs_ranks", env={"GS_RANKS": "3"})
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json", *gs_args)
    try:
        g.wait_stderr("Ctrl-C to stop", timeout=RUN_TIMEOUT)
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()})")
        return w.pid, g.stdout.decode()
    finally:
        g.kill()
        w.finish()


@test
def pid_children_follows_ranks_forked_after_attach():
    launcher, out = attach_to_launcher("--children")
    reports = json_docs(out)
    expect_eq([r["report"] for r in reports], ["exit"] * 3 + ["final"], "reports written")
    expect_eq(reports[-1]["processes"], [], "the launcher holds nothing")
    rank_reports("\n".join(json.dumps(r) for r in reports[:-1]), launcher, 3)


@test
def pid_alone_is_the_listed_process_only():
    _, out = attach_to_launcher()
    reports = json_docs(out)
    expect_eq([(r["report"], r["processes"]) for r in reports], [("final", [])],
              "nothing of the ranks")


@test
def child_that_execs_a_cuda_program_is_traced_from_its_first_call():
    # a shell waiting for a line, attached before it starts the program (new to the session)
    sh = subprocess.Popen(["bash", "-c", f"read line; {LEAKY}; true"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    g = Gpusnoop("leaks", "-p", str(sh.pid), "--children", "--format", "json")
    try:
        g.wait_stderr("Ctrl-C to stop", timeout=RUN_TIMEOUT)
        out, _ = sh.communicate(b"go\n", timeout=RUN_TIMEOUT)
        expect_eq(g.wait(), 0, f"gpusnoop status ({g.stderr_text()})")
    finally:
        g.kill()
        sh.kill()
        sh.wait()
    child = ready_pids(out.decode())[0]
    reports = json_docs(g.stdout.decode())
    expect_eq([r["report"] for r in reports], ["exit"], "the program's exit report")
    p = reports[0]["processes"][0]
    expect_eq((p["pid"], p["ppid"], p["comm"]), (child, sh.pid, "gs_leaky"), "the program")
    leaky_expectations(p)


if __name__ == "__main__":
    sys.exit(main())
