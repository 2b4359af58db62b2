#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# check-calls.py: no two files of profilers/ outside daemon/ call each other both ways.
"""Reads the global symbols each object file defines and uses (nm) and fails, naming the
symbols, when a pair of profilers/ sources reference each other. A circle means neither file
can be understood, tested or replaced without the other: the shared part belongs to one of
them, or to a third file both use (as bpf_objects.c owns every BPF object for the attach code).

usage: check-calls.py OUTPUT_DIR   (the build's .output: reads OUTPUT_DIR/profilers/**/*.o)
"""
import os
import subprocess
import sys

EXEMPT = ("profilers/daemon/",)  # the daemon's files are one program split for size


def symbols(obj):
    """(defined, used) global symbol sets of one object file"""
    out = subprocess.run(["nm", "-g", obj], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] not in "Uw":
            defined.add(parts[2])
    return defined, used


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = os.path.join(sys.argv[1], "profilers")
    files = {}
    for d, _, names in os.walk(root):
        for n in sorted(names):
            if n.endswith(".o"):
                src = os.path.relpath(os.path.join(d, n), sys.argv[1])[:-2] + ".c"
                if not src.startswith(EXEMPT):
                    files[src] = symbols(os.path.join(d, n))
    if not files:
        sys.exit("check-calls: no object files under %s (build first)" % root)
    owner = {s: f for f, (defs, _) in files.items() for s in defs}
    calls = {}
    for f, (_, used) in files.items():
        for s in used:
            if s in owner and owner[s] != f:
                calls.setdefault((f, owner[s]), []).append(s)
    bad = sorted((a, b) for (a, b) in calls if a < b and (b, a) in calls)
    for a, b in bad:
        print("check-calls: %s and %s call each other:\n  %s -> %s\n  %s -> %s" %
              (a, b, a, " ".join(sorted(calls[(a, b)])[:4]), b,
               " ".join(sorted(calls[(b, a)])[:4])), file=sys.stderr)
    if bad:
        sys.exit(1)
    print("check-calls: %d files of profilers/, no two call each other" % len(files))


if __name__ == "__main__":
    main()
