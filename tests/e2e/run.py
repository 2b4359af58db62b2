#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""run.py: every end-to-end test module, one summary line (names on the command line filter)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import test_leaks  # noqa: E402,F401  (registers its tests)
import test_record  # noqa: E402,F401
import test_profile  # noqa: E402,F401
import test_daemon  # noqa: E402,F401
import test_stitch  # noqa: E402,F401
import test_torch  # noqa: E402,F401
import test_unwind  # noqa: E402,F401
import test_security_names  # noqa: E402,F401
import test_security_files  # noqa: E402,F401
import test_security_output  # noqa: E402,F401
import test_security_daemon  # noqa: E402,F401
import test_cli  # noqa: E402,F401
import test_oom_exit  # noqa: E402,F401
import test_tree  # noqa: E402,F401
import test_python  # noqa: E402,F401
import test_gpu  # noqa: E402,F401
import test_torch2  # noqa: E402,F401
import test_gpu_harness  # noqa: E402,F401
import test_gpu_cupti  # noqa: E402,F401

if __name__ == "__main__":
    sys.exit(harness.main())
