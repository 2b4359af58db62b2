#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_kernels.py: kernels fleets run (Debian 5.10, 6.1, 6.12, Ubuntu 5.15) booted in qemu; probes."""
import base64
import collections
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, LIB, ROOT, Gpusnoop, MiB, Workload, expect_eq, main, run_gpusnoop,
                     test)
from test_leaks import apis_expectations, leaky_expectations, oom_expectations
from test_profile import burn_counts, expect_ordered, parse_folded
from test_record import expect_kernels_workload, expect_valid_trace, slices
from test_tree import json_docs, ready_pids, tree_reports

KERNELS_DIR = os.path.join(ROOT, "tests", "kernels")
SUITES = {"5.10": "bullseye", "5.15": "jammy", "6.1": "bookworm", "6.12": "trixie"}
# TCG on a busy 2-core machine: a boot with its checks takes 30-90 s; all four run at once
BOOT_TIMEOUT = 600
OFF_ENV = "GPUSNOOP_KERNEL_FEATURES_OFF"
_booted = {}


def parse_results(text):
    """{check: (status, stdout, stderr)} from init.sh's "@@GS NAME STATUS OUT ERR" lines."""
    out = {}
    for line in text.splitlines():
        f = line.split()
        if line.startswith("@@GS-DONE"):
            out["done"] = True
        if len(f) != 5 or f[0] != "@@GS":
            continue
        dec = [gzip.decompress(base64.b64decode(x)).decode(errors="replace") for x in f[3:]]
        out[f[1]] = (int(f[2]), dec[0], dec[1])
    return out


def boot_all():
    """Boots the four kernels at once (once per run) with this build; {version: results}."""
    if _booted:
        return _booted
    fetched = subprocess.run([os.path.join(KERNELS_DIR, "fetch.sh")] + list(SUITES.values()),
                             capture_output=True, text=True, timeout=900)
    assert fetched.returncode == 0, f"fetching the kernels: {fetched.stderr}"
    vmlinuz = dict(l.split(" ", 1) for l in fetched.stdout.splitlines())
    tmp = tempfile.mkdtemp()
    initrd = os.path.join(tmp, "initrd.gz")
    subprocess.run([os.path.join(KERNELS_DIR, "mkinitrd.sh"), initrd], check=True, timeout=300)
    qemus = {}
    for version, suite in SUITES.items():
        res = os.path.join(tmp, f"{suite}.results")
        console = open(os.path.join(tmp, f"{suite}.console"), "w")
        qemus[version] = (res, console, subprocess.Popen(
            ["timeout", str(BOOT_TIMEOUT), "qemu-system-x86_64", "-accel", "tcg", "-cpu", "max",
             "-m", "3072", "-smp", "2", "-nographic", "-no-reboot", "-kernel", vmlinuz[suite],
             "-initrd", initrd, "-append", "console=ttyS0 rdinit=/init panic=-1 quiet",
             "-serial", "mon:stdio", "-serial", f"file:{res}"],
            stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT))
    for version, (res, console, p) in qemus.items():
        p.wait()
        console.close()
        with open(res, errors="replace") as f:
            _booted[version] = parse_results(f.read())
        with open(console.name, errors="replace") as f:
            _booted[version]["console"] = f.read()[-3000:]
    return _booted


def results(version):
    r = boot_all()[version]
    assert r.get("done"), f"{version}: the checks did not all run; console:\n{r['console']}"
    r["release"] = r["check"][1].split()[1]  # "kernel RELEASE"
    return r


def ok(r, name):
    status, out, err = r[name]
    expect_eq(status, 0, f"{name} status ({err})")
    return out, err


def check_table(out, after=None):
    """{feature or command: its answer} from `gpusnoop check`; after: from that header on."""
    rows = {}
    lines = out.splitlines()[1:]
    if after:
        lines = lines[next(i for i, l in enumerate(lines) if l.split() == after.split()) + 1:]
    for line in lines:
        key, _, rest = line.partition("  ")
        rows.setdefault(key.strip(), rest.strip())  # the first table that names it
    return rows


