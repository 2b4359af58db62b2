#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_perf_agree.py: leaf frames of samples taken in the kernel agree with `perf record -g`."""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import expect_eq, main, run_gpusnoop, test

HZ = 199
SECS = "1.5"
# a share of samples below which a leaf is noise (process start and exit), in either tool
MIN_SHARE = 0.05

STAT_LOOP = r"""
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
__attribute__((noinline)) static int do_stat(void)
{
	struct stat st;
	return stat("/", &st);
}
int main(int argc, char **argv)
{
	struct timespec t0, t;
	double secs = atof(argv[1]);
	int r = 0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++)
			r += do_stat();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return r != 0;
}
"""

PY_READER = r"""
import os, sys, time
end = time.monotonic() + float(sys.argv[1])
def read_files():
    for p in ("/etc/hostname", "/etc/passwd", "/proc/self/stat"):
        with open(p, "rb") as f:
            f.read()
    os.stat("/")
while time.monotonic() < end:
    read_files()
"""


def scratch():
    return tempfile.mkdtemp(prefix="gs-perf-agree-")


def build_stat_loop(d):
    src, exe = os.path.join(d, "statloop.c"), os.path.join(d, "statloop")
    with open(src, "w") as f:
        f.write(STAT_LOOP)
    subprocess.run(["cc", "-O2", "-fno-omit-frame-pointer", "-o", exe, src], check=True)
    return exe


def python_reader(d):
    path = os.path.join(d, "reader.py")
    with open(path, "w") as f:
        f.write(PY_READER)
    return [sys.executable, path]


_aliases = {}


def symbol_addresses(dso):
    """{name: address} of dso's dynamic and static symbols and of its build-id debug file."""
    if dso in _aliases:
        return _aliases[dso]
    files = [dso]
    notes = subprocess.run(["readelf", "-n", dso], capture_output=True, text=True).stdout
    for line in notes.splitlines():
        if "Build ID:" in line:
            bid = line.split()[-1]
            files.append(f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug")
    out = {}
    for f in files:
        for flags in (["-D"], []):
            nm = subprocess.run(["nm", "--defined-only"] + flags + [f], capture_output=True,
                                text=True).stdout
            for line in nm.splitlines():
                parts = line.split()
                if len(parts) == 3 and parts[1] in "TtWwi":
                    out.setdefault(parts[2].split("@")[0], int(parts[0], 16))
    _aliases[dso] = out
    return out


def canonical(name, dso):
    """(dso's base name, the function's address): one key for a function's aliases."""
    if not name or not dso:
        return None
    name = name.split("@")[0]
    addr = symbol_addresses(dso).get(name)
    return (os.path.basename(dso), addr) if addr is not None else (os.path.basename(dso), name)


def perf_leaves(cmd, comm):
    """Counter of canonical user leaves of perf's samples of comm taken in the kernel."""
    d = scratch()
    data = os.path.join(d, "perf.data")
    subprocess.run(["perf", "record", "-q", "-g", "-F", str(HZ), "-o", data, "--"] + cmd,
                   check=True, capture_output=True, timeout=60)
    text = subprocess.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso"],
                          check=True, capture_output=True, text=True, timeout=60).stdout
    leaves = collections.Counter()
    for block in text.split("\n\n"):
        lines = [l.strip() for l in block.strip().splitlines()]
        if len(lines) < 2 or lines[0].split()[0] != comm:
            continue
        frames = [l.split(None, 1)[1] for l in lines[1:] if len(l.split(None, 1)) == 2]
        if not frames or "[kernel.kallsyms]" not in frames[0]:
            continue
        user = [f for f in frames if "[kernel.kallsyms]" not in f]
        if not user:
            continue
        sym, _, dso = user[0].rpartition(" (")
        leaves[canonical(sym.strip(), dso.rstrip(")"))] += 1
    return leaves


def split_frame(text):
    """'fstatat+0xa (/usr/lib/.../libc.so.6)' -> ('fstatat', '/usr/lib/.../libc.so.6')."""
    if " (" not in text or "+0x" not in text:
        return None, None
    sym, _, dso = text.rpartition(" (")
    return sym.rsplit("+0x", 1)[0], dso.rstrip(")")


