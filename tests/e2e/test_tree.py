#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_tree.py: the process tree of a -- CMD or -p --children target: scripts, launchers, ranks."""
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, NOBODY, MiB, Gpusnoop, Workload, expect_eq, main, run_gpusnoop,
                     stacks_by_function, test, run_attached)
from test_daemon import Daemon
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


def tree_reports(reports, nr):
    """A tree's nr exit reports and its final one, which lists the same processes, exited."""
    expect_eq([r["report"] for r in reports], ["exit"] * nr + ["final"],
              "an exit report per process, then the tree's")
    exits, final = procs_of(reports[:-1]), procs_of(reports[-1:])
    expect_eq(sorted(final), sorted(exits), "processes in the final report")
    for pid, p in final.items():
        expect_eq(without_ages(p), without_ages(exits[pid]),
                  f"pid {pid} in the final report (exited: as at its exit)")
    return exits


def without_ages(proc):
    """A process of a report without its stacks' ages, which grow from report to report."""
    return dict(proc, stacks=[{k: v for k, v in s.items() if k != "oldest_age_s"}
                              for s in proc["stacks"]])


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
    procs = tree_reports(reports, 4)
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


def rank_reports(reports, launcher, nr):
    procs = tree_reports(reports, nr)
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
    rank_reports(json_docs(out), ready_pids(out)[0], 3)


@test
def forked_children_calling_cuda_at_once_are_traced():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", "env", "GS_RANKS=3",
                                    "GS_RANKS_MODE=fork", RANKS, timeout=RUN_TIMEOUT)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    launcher = ready_pids(out)[0]
    procs = tree_reports(json_docs(out), 3)
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
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json", *gs_args,
                     ready="Ctrl-C to stop", timeout=RUN_TIMEOUT)
    return w.pid, g.stdout.decode()


@test
def pid_children_follows_ranks_forked_after_attach():
    launcher, out = attach_to_launcher("--children")
    # the final report lists the exited ranks; the launcher, alive, holds nothing
    rank_reports(json_docs(out), launcher, 3)


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
    procs = tree_reports(json_docs(g.stdout.decode()), 1)
    expect_eq(list(procs), [child], "the program alone")
    p = procs[child]
    expect_eq((p["pid"], p["ppid"], p["comm"]), (child, sh.pid, "gs_leaky"), "the program")
    leaky_expectations(p)


@test
def processes_stopped_for_gpusnoop_go_on_when_it_ends():
    # gpusnoop ends at -d while the tree's processes keep stopping at exec and loader events;
    # its stdout closes only once the shell, left running, has finished every step
    loop = "for i in $(seq 3000); do /bin/true; done; echo finished"
    status, out, err = run_gpusnoop("leaks", "-d", "1", "--", "bash", "-c", loop,
                                    timeout=RUN_TIMEOUT)
    expect_eq(status, 1, f"gpusnoop status: no CUDA in the tree ({err})")
    expect_eq(out.splitlines()[-1], "finished", "the shell's last line")


@test
def daemon_ctl_leaks_and_record_children():
    d = Daemon()
    w = Workload("gs_ranks", env={"GS_RANKS": "3", "GS_RANKS_HOLD": "1"})
    ranks = []
    try:
        d.wait_probed()
        w.release()
        for r in range(3):
            w.out.wait_for(lambda l, r=r: l == f"held {r}", f"rank {r} held")
        status, out, err = d.ctl("leaks", str(w.pid), "--children", "--format", "json")
        expect_eq(status, 0, f"ctl leaks --children ({err})")
        report = json.loads(out)
        by_rank = {p["rank"]: p for p in report["processes"]}
        ranks = [p["pid"] for p in report["processes"]]
        expect_eq(sorted(by_rank), [0, 1, 2], "ranks in one report, the launcher holds nothing")
        for rank, p in by_rank.items():
            rank_expectations(p, rank, w.pid)
        status, out, err = d.ctl("leaks", str(w.pid), "--children", uid=NOBODY)
        expect_eq((status, out), (1, ""), "ctl leaks --children by a non-owner")
        assert "neither it nor a descendant of yours" in err, err
        status, out, err = d.ctl("record", str(w.pid), "--children", "1", uid=NOBODY)
        expect_eq((status, out), (1, ""), "ctl record --children by a non-root user")
        assert "root's" in err, err
        status, out, err = d.ctl("record", str(w.pid), "--children", "1", "cuda-mem")
        expect_eq(status, 0, f"ctl record --children ({err})")
        assert out.strip().endswith(".json.gz"), out
    finally:
        for pid in ranks:
            os.kill(pid, signal.SIGTERM)
        w.finish()
        w.kill()
        d.stop()


if __name__ == "__main__":
    sys.exit(main())