def objects_table(out):
    """{command: the BPF objects it loads here, and why those} from `gpusnoop check`."""
    return check_table(out, after="COMMAND BPF OBJECTS")


def expect_objects(out, old_why):
    """Each command's objects: the usual builds, or the 5.10 ones for the features old_why."""
    objs = {"leaks": "proc mem cuda", "record": "proc mem cuda", "record -e cpu": "proc cpu",
            "profile": "proc cpu", "daemon": "proc mem cuda", "-- CMD tree": "proc mem cuda"}
    got = objects_table(out)
    for cmd, names in objs.items():
        if not old_why:
            want = f"{names}{' torch' if cmd == 'daemon' else ''}: usual builds"
        else:
            want = f"{names}: 5.10 builds ({old_why})"
            want += "; torch: none (no 5.10 build)" if cmd == "daemon" else ""
        expect_eq(got.get(cmd), want, f"{cmd}'s objects")


def expect_leaks(r):
    out, _ = ok(r, "leaks")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    expect_eq([x["report"] for x in reports], ["exit", "final"], "reports written")
    leaky_expectations(reports[0]["processes"][0])


def expect_record(r):
    trace = json.loads(ok(r, "record")[0])
    pid = slices(trace)[0]["pid"]
    expect_eq(expect_valid_trace(trace, pid), "gs_kernels", "process name")
    expect_kernels_workload(trace, pid)


def expect_tree(r):
    out, _ = ok(r, "tree")
    shell = int(next(l for l in out.splitlines() if l.startswith("shell ")).split()[1])
    workloads = ready_pids(out)
    expect_eq(len(workloads), 2, "workloads started")
    procs = tree_reports(json_docs(out), 2)
    expect_eq(sorted(procs), sorted(workloads), "processes reported: the workloads, no shell")
    for pid in workloads:
        expect_eq((procs[pid]["comm"], procs[pid]["ppid"]), ("gs_leaky", shell), f"pid {pid}")
        leaky_expectations(procs[pid])


def expect_return_probes(r):
    """leaks' return probes: each allocating API's, a failing free's, a failing allocation's."""
    for name, expect in (("leaks_apis", apis_expectations), ("leaks_oom", oom_expectations)):
        out, _ = ok(r, name)
        reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
        expect_eq([x["report"] for x in reports], ["exit", "final"], f"{name}: reports")
        expect(reports[0]["processes"][0])
    expect_eq(ok(r, "leaks_oom")[0].splitlines().count("oom 2"), 1, "gs_oom saw error 2")


def expect_daemon_oom(r):
    out, err = ok(r, "daemon_oom")
    report = json.loads(out)
    t = report["trigger"]
    expect_eq((t["kind"], t["api"], t["error"], t["bytes_requested"]),
              ("cuda-oom", "cudaMalloc", 2, 1 << 30), "trigger")
    expect_eq([f["symbol"] for f in t["frames"][:2]], ["oom_request", "main"], "OOM call stack")
    p = report["processes"][0]
    expect_eq((p["pid"], p["outstanding_bytes"], p["outstanding_allocations"]),
              (t["pid"], 96 * MiB, 3), "what the process held")
    expect_eq([(s["bytes"], s["allocations"], s["frames"][0]["symbol"]) for s in p["stacks"]],
              [(96 * MiB, 3, "fill_device")], "held memory by stack")


