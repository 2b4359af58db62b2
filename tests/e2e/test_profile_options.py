#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_profile_options.py: profile's -U/-K, --tid, --per-thread, --no-python, --stacks dwarf."""
import collections
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_profile  # noqa: E402  (folded and protobuf readers)
from harness import LineReader, expect_eq, main, run_gpusnoop, test  # noqa: E402
from test_perf_agree import STAT_LOOP, build_stat_loop, scratch  # noqa: E402

HZ = "199"
PY_BUSY = r"""
import time
def spin():
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        pass
spin()
"""

TWO_THREADS = r"""
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static volatile int stop;
__attribute__((noinline)) static void spin_worker(void) { while (!stop) ; }
static volatile int stop_main;
static void on_alarm(int sig) { stop_main = sig; }
__attribute__((noinline)) static void spin_main(void) { while (!stop_main) ; }
static void *worker(void *arg)
{
	printf("worker %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	spin_worker();
	return arg;
}
int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	signal(SIGALRM, on_alarm);
	alarm(4);
	printf("main %ld\n", (long)syscall(SYS_gettid));
	fflush(stdout);
	spin_main();
	stop = 1;
	pthread_join(t, NULL);
	return 0;
}
"""


def folded(*args):
    status, out, err = run_gpusnoop("profile", "-F", HZ, *args, timeout=60)
    expect_eq(status, 0, f"status ({err})")
    return test_profile.parse_folded(out)


def stat_loop():
    return [build_stat_loop(scratch()), "1.5"]


@test
def profile_user_only_has_no_kernel_frames():
    stacks = [(f, n) for f, n in folded("-U", "--", *stat_loop()) if f[0] == "statloop"]
    assert sum(n for f, n in stacks if "fstatat" in f) >= 50, stacks
    assert not any(x.endswith("_[k]") for f, _ in stacks for x in f), stacks


@test
def profile_kernel_only_has_no_user_frames():
    stacks = folded("-K", "--", *stat_loop())
    mine = [(f, n) for f, n in stacks if f[0] == "statloop"]
    in_kernel = sum(n for f, n in mine if len(f) > 1)
    assert in_kernel >= 20, mine
    # a sample whose kernel stack the map could not keep is the [lost] stack, nothing else
    bad = [f for f, _ in mine if f != ["statloop", "[lost]"]
           and any(not x.endswith("_[k]") for x in f[1:])]
    expect_eq(bad, [], "user frames under -K")


@test
def profile_user_and_kernel_only_exclude_each_other():
    status, _, err = run_gpusnoop("profile", "-U", "-K", "-d", "1", "-a")
    assert status != 0 and "-U and -K" in err, (status, err)


def two_threads():
    d = scratch()
    src, exe = os.path.join(d, "threads.c"), os.path.join(d, "threads")
    with open(src, "w") as f:
        f.write(TWO_THREADS)
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-pthread", "-o", exe, src],
                   check=True)
    p = subprocess.Popen([exe], stdout=subprocess.PIPE)
    out = LineReader(p.stdout)
    tids = {}
    for who in ("main", "worker"):
        line = out.wait_for(lambda l, who=who: l.startswith(who + " "), who)
        tids[who] = int(line.split()[1])
    return p, tids


@test
def profile_tid_samples_that_thread_only():
    p, tids = two_threads()
    try:
        stacks = folded("--tid", str(tids["worker"]), "-d", "1.5")
    finally:
        p.kill()
        p.wait()
    leaves = collections.Counter()
    for f, n in stacks:
        for name in {"spin_main", "spin_worker"} & set(f):
            leaves[name] += n
    assert leaves["spin_worker"] >= 50, leaves
    expect_eq(leaves["spin_main"], 0, f"main thread samples {leaves}")


