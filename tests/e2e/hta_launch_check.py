#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""hta_launch_check.py DIR: hta_check.py's analyses of DIR's one rank, and its launch statistics.

Runs in the tests' own virtual environment, like hta_check.py (whose output it extends with
"launches": HTA's pairing of each CPU launch with its GPU work by correlation id). Prints JSON.
"""
import json
import os
import sys
import warnings

warnings.simplefilter("ignore")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hta.trace_analysis import TraceAnalysis  # noqa: E402

import hta_check  # noqa: E402


def launches(analysis, rank):
    stats = analysis.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False)[rank]
    return [{"correlation": int(r["correlation"]), "cpu_us": float(r["cpu_duration"]),
             "gpu_us": float(r["gpu_duration"])} for _, r in stats.iterrows()]


def main(trace_dir):
    analysis = TraceAnalysis(trace_dir=trace_dir)
    out = hta_check.analyses(analysis)
    if len(out["ranks"]) != 1:
        raise SystemExit(f"{trace_dir}: ranks {out['ranks']}, want one")
    out["launches"] = launches(analysis, out["ranks"][0])
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