def expect_cpu(r):
    """profile names the hot function (burn_a: 3/4 of the work); record -e cpu has its samples,
    as the host's tests check them (test_profile: record_cpu_only_sigterm_without_cuda)."""
    for name in ("profile", "profile_dwarf"):
        if name in r:
            counts = burn_counts(parse_folded(ok(r, name)[0]))
            assert counts["burn_a"] > counts["burn_b"] > 0, (name, counts)
    trace = json.loads(ok(r, "record_cpu")[0])
    events, md = trace["traceEvents"], trace["metadata"]
    samples = [e for e in events if e["ph"] == "i"]
    expect_eq(md["cpu_sampling"]["samples"], len(samples), "samples in metadata")
    expect_eq(md["cpu_sampling"]["frequency_hz"], 499, "frequency")
    expect_eq(md["dropped_events"], 0, "dropped")
    expect_ordered(trace)
    for e in samples:
        expect_eq((e["cat"], e["s"]), ("cpu_sample", "t"), "sample kind")
        assert isinstance(e["args"]["cpu"], int), e
    named = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert all((e["pid"], e["tid"]) in named for e in samples), "samples on unnamed tracks"
    procs = {e["pid"]: e["args"]["name"] for e in events
             if e["ph"] == "M" and e["name"] == "process_name"}
    burns = [e for e in samples if procs.get(e["pid"]) == "gs_burn"]
    names = collections.Counter(e["name"] for e in burns)
    assert names["burn_a"] > names["burn_b"] > 0, names
    # the leaf and its caller, as profile's stacks have them (a rare sample at a burner's
    # first or last instructions skips main, as perf's frame-pointer stacks do)
    at_edges = 0
    for e in burns:
        if e["name"] in ("burn_a", "burn_b"):
            assert e["args"]["stack"][0].startswith(e["name"] + "+"), e
            at_edges += not e["args"]["stack"][1].startswith("main+")
    assert at_edges <= max(2, (names["burn_a"] + names["burn_b"]) // 20), at_edges


def expect_everything(version):
    r = results(version)
    out, _ = ok(r, "check")
    rows = check_table(out)
    for cmd in ("leaks", "record", "record -e cpu", "profile", "daemon", "-- CMD tree"):
        assert rows.get(cmd, "").startswith("yes"), (cmd, out)
    expect_objects(out, None)
    expect_leaks(r)
    expect_return_probes(r)
    expect_record(r)
    expect_tree(r)
    expect_daemon_oom(r)
    return r


@test
def kernel_5_10_every_command_exact_on_the_5_10_builds():
    r = results("5.10")
    out, _ = ok(r, "check")
    rows = check_table(out)
    for feat in ("task_btf", "task_storage", "find_vma", "cookie", "bpf_loop", "uprobe_multi"):
        assert rows[feat].startswith("no "), (feat, out)
    expect_eq(rows["pt_regs.cs"], "8 bytes", "5.10's pt_regs.cs")
    for feat in ("ringbuf", "tp_btf"):
        assert rows[feat].startswith("yes "), (feat, out)
    # proc, mem, cuda and cpu's 5.10 builds: per-call state by thread id, cookies by file and
    # offset, the kernel's stack walk
    lost = "no Python frames (bpf_loop(), Linux 5.17), the kernel's user stack walk"
    for cmd in ("leaks", "record", "daemon", "-- CMD tree"):
        expect_eq(rows[cmd], f"yes, {lost}, one link per probe", cmd)
    for cmd in ("record -e cpu", "profile"):
        expect_eq(rows[cmd], f"yes, {lost}", cmd)
    expect_objects(out, "task_btf, task_storage, cookie: no")
    expect_leaks(r)
    expect_return_probes(r)
    expect_record(r)
    expect_tree(r)
    expect_daemon_oom(r)
    expect_cpu(r)
    for name in ("leaks", "leaks_apis", "leaks_oom", "record", "tree", "daemon_oom",
                 "record_cpu", "profile", "profile_dwarf"):
        said = [l for l in r[name][2].splitlines() if "bpf_loop" in l]
        expect_eq(said, [f"gpusnoop: warning: python frames: off: kernel {r['release']} lacks "
                         "bpf_loop() (Linux 5.17); stacks stay native"], f"{name}: one line")
        assert "Invalid argument" not in r[name][2], (name, r[name][2])
    # the daemon would load PyTorch's probes: torch.bpf.o has no 5.10 build
    said = [l for l in r["daemon_oom"][2].splitlines() if "PyTorch" in l]
    expect_eq(said, ["gpusnoop: warning: PyTorch memory is not followed: its probes need task "
                     "storage maps (Linux 5.11) and BPF cookies on uprobes (Linux 5.15)"],
              "daemon: one line about PyTorch")


@test
def kernel_5_15_without_find_vma_and_bpf_loop_leaks_record_tree_daemon_exact():
    r = results("5.15")
    rows = check_table(r["check"][1])
    expect_eq([rows[f].split()[0] for f in ("task_storage", "cookie", "find_vma", "bpf_loop")],
              ["yes", "yes", "no", "no"], "5.15's features")
    expect_eq(rows["leaks"], "yes, no Python frames (bpf_loop(), Linux 5.17), the kernel's user "
              "stack walk, one link per probe", "what leaks does on 5.15")
    r = expect_everything("5.15")
    for name in ("leaks", "record", "tree", "daemon_oom"):
        said = [l for l in r[name][2].splitlines() if "bpf_loop" in l]
        expect_eq(said, [f"gpusnoop: warning: python frames: off: kernel {r['release']} lacks "
                         "bpf_loop() (Linux 5.17); stacks stay native"], f"{name}: one line")


@test
def kernel_5_15_profile_and_record_cpu():
    # fails until the "stacks" branch drops the CO-RE read of pt_regs.cs (8 bytes on 5.15)
    expect_cpu(results("5.15"))


@test
def kernel_6_1_leaks_record_tree_daemon_exact():
    expect_everything("6.1")


@test
def kernel_6_1_profile_and_record_cpu():
    # fails until the "stacks" branch drops the CO-RE read of pt_regs.cs (8 bytes on 6.1)
    r = results("6.1")
    expect_eq(check_table(r["check"][1])["pt_regs.cs"], "8 bytes", "6.1's pt_regs.cs")
    expect_cpu(r)


@test
def kernel_6_12_every_command_exact():
    expect_cpu(expect_everything("6.12"))


@test
def features_off_refuse_in_one_line_never_invalid_argument():
    # every build needs the ring buffer (5.8)
    folded = os.path.join(tempfile.mkdtemp(), "p.folded")
    status, out, err = run_gpusnoop("profile", "-F", "99", "-o", folded, "--", "true",
                                    env={OFF_ENV: "ringbuf,cookie"})
    expect_eq(status, 1, "status")
    expect_eq(out, "", "nothing ran")
    expect_eq(err, f"gpusnoop: error: kernel {os.uname().release} lacks BPF features gpusnoop "
              "needs: BPF ring buffer (Linux 5.8) "
              f"(switched off by {OFF_ENV}); `gpusnoop check` lists what works here\n", "stderr")


@test
def without_task_storage_profile_and_record_cpu_run_on_the_5_10_build():
    # cpu's 5.10 build: the kernel's stack walk, no Python frames, whatever bpf_loop says
    env = {OFF_ENV: "task_storage,task_btf", "GS_BURN_ROUNDS": "100"}
    folded = os.path.join(tempfile.mkdtemp(), "burn.folded")
    status, _, err = run_gpusnoop("profile", "-v", "-F", "499", "-o", folded, "--",
                                  os.path.join(BIN, "gs_burn"), env=env, timeout=120)
    expect_eq(status, 0, f"profile status ({err})")
    assert "cpu: the Linux 5.10 build" in err, err
    said = [l for l in err.splitlines() if "python frames" in l]
    expect_eq(said, [f"gpusnoop: warning: python frames: off: kernel {os.uname().release} lacks "
                     "bpf_get_current_task_btf() (Linux 5.11), task storage maps (Linux 5.11); "
                     "stacks stay native"], "one line about Python frames")
    with open(folded) as f:
        counts = burn_counts(parse_folded(f.read()))
    assert counts["burn_a"] > counts["burn_b"] > 0, counts
    path = os.path.join(tempfile.mkdtemp(), "t.json")
    status, _, err = run_gpusnoop("record", "-v", "-e", "cpu", "-F", "499", "-o", path, "--",
                                  os.path.join(BIN, "gs_burn"), env=env, timeout=120)
    expect_eq(status, 0, f"record status ({err})")
    assert "cpu: the Linux 5.10 build" in err, err
    with open(path) as f:
        trace = f.read()
    r = {"profile": (0, open(folded).read(), ""), "record_cpu": (0, trace, "")}
    expect_cpu(r)


@test
def without_task_storage_leaks_runs_exact_on_the_5_10_builds():
    # they take the kernel's cookies where it has them
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"),
                                    env={OFF_ENV: "task_storage,task_btf"})
    expect_eq(status, 0, f"status ({err})")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    expect_eq([x["report"] for x in reports], ["exit", "final"], "reports written")
    leaky_expectations(reports[0]["processes"][0])


