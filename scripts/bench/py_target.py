#!/usr/bin/python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""A Python caller of the stand-in runtime, for the cost of naming Python frames.

usage: py_target.py LIBCUDART ITERS DEPTH. Prints "ready PID", waits for SIGUSR1, then calls
cudaMalloc and cudaFree ITERS times from a function DEPTH Python frames deep, prints
"ns_per_iter N" (the thread's CPU time per iteration), "ns_median N" (the median over batches
of BATCH iterations of the wall time per iteration: a preempted batch is an outlier, not part
of the figure), "done", and waits for SIGUSR1 again (tests/fixtures/workloads/sync.h's
protocol).
"""
import ctypes
import os
import signal
import sys
import time


BATCH = 16


def churn(cudart, iters):
    p = ctypes.c_void_p()
    ref = ctypes.byref(p)
    clock = time.perf_counter_ns
    batches = max(iters // BATCH, 1)
    laps = []
    start = time.thread_time_ns()
    for _ in range(batches):
        t0 = clock()
        for _ in range(BATCH):
            cudart.cudaMalloc(ref, 4096)
            cudart.cudaFree(p)
        laps.append(clock() - t0)
    cpu = (time.thread_time_ns() - start) / (batches * BATCH)
    laps.sort()
    return cpu, laps[len(laps) // 2] / BATCH


def nest(depth, cudart, iters):
    if depth <= 1:
        return churn(cudart, iters)
    return nest(depth - 1, cudart, iters)


def main(lib, iters, depth):
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
    cudart = ctypes.CDLL(lib)
    print(f"ready {os.getpid()}", flush=True)
    signal.sigwait({signal.SIGUSR1})
    cpu, wall = nest(int(depth), cudart, int(iters))
    print("ns_per_iter %.1f" % cpu, flush=True)
    print("ns_median %.1f" % wall, flush=True)
    print("done", flush=True)
    signal.sigwait({signal.SIGUSR1})


main(*sys.argv[1:4])
