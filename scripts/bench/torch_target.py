#!/usr/bin/python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""A PyTorch process (Debian's python3-torch) that allocates through the stand-in runtime.

usage: torch_target.py LIBCUDART. Imports torch (mapping libtorch_cpu and libtorch_python),
prints "ready PID" and waits for SIGUSR1; then calls cudaMalloc 8 times from a tensor hook
run by libtorch's autograd engine (so libtorch code is on the native stack), prints "done"
and waits for SIGUSR1 again, as tests/fixtures/workloads/sync.h describes.
"""
import ctypes
import os
import signal
import sys

import torch

signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
cudart = ctypes.CDLL(sys.argv[1])
held = []


def hook(grad):
    for _ in range(8):
        p = ctypes.c_void_p()
        if cudart.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(1 << 20)) != 0:
            sys.exit("cudaMalloc failed")
        held.append(p)
    return grad


print("ready %d" % os.getpid(), flush=True)
signal.sigwait({signal.SIGUSR1})
x = torch.ones(4, requires_grad=True)
x.register_hook(hook)
(x * 2).sum().backward()
print("done", flush=True)
signal.sigwait({signal.SIGUSR1})