@test
def profile_per_thread_names_each_thread():
    p, tids = two_threads()
    try:
        stacks = folded("--per-thread", "-p", str(p.pid), "-d", "1.5")
    finally:
        p.kill()
        p.wait()
    by_thread = collections.defaultdict(collections.Counter)
    for f, n in stacks:
        for name in {"spin_main", "spin_worker"} & set(f):
            by_thread[f[0]][name] += n
    main_label = f"threads-{p.pid}/{tids['main']}"
    worker_label = f"threads-{p.pid}/{tids['worker']}"
    assert by_thread[main_label]["spin_main"] >= 50, dict(by_thread)
    assert by_thread[worker_label]["spin_worker"] >= 50, dict(by_thread)
    expect_eq(by_thread[main_label]["spin_worker"], 0, "worker in main's stacks")


@test
def profile_pprof_labels_threads():
    p, tids = two_threads()
    path = os.path.join(scratch(), "p.pb.gz")
    try:
        status, _, err = run_gpusnoop("profile", "-F", HZ, "--per-thread", "--format", "pprof",
                                      "-o", path, "-p", str(p.pid), "-d", "1.5", timeout=60)
    finally:
        p.kill()
        p.wait()
    expect_eq(status, 0, f"status ({err})")
    prof = test_profile.read_pprof(path)
    s = prof["strings"]
    tids_seen = set()
    for x in prof["samples"]:
        labels = {s[lb[1]]: (s[lb[2]] if 2 in lb else lb.get(3)) for lb in x["labels"]}
        expect_eq(labels.get("thread_name"), "threads", "thread_name label")
        tids_seen.add(labels.get("thread_id"))
    assert {tids["main"], tids["worker"]} <= tids_seen, tids_seen


def python_busy():
    path = os.path.join(scratch(), "busy.py")
    with open(path, "w") as f:
        f.write(PY_BUSY)
    return path


@test
def profile_no_python_keeps_native_frames_only():
    script = python_busy()
    with_py = folded("--", sys.executable, script)
    assert any(f"spin ({script}:" in x for f, _ in with_py for x in f), with_py[:3]
    without = folded("--no-python", "--", sys.executable, script)
    assert sum(n for _, n in without) >= 50, without
    assert not any(script in x or "[native frames missing]" in x
                   for f, _ in without for x in f), without[:3]


@test
def profile_pprof_keeps_python_module_name():
    script = python_busy()
    path = os.path.join(scratch(), "p.pb.gz")
    status, _, err = run_gpusnoop("profile", "-F", HZ, "--format", "pprof", "-o", path, "--",
                                  sys.executable, script, timeout=60)
    expect_eq(status, 0, f"status ({err})")
    prof = test_profile.read_pprof(path)
    s = prof["strings"]
    mod = [f for f in prof["functions"].values()
           if s[f.get(2, 0)] == "<module>" and s[f.get(4, 0)] == script]
    assert mod, [s[f.get(2, 0)] for f in prof["functions"].values()][:30]
    # pprof demangles a function whose system name is its name, cutting "<module>" to ""
    assert s[mod[0].get(3, 0)] != "<module>", mod
    lines = {ln.get(2) for loc in prof["locations"].values() for ln in loc["lines"]
             if ln[1] == mod[0][1]}
    assert lines and all(lines), lines


@test
def profile_dwarf_stacks_reach_start_without_frame_pointers():
    d = scratch()
    src, exe = os.path.join(d, "nofp.c"), os.path.join(d, "nofp")
    with open(src, "w") as f:
        f.write(STAT_LOOP)
    subprocess.run(["cc", "-O2", "-fomit-frame-pointer", "-g", "-o", exe, src], check=True)
    stacks = [(f, n) for f, n in folded("--stacks", "dwarf", "-U", "--", exe, "1.5")
              if f[0] == "nofp"]
    total = sum(n for _, n in stacks)
    whole = sum(n for f, n in stacks if len(f) > 2 and f[1] == "_start" and "main" in f)
    assert total >= 50, stacks
    assert whole >= 0.9 * total, (whole, total, stacks[:5])


if __name__ == "__main__":
    sys.exit(main())
