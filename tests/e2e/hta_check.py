#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""hta_check.py DIR: loads DIR's traces with Holistic Trace Analysis, prints its analyses as JSON.

Runs in the tests' own virtual environment (scripts/setup.sh test makes it), not in the
interpreter of the e2e suite, which needs nothing beyond the standard library.
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis  # noqa: E402


def analyses(analysis):
    """The kernel breakdown and the idle time per stream of every rank a TraceAnalysis loaded."""
    _, kernels = analysis.get_gpu_kernel_breakdown(visualize=False)
    ranks = sorted(int(r) for r in analysis.t.traces.keys())
    idle, _ = analysis.get_idle_time_breakdown(ranks=ranks, visualize=False)
    return {
        "ranks": ranks,
        "kernels": [{"rank": int(r["rank"]), "name": r["name"], "sum_us": float(r["sum (us)"]),
                     "mean_us": float(r["mean (us)"]), "type": r["kernel_type"]}
                    for _, r in kernels.iterrows()],
        "idle": [{"rank": int(r["rank"]), "stream": int(r["stream"]),
                  "category": r["idle_category"], "idle_us": float(r["idle_time"])}
                 for _, r in idle.iterrows()],
    }


def main(trace_dir):
    json.dump(analyses(TraceAnalysis(trace_dir=trace_dir)), sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
