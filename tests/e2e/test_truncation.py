#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_truncation.py: a Python stack too deep to keep: 128 frames and a mark in every format."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_profile  # noqa: E402  (its protobuf reader)
from harness import expect_eq, main, run_gpusnoop, test  # noqa: E402
from test_python import CUDART, SCRIPT, interpreter, marked_lines  # noqa: E402

KEPT = 128  # GS_PY_MAX_FRAMES
CALLS = 150
# deep(150) .. deep(0) are 151 frames, under main() and <module>, over one leaf function
DEPTH = CALLS + 1 + 3
MARK = f"[truncated: {DEPTH - KEPT} more]"


def leaks(*args):
    status, out, err = run_gpusnoop("leaks", *args, "--", interpreter("3.12"), SCRIPT, CUDART,
                                    "deep", env={"GS_DEEP_CALLS": str(CALLS)})
    expect_eq(status, 0, f"gpusnoop status ({err})")
    return out


def profile(fmt, path):
    status, _, err = run_gpusnoop("profile", "-F", "199", "--format", fmt, "-o", path, "--",
                                  interpreter("3.12"), SCRIPT, CUDART, "deepspin",
                                  env={"GS_DEEP_CALLS": str(CALLS), "GS_SPIN_SECONDS": "1"})
    expect_eq(status, 0, f"gpusnoop status ({err})")


@test
def truncation_json_keeps_128_python_frames_and_a_mark():
    out = leaks("--format", "json")
    report = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
    expect_eq(report["lost"]["python_stack_truncated"], 1, "truncated Python stacks")
    stacks = report["processes"][0]["stacks"]
    expect_eq(len(stacks), 1, "stacks")
    frames = stacks[0]["frames"]
    py = [f for f in frames if f.get("kind") == "python"]
    expect_eq(len(py), KEPT, "Python frames")
    lines = marked_lines()
    expect_eq((py[0]["symbol"], py[0]["line"]), ("alloc_weights", lines["alloc_weights"]),
              "innermost")
    expect_eq({(f["symbol"], f["line"]) for f in py[2:]}, {("deep", lines["deep"])}, "recursion")
    # the mark stands right outside the outermost Python frame kept
    at = max(i for i, f in enumerate(frames) if f.get("kind") == "python") + 1
    expect_eq((frames[at].get("kind"), frames[at]["symbol"]), ("marker", MARK), "mark")


@test
def truncation_text_report_shows_the_mark():
    out = leaks()
    # the exit report (the final one repeats it)
    report = out.split("gpusnoop leaks (")[1]
    lines = [l.split(None, 1) for l in report.splitlines() if l.strip().startswith("#")]
    deep = [l for l in lines if len(l) == 2 and l[1].startswith("deep (")]
    expect_eq(len(deep), KEPT - 1, "deep() frames in the report")
    mark = [l for l in lines if len(l) == 2 and l[1] == MARK]
    assert mark, out
    # numbered right after the outermost deep() frame
    expect_eq(int(mark[0][0][1:]), int(deep[-1][0][1:]) + 1, "the mark's place")


@test
def truncation_folded_profile_marks_each_deep_stack():
    path = os.path.join(tempfile.mkdtemp(), "p.folded")
    profile("folded", path)
    deep = marked = 0
    with open(path) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            names = [fr.split(" (")[0] for fr in frames]
            if "deep_spin" not in names:
                continue
            deep += int(count)
            py = [fr for fr in frames if fr.endswith(".py:" + fr.rsplit(":", 1)[-1])
                  and SCRIPT in fr]
            expect_eq(len(py), KEPT, f"Python frames in {line[:200]}")
            first = names.index("deep_spin")
            expect_eq(frames[first - 1], MARK, "the mark outside the outermost kept frame")
            marked += int(count)
    assert deep >= 50, f"only {deep} samples in deep_spin()"
    expect_eq(marked, deep, "marked samples")


@test
def truncation_pprof_marks_each_deep_stack():
    path = os.path.join(tempfile.mkdtemp(), "p.pb.gz")
    profile("pprof", path)
    p = test_profile.read_pprof(path)
    s = p["strings"]
    fname = {fid: s[f.get(2, 0)] for fid, f in p["functions"].items()}

    def names(sample):  # innermost first
        return [fname[line[1]] for loc in sample["loc"]
                for line in p["locations"][loc]["lines"]]

    deep = [x for x in p["samples"] if "deep_spin" in names(x)]
    assert len(deep) >= 20, f"only {len(deep)} deep_spin() stacks"
    for x in deep:
        n = names(x)
        last = len(n) - 1 - n[::-1].index("deep_spin")
        expect_eq(n[last + 1], MARK, "the mark outside the outermost kept frame")
        expect_eq(n.count("deep_spin"), KEPT - 1 if "spin" in n else KEPT, "deep_spin frames")


DEEP_C = r"""
#include <stdlib.h>
#include <time.h>
static volatile int stop;
__attribute__((noinline)) static int spin(double secs)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (volatile int i = 0; i < 100000; i++)
			;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return stop;
}
__attribute__((noinline)) int recurse(int n, double secs)
{
	if (n == 0)
		return spin(secs);
	return recurse(n - 1, secs) + 1; /* not a tail call: a frame per level */
}
int main(int argc, char **argv)
{
	return recurse(100, atof(argv[1])) == 0;
}
"""


def deep_c():
    d = tempfile.mkdtemp()
    src, exe = os.path.join(d, "deepc.c"), os.path.join(d, "deepc")
    with open(src, "w") as f:
        f.write(DEEP_C)
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-o", exe, src], check=True)
    return exe


@test
def truncation_native_stack_past_the_limit_is_marked_in_trace_json():
    exe = deep_c()
    out = os.path.join(tempfile.mkdtemp(), "t.json")
    status, _, err = run_gpusnoop("record", "-e", "cpu", "-F", "199", "-o", out, "--", exe, "1.5")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    with open(out) as f:
        trace = json.load(f)
    deep = [e["args"]["stack"] for e in trace["traceEvents"]
            if e["ph"] == "i" and any(x.startswith("spin+") for x in e["args"]["stack"])]
    assert len(deep) >= 20, len(deep)
    for stack in deep:
        expect_eq(len(stack), 65, "64 frames and the mark")
        expect_eq(stack[-1], "[truncated]", "outermost frame")


@test
def truncation_native_stack_past_the_limit_is_marked_in_folded():
    exe = deep_c()
    status, out, err = run_gpusnoop("profile", "-F", "199", "-U", "--", exe, "1.5")
    expect_eq(status, 0, f"gpusnoop status ({err})")
    deep = marked = 0
    for frames, n in test_profile.parse_folded(out):
        if frames[0] != "deepc" or "spin" not in frames:
            continue
        deep += n
        # 64 frames kept: spin and 63 of recurse(), then the mark outermost
        if frames[1] == "[truncated]" and frames.count("recurse") == 63:
            marked += n
    assert deep >= 50, out[:500]
    expect_eq(marked, deep, "marked deep stacks")


if __name__ == "__main__":
    sys.exit(main())
