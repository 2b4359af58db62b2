#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_debuginfo.py: stripped files named from separate debug info, as gdb and perf find it."""
import collections
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_profile  # noqa: E402  (its folded reader)
from harness import expect_eq, main, run_gpusnoop, test  # noqa: E402
from test_perf_agree import scratch  # noqa: E402
from test_profile_options import two_threads  # noqa: E402

# static functions: only .symtab names them, which strip removes
PROGRAM = r"""
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void hidden_leaf(void)
{
	for (int i = 0; i < 100000; i++)
		sink += i;
}
__attribute__((noinline)) static void hidden_caller(double secs)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		hidden_leaf();
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}
int main(int argc, char **argv)
{
	hidden_caller(atof(argv[1]));
	return 0;
}
"""


def sh(*cmd):
    subprocess.run(list(cmd), check=True, capture_output=True)


def build(d, name):
    """An unstripped build of PROGRAM and its stripped copy: (full, stripped)."""
    src, full = os.path.join(d, name + ".c"), os.path.join(d, name + ".full")
    with open(src, "w") as f:
        f.write(PROGRAM)
    sh("cc", "-O1", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id", "-o", full, src)
    exe = os.path.join(d, name)
    sh("strip", "--strip-all", "-o", exe, full)
    return full, exe


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    return next(l.split()[-1] for l in out.splitlines() if "Build ID:" in l)


def leaves(exe, comm):
    stacks = test_profile.parse_folded(profile(exe))
    out = collections.Counter()
    for frames, n in stacks:
        if frames[0] == comm:
            out[frames[-1]] += n
    return out, stacks


def profile(exe):
    status, out, err = run_gpusnoop("profile", "-F", "199", "-U", "--", exe, "1.5", timeout=60)
    expect_eq(status, 0, f"status ({err})")
    return out


def expect_named(exe):
    comm = os.path.basename(exe)[:15]
    got, stacks = leaves(exe, comm)
    total = sum(got.values())
    assert total >= 50, stacks
    assert got["hidden_leaf"] >= 0.8 * total, got
    # the callers come from frame pointers as before: the static one is named too or inlined
    assert all("main" in f for f, _ in stacks if f[-1] == "hidden_leaf"), stacks[:3]


@test
def debuginfo_stripped_without_debug_info_stays_unnamed():
    _, exe = build(scratch(), "gsdbg_none")
    got, stacks = leaves(exe, "gsdbg_none")
    expect_eq(got["hidden_leaf"], 0, "named without debug info")


@test
def debuginfo_build_id_directory():
    full, exe = build(scratch(), "gsdbg_bid")
    bid = build_id(exe)
    d = os.path.join("/usr/lib/debug/.build-id", bid[:2])
    debug = os.path.join(d, bid[2:] + ".debug")
    os.makedirs(d, exist_ok=True)
    try:
        sh("objcopy", "--only-keep-debug", full, debug)
        expect_named(exe)
    finally:
        os.unlink(debug)


@test
def debuginfo_gnu_debuglink_next_to_the_file_crc_checked():
    d = scratch()
    full, exe = build(d, "gsdbg_link")
    debug = os.path.join(d, "gsdbg_link.debug")
    sh("objcopy", "--only-keep-debug", full, debug)
    sh("objcopy", "--add-gnu-debuglink=" + debug, exe)
    # in .debug/ too, as gdb looks: one with the wrong CRC next to the file is passed over
    os.makedirs(os.path.join(d, ".debug"))
    shutil.move(debug, os.path.join(d, ".debug", "gsdbg_link.debug"))
    with open(debug, "wb") as f:
        f.write(b"\x7fELF not the debug file")
    expect_named(exe)


@test
def debuginfo_minidebuginfo_xz_section():
    d = scratch()
    full, exe = build(d, "gsdbg_mini")
    mini = os.path.join(d, "mini")
    sh("objcopy", "--only-keep-debug", full, mini)
    sh("strip", "--strip-debug", mini)
    sh("xz", "-k", mini)
    sh("objcopy", "--add-section", ".gnu_debugdata=" + mini + ".xz", exe)
    expect_named(exe)


@test
def debuginfo_libc_dbg_names_start_functions():
    """Debian's libc6-dbg: names bpftrace shows, not [libc.so.6]."""
    p, tids = two_threads()
    try:
        status, out, err = run_gpusnoop("profile", "-F", "199", "-U", "--per-thread", "-p",
                                        str(p.pid), "-d", "1.5", timeout=60)
    finally:
        p.kill()
        p.wait()
    expect_eq(status, 0, f"status ({err})")
    stacks = test_profile.parse_folded(out)
    worker = [f for f, _ in stacks if f[0].endswith(f"/{tids['worker']}") and "spin_worker" in f]
    main_ = [f for f, _ in stacks if f[0].endswith(f"/{tids['main']}") and "spin_main" in f]
    assert worker and main_, stacks[:5]
    assert all("start_thread" in f for f in worker), worker[:3]
    assert all("__libc_start_call_main" in f for f in main_), main_[:3]
    assert not any("[libc.so.6]" in x for f in worker + main_ for x in f), (worker + main_)[:3]


if __name__ == "__main__":
    sys.exit(main())