def record_samples(cmd, comm):
    """The `record -e cpu` samples of comm, as trace events."""
    out = os.path.join(scratch(), "cpu.json")
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", str(HZ), "-o", out, "--", *cmd,
                                  timeout=60)
    expect_eq(status, 0, f"status ({err})")
    with open(out) as f:
        trace = json.load(f)
    names = {(e["pid"]): e["args"]["name"] for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    return [e for e in trace["traceEvents"]
            if e["ph"] == "i" and names.get(e["pid"], "").startswith(comm)]


def gpusnoop_leaves(samples):
    leaves = collections.Counter()
    for e in samples:
        if not e["args"].get("kernel_stack"):
            continue
        stack = e["args"]["stack"]
        leaves[canonical(*split_frame(stack[0])) if stack else None] += 1
    return leaves


def main_leaves(leaves):
    total = sum(leaves.values())
    return {k for k, n in leaves.items() if n >= MIN_SHARE * total}


def expect_agree(ours, perfs, what):
    """Each tool's main leaves are leaves of the other's too, and nearly all samples agree.

    The sample counts are random draws: a leaf with 5% of one tool's samples may have 3% of
    the other's, so the sets compared are the main ones against all of the other's."""
    assert sum(ours.values()) >= 40, f"{what}: only {sum(ours.values())} kernel samples: {ours}"
    assert sum(perfs.values()) >= 40, f"{what}: perf: only {sum(perfs.values())}: {perfs}"
    assert main_leaves(ours) <= set(perfs), f"{what}: leaves perf never saw: {ours} vs {perfs}"
    assert main_leaves(perfs) <= set(ours), f"{what}: perf's leaves missing: {ours} vs {perfs}"
    shared = sum(n for k, n in ours.items() if k in perfs)
    assert shared >= 0.9 * sum(ours.values()), f"{what}: {ours} vs perf {perfs}"
    # and no marker or unnamed frame stands for the leaf
    assert None not in main_leaves(ours), ours


@test
def perf_agree_stat_loop_kernel_samples_start_at_libc_wrapper():
    exe = build_stat_loop(scratch())
    cmd = [exe, SECS]
    samples = record_samples(cmd, "statloop")
    ours = gpusnoop_leaves(samples)
    expect_agree(ours, perf_leaves(cmd, "statloop"), "stat loop")
    # the wrapper is libc's, and its caller is the program's: the leaf was not cut
    libc = [k for k in main_leaves(ours) if k[0].startswith("libc.so")]
    assert libc, ours
    kernel = [e for e in samples if e["args"].get("kernel_stack")]
    assert not any("python frame" in f for e in samples for f in e["args"]["stack"]), samples[0]
    callers = collections.Counter(split_frame(e["args"]["stack"][1])[0] for e in kernel
                                  if len(e["args"]["stack"]) > 1)
    assert callers.most_common(1)[0][0] in ("main", "do_stat"), callers


@test
def perf_agree_python_reader_kernel_samples_start_at_libc_wrapper():
    cmd = python_reader(scratch()) + ["2.5"]
    comm = os.path.basename(sys.executable)[:15]
    ours = gpusnoop_leaves(record_samples(cmd, comm))
    expect_agree(ours, perf_leaves(cmd, comm), "python reader")


@test
def perf_agree_profile_folded_python_reader():
    """profile: the user frame next to the kernel's is a libc function, never a marker."""
    cmd = python_reader(scratch()) + [SECS]
    status, out, err = run_gpusnoop("profile", "-F", str(HZ), "--", *cmd, timeout=60)
    expect_eq(status, 0, f"status ({err})")
    leaves = collections.Counter()
    for line in out.splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        k = [i for i, f in enumerate(frames) if f.endswith("_[k]")]
        if not k or k[0] == 0 or not frames[0].startswith("python"):
            continue
        leaves[frames[k[0] - 1]] += int(count)
    assert sum(leaves.values()) >= 50, leaves
    bad = {f: n for f, n in leaves.items() if f.startswith("[") or f.startswith("0x")}
    assert sum(bad.values()) <= 0.05 * sum(leaves.values()), f"unnamed user leaves: {bad}"


if __name__ == "__main__":
    sys.exit(main())