@test
def without_task_storage_record_runs_exact_on_the_5_10_builds():
    path = os.path.join(tempfile.mkdtemp(), "t.json.gz")
    status, _, err = run_gpusnoop("record", "-o", path, "--", os.path.join(BIN, "gs_kernels"),
                                  env={OFF_ENV: "task_storage,task_btf"}, timeout=120)
    expect_eq(status, 0, f"status ({err})")
    with gzip.open(path, "rt") as f:
        trace = json.load(f)
    pid = slices(trace)[0]["pid"]
    expect_eq(expect_valid_trace(trace, pid), "gs_kernels", "process name")
    expect_kernels_workload(trace, pid)


@test
def without_task_storage_and_cookies_leaks_runs_on_the_5_10_builds():
    # the same stacks, bytes and counts; the API name needs the 5.10 kernel's VMA tree (mm_rb,
    # gone in 6.1) to find the cookie, so here it is not checked (test 5.10 above checks it)
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"),
                                    env={OFF_ENV: "task_storage,task_btf,cookie"})
    expect_eq(status, 0, f"status ({err})")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    expect_eq([x["report"] for x in reports], ["exit", "final"], "reports written")
    p = reports[0]["processes"][0]
    expect_eq((p["outstanding_bytes"], p["outstanding_allocations"]), (280 * MiB, 7), "held")
    expect_eq([(x["bytes"], x["allocations"], [f["symbol"] for f in x["frames"][:2]])
               for x in p["stacks"]],
              [(256 * MiB, 4, ["leak_weights", "main"]),
               (24 * MiB, 3, ["leak_activations", "main"])], "stacks")


