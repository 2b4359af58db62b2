#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_daemon_counts.py: the daemon's launches and syncs, counted in the kernel, not sent."""
import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Workload, expect_eq, test  # noqa: E402
from test_daemon import Daemon, config_file, metric  # noqa: E402


def wait_metric(d, name, pid, want, secs=10):
    """The metrics page once name for pid reads want (they are published once a second)."""
    deadline = time.monotonic() + secs
    m = d.metrics()
    while (not re.search(rf'^{name}{{pid="{pid}",comm="[^"]*"}} {want}$', m, re.M)
           and time.monotonic() < deadline):
        time.sleep(0.2)
        m = d.metrics()
    return m


@test
def daemon_call_counts_exact_while_the_daemon_reads_nothing():
    """
    4,000 launches and 100 syncs made while the daemon is stopped, with a 1 MiB ring buffer:
    as records (about 300 bytes each) they would not fit, and the counts would fall short.
    Counted in the kernel they are exact, however late the daemon reads them.
    """
    tmp, conf = config_file("gs-daemon-counts-", "cuda-call-metrics on\nringbuf 1\n")
    d = Daemon("--config", conf)
    w = None
    try:
        w = Workload("gs_gemm_loop", env={"GS_FAKE_CUDA_NO_DRIVER": "1"})
        d.wait_probed()
        os.kill(d.g.proc.pid, signal.SIGSTOP)
        try:
            w.release()
            w.wait_line("done")
        finally:
            os.kill(d.g.proc.pid, signal.SIGCONT)
        m = wait_metric(d, "gpusnoop_cuda_syncs_total", w.pid, 100)
        # 3000 gemm + 1000 relu launches, a stream sync every 40 of them
        expect_eq(metric(m, "gpusnoop_cuda_launches_total", w.pid), 4000, "launches")
        expect_eq(metric(m, "gpusnoop_cuda_syncs_total", w.pid), 100, "synchronizations")
        secs = float(re.search(rf'^gpusnoop_cuda_sync_seconds_total{{pid="{w.pid}",[^}}]*}} (\S+)$',
                               m, re.M).group(1))
        assert secs >= 100 * 0.002, f"sync time {secs}s below the fake's 2 ms per call"
        expect_eq(w.finish(), 0, "workload status")
        # gone: its series go, and its counts in the kernel with them (none made anew)
        series = f'gpusnoop_cuda_launches_total{{pid="{w.pid}",'
        deadline = time.monotonic() + 10
        while series in d.metrics() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert series not in d.metrics(), "an exited process's launches still shown"
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()
