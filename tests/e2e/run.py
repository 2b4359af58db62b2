#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""run.py: every end-to-end test module, one summary line (names on the command line filter)."""
import glob
import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import harness  # noqa: E402

# each test_*.py registers its tests on import; sorted, so the order is the same on every run
for path in sorted(glob.glob(os.path.join(HERE, "test_*.py"))):
    importlib.import_module(os.path.splitext(os.path.basename(path))[0])

if __name__ == "__main__":
    sys.exit(harness.main())