def file_key(path):
    """"DEV:INO" of path as BPF reads it (kernel dev_t: major << 20 | minor)."""
    st = os.stat(path)
    return f"{os.major(st.st_dev) << 20 | os.minor(st.st_dev)}:{st.st_ino}"


@test
def the_5_10_builds_drop_the_cookies_of_a_file_once_no_process_is_probed_in_it():
    # probe_cookies is bounded (GS_OLD_PROBES): the entries of files whose processes are gone
    # go with them, not while another process is still probed in the same files
    env = {OFF_ENV: "task_storage,task_btf,cookie"}
    cudart = file_key(os.path.join(LIB, "libcudart.so.13"))
    a, b = Workload("gs_leaky"), Workload("gs_leaky")
    g = Gpusnoop("leaks", "-v", "-p", str(a.pid), "-p", str(b.pid), "--format", "json", env=env)

    def dropped(lines):
        return [l.split(" file ")[1].split()[0] for l in lines if "no longer probed" in l]
    try:
        g.wait_tracing()
        a.release()
        a.wait_line("done")
        expect_eq(a.finish(), 0, "first workload")
        time.sleep(1)
        # libcuda, which the held second one has not loaded yet, may go; not libcudart
        first = dropped(g.err.drain())
        assert cudart not in first, (cudart, g.stderr_text())
        b.release()
        b.wait_line("done")
        expect_eq(b.finish(), 0, "second workload")
        g.wait_stderr(", 0 held")
        g.stop()
    finally:
        g.kill()
        a.kill()
        b.kill()
    last = dropped(g.err.lines)[len(first):]
    # the loader, libcudart and libcuda, each once
    expect_eq(len(last), 3, f"files dropped at the end: {g.stderr_text()}")
    expect_eq(len(set(last)), 3, "each file once")
    assert cudart in last, (cudart, last)


