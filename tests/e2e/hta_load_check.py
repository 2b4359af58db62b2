#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""hta_load_check.py DIR: loads DIR's traces with Holistic Trace Analysis, prints its ranks and
the rows it kept per rank as JSON (traces without GPU rows, where hta_check.py's GPU analyses
have nothing to say)."""
import json
import sys
import warnings

warnings.simplefilter("ignore")
from hta.trace_analysis import TraceAnalysis  # noqa: E402


def main(trace_dir):
    analysis = TraceAnalysis(trace_dir=trace_dir)
    traces = analysis.t.traces
    json.dump({"ranks": sorted(int(r) for r in traces.keys()),
               "rows": {str(int(r)): len(df) for r, df in traces.items()}}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
