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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, ROOT, MiB, expect_eq, main, run_gpusnoop, test
from test_leaks import leaky_expectations
from test_profile import burn_counts, parse_folded
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


def check_table(out):
    """{feature or command: its answer} from `gpusnoop check`."""
    rows = {}
    for line in out.splitlines()[1:]:
        key, _, rest = line.partition("  ")
        rows[key.strip()] = rest.strip()
    return rows


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
    """profile names the hot function (burn_a: 3/4 of the work); record -e cpu has its samples."""
    counts = burn_counts(parse_folded(ok(r, "profile")[0]))
    assert counts["burn_a"] > counts["burn_b"] > 0, counts
    trace = json.loads(ok(r, "record_cpu")[0])
    samples = collections.Counter()
    for e in trace["traceEvents"]:
        if e["ph"] == "i" and "stack" in e.get("args", {}):
            for fn in ("burn_a", "burn_b"):
                samples[fn] += any(s.startswith(fn + "+") or s == fn for s in e["args"]["stack"])
    assert samples["burn_a"] > samples["burn_b"] > 0, samples


def expect_everything(version):
    r = results(version)
    out, _ = ok(r, "check")
    rows = check_table(out)
    for cmd in ("leaks", "record", "record -e cpu", "profile", "daemon", "-- CMD tree"):
        assert rows.get(cmd, "").startswith("yes"), (cmd, out)
    expect_leaks(r)
    expect_record(r)
    expect_tree(r)
    expect_daemon_oom(r)
    return r


@test
def kernel_5_10_refuses_in_one_line_naming_what_it_lacks():
    r = results("5.10")
    status, out, _ = r["check"]
    expect_eq(status, 1, "check's status: commands cannot run here")
    rows = check_table(out)
    for feat in ("task_btf", "task_storage", "find_vma", "cookie", "bpf_loop", "uprobe_multi"):
        assert rows[feat].startswith("no "), (feat, out)
    expect_eq(rows["pt_regs.cs"], "8 bytes", "5.10's pt_regs.cs")
    for feat in ("ringbuf", "tp_btf"):
        assert rows[feat].startswith("yes "), (feat, out)
    want = ("gpusnoop: error: kernel 5.10.0-32-cloud-amd64 lacks BPF features gpusnoop needs: "
            "bpf_get_current_task_btf() (Linux 5.11), task storage maps (Linux 5.11){}; "
            "`gpusnoop check` lists what works here\n")
    cookie = ", BPF cookies on uprobes (Linux 5.15)"
    release = r["release"]
    for name, needs_cookie in (("leaks", True), ("record", True), ("record_cpu", False),
                               ("profile", False), ("tree", True), ("daemon_oom", True)):
        status, _, err = r[name]
        assert status != 0, (name, err)
        line = want.format(cookie if needs_cookie else "").replace("5.10.0-32-cloud-amd64",
                                                                    release)
        assert err.endswith(line) and "Invalid argument" not in err, (name, err)


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
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"),
                                    env={OFF_ENV: "task_storage,cookie"})
    expect_eq(status, 1, "status")
    expect_eq(out, "", "nothing ran")
    expect_eq(err, f"gpusnoop: error: kernel {os.uname().release} lacks BPF features gpusnoop "
              "needs: task storage maps (Linux 5.11), BPF cookies on uprobes (Linux 5.15) "
              f"(switched off by {OFF_ENV}); `gpusnoop check` lists what works here\n", "stderr")


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
    status, out, err = run_gpusnoop("check", env={OFF_ENV: "cookie,bpf_loop"})
    expect_eq(status, 1, "status: leaks cannot run")
    rows = check_table(out)
    expect_eq((rows["cookie"].split()[0], rows["bpf_loop"].split()[0]), ("off", "off"), "off")
    expect_eq(rows["leaks"], "no: needs BPF cookies on uprobes (Linux 5.15)", "leaks")
    expect_eq(rows["profile"], "yes, no Python frames (bpf_loop(), Linux 5.17)", "profile")
    status, _, err = run_gpusnoop("check", env={OFF_ENV: "cookie,nonsense"})
    expect_eq((status, err), (1, f'gpusnoop: error: {OFF_ENV}: unknown feature at "nonsense"\n'),
              "an unknown name")


if __name__ == "__main__":
    sys.exit(main())