@test
def without_bpf_loop_python_frames_are_off_and_the_rest_exact():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"), env={OFF_ENV: "bpf_loop"})
    expect_eq(status, 0, f"status ({err})")
    said = [l for l in err.splitlines() if "bpf_loop" in l]
    expect_eq(said, [f"gpusnoop: warning: python frames: off: kernel {os.uname().release} lacks "
                     "bpf_loop() (Linux 5.17); stacks stay native"], "one line about it")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    leaky_expectations(reports[0]["processes"][0])


@test
def without_find_vma_the_kernels_stack_walk_gives_the_same_stacks():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"), env={OFF_ENV: "find_vma"})
    expect_eq(status, 0, f"status ({err})")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    leaky_expectations(reports[0]["processes"][0])
    folded = os.path.join(tempfile.mkdtemp(), "burn.folded")
    status, _, err = run_gpusnoop("profile", "-F", "499", "-o", folded, "--",
                                  os.path.join(BIN, "gs_burn"),
                                  env={OFF_ENV: "find_vma", "GS_BURN_ROUNDS": "100"}, timeout=120)
    expect_eq(status, 0, f"profile status ({err})")
    with open(folded) as f:
        counts = burn_counts(parse_folded(f.read()))
    assert counts["burn_a"] > counts["burn_b"] > 0, counts


@test
def check_lists_features_and_what_each_command_can_do():
    status, out, err = run_gpusnoop("check")
    expect_eq(status, 0, f"status on this kernel ({err})")
    rows = check_table(out)
    for feat in ("ringbuf", "tp_btf", "task_btf", "task_storage", "find_vma", "cookie",
                 "bpf_loop", "uprobe_multi"):
        assert rows[feat].startswith("yes "), (feat, out)
    expect_objects(out, None)
    status, out, err = run_gpusnoop("check", env={OFF_ENV: "task_storage,bpf_loop"})
    expect_eq(status, 0, f"status: every command runs ({err})")
    rows = check_table(out)
    expect_eq((rows["task_storage"].split()[0], rows["bpf_loop"].split()[0]), ("off", "off"),
              "off")
    # the 5.10 builds do without it: the kernel's stack walk (no task storage to bound it in)
    for cmd in ("leaks", "profile"):
        expect_eq(rows[cmd], "yes, no Python frames (bpf_loop(), Linux 5.17), the kernel's "
                  "user stack walk", cmd)
    expect_objects(out, "task_storage: off")
    # bpf_loop() there, but the 5.10 builds have no Python walk
    status, out, err = run_gpusnoop("check", env={OFF_ENV: "cookie"})
    expect_eq(status, 0, f"status ({err})")
    expect_eq(check_table(out)["profile"], "yes, no Python frames (the 5.10 builds), the "
              "kernel's user stack walk", "profile without cookies")
    expect_objects(out, "cookie: off")
    status, out, err = run_gpusnoop("check", env={OFF_ENV: "ringbuf"})
    expect_eq(status, 1, "status: nothing runs without the ring buffer")
    expect_eq(check_table(out)["profile"], "no: needs BPF ring buffer (Linux 5.8)", "profile")
    status, _, err = run_gpusnoop("check", env={OFF_ENV: "cookie,nonsense"})
    expect_eq((status, err), (1, f'gpusnoop: error: {OFF_ENV}: unknown feature at "nonsense"\n'),
              "an unknown name")


if __name__ == "__main__":
    sys.exit(main())
