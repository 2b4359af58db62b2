#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_lost_stacks.py: samples whose stack the stack map had no room for are their own [lost]."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_profile  # noqa: E402  (its folded reader)
from harness import expect_eq, main, run_gpusnoop, test  # noqa: E402

# Random walks 20 calls deep through two functions: nearly every sample a new stack, so
# bpf_get_stackid() finds buckets of its 16384-entry map taken (-EEXIST) within seconds
PROGRAM = r"""
#include <stdlib.h>
#include <time.h>
static volatile unsigned long sink;
static unsigned long seed = 1;
__attribute__((noinline)) static void spin(void)
{
	for (int i = 0; i < 20000; i++)
		sink += i;
}
__attribute__((noinline)) static void step(int d);
__attribute__((noinline)) static void step_a(int d)
{
	step(d);
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void step_b(int d)
{
	step(d);
	__asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void step(int d)
{
	if (!d) {
		spin();
		return;
	}
	seed = seed * 6364136223846793005UL + 1442695040888963407UL;
	if ((seed >> 33) & 1)
		step_a(d - 1);
	else
		step_b(d - 1);
	__asm__ volatile("" ::: "memory");
}
int main(int argc, char **argv)
{
	struct timespec t0, t;
	double secs = atof(argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		step(20);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
"""


@test
def lost_stacks_are_their_own_folded_stack():
    d = tempfile.mkdtemp(prefix="gs-lost-")
    src, exe = os.path.join(d, "gslost.c"), os.path.join(d, "gslost")
    with open(src, "w") as f:
        f.write(PROGRAM)
    subprocess.run(["cc", "-O1", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
                    "-o", exe, src], check=True)
    status, out, err = run_gpusnoop("profile", "-F", "999", "-U", "--", exe, "3", timeout=60)
    expect_eq(status, 0, f"status ({err})")
    stacks = test_profile.parse_folded(out)
    lost = [(f, n) for f, n in stacks if "[lost]" in f]
    m = re.search(r"lost: (\d+) stacks", err)
    assert m and int(m.group(1)) > 0, err
    # one stack, the mark alone under the process name: not merged into any other
    expect_eq([f for f, _ in lost], [["gslost", "[lost]"]], "[lost] stacks")
    expect_eq(lost[0][1], int(m.group(1)), "[lost] samples against the lost stacks counted")


if __name__ == "__main__":
    sys.exit(main())
