# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""train.py: make gpu-test's workload on a real GPU with PyTorch 2.x (run by gpu_test.py).

  train.py train RESULT [--kineto TRACE] [--steps N]   a small conv net + MLP, SGD steps
  train.py memory RESULT [--pause SECS]                checkpoints of torch's memory counters
  train.py launches RESULT [--launches N]              a launch-bound loop, timed; held first

Deterministic: fixed seed, fixed shapes, cuDNN deterministic without autotuning, and every
step synchronised, so each kernel it launched has completed when the step ends. RESULT gets a
JSON object; times are time.monotonic_ns(), CLOCK_MONOTONIC, gpusnoop's clock.
"""
import argparse
import ctypes
import json
import os
import sys
import time

import torch

BATCH, CLASSES = 64, 10


def mapped_cupti():
    """The libcupti files this process maps (PyTorch's and the injection library's)."""
    with open("/proc/self/maps") as f:
        return sorted({line.split()[-1] for line in f if "libcupti" in line})


def cupti_versions(paths):
    """{path: CUPTI API version} of the mapped CUPTI files (cuptiGetVersion)."""
    out = {}
    for path in paths:
        v = ctypes.c_uint(0)
        try:
            ctypes.CDLL(path).cuptiGetVersion(ctypes.byref(v))
            out[path] = v.value
        except (OSError, AttributeError):
            out[path] = None
    return out


def injection_status():
    """The injection library's gpusnoop_cupti_status() ("" when it set up GPU activity), or
    None when CUDA_INJECTION64_PATH names none the driver loaded."""
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if not path:
        return None
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except OSError:
        return "the driver did not load %s" % path
    lib.gpusnoop_cupti_status.restype = ctypes.c_char_p
    return lib.gpusnoop_cupti_status().decode(errors="replace")


def model_and_data():
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(),
        torch.nn.Linear(32 * 16, 128), torch.nn.ReLU(), torch.nn.Linear(128, CLASSES)).cuda()
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, 3, 32, 32, generator=gen).cuda()
    y = torch.randint(0, CLASSES, (BATCH,), generator=gen).cuda()
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    return net, x, y, opt


def step(net, x, y, opt):
    opt.zero_grad(set_to_none=True)
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()


def run_train(args, result):
    net, x, y, opt = model_and_data()
    for _ in range(3):  # lazy initialisation (cuBLAS, cuDNN handles) before the window
        step(net, x, y, opt)
    result["window_start_ns"] = time.monotonic_ns()
    if args.kineto:
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(args.steps):
                step(net, x, y, opt)
        result["window_end_ns"] = time.monotonic_ns()
        prof.export_chrome_trace(args.kineto)
    else:
        for _ in range(args.steps):
            step(net, x, y, opt)
        result["window_end_ns"] = time.monotonic_ns()
    result["steps"] = args.steps


def checkpoint(result, name, pause):
    """Pause with nothing running so that torch's counters hold still; say when."""
    torch.cuda.synchronize()
    start = time.monotonic_ns()
    result["checkpoints"].append({
        "name": name, "start_ns": start, "allocated": torch.cuda.memory_allocated(0),
        "reserved": torch.cuda.memory_reserved(0)})
    time.sleep(pause)
    result["checkpoints"][-1]["end_ns"] = time.monotonic_ns()


def run_memory(args, result):
    result["checkpoints"] = []
    net, x, y, opt = model_and_data()
    checkpoint(result, "model and batch on the GPU", args.pause)
    for _ in range(3):
        step(net, x, y, opt)
    checkpoint(result, "after 3 SGD steps", args.pause)
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
    checkpoint(result, "64 MiB tensor held", args.pause)
    del big
    checkpoint(result, "64 MiB tensor freed (cached)", args.pause)
    torch.cuda.empty_cache()
    checkpoint(result, "after empty_cache()", args.pause)


def run_launches(args, result):
    x = torch.zeros(256, device="cuda")
    for _ in range(1000):
        x.add_(1.0)
    torch.cuda.synchronize()
    print("ready %d" % os.getpid(), flush=True)
    if sys.stdin.readline().strip() != "go":  # the harness attaches its tool meanwhile
        raise SystemExit("train.py: not released")
    result["window_start_ns"] = start = time.monotonic_ns()
    for _ in range(args.launches):
        x.add_(1.0)  # one kernel launch each
    torch.cuda.synchronize()
    result["window_end_ns"] = end = time.monotonic_ns()
    result["launches"] = args.launches
    result["ns_per_launch"] = (end - start) / args.launches


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("mode", choices=("train", "memory", "launches"))
    p.add_argument("result")
    p.add_argument("--kineto", help="train under torch.profiler, export its trace here")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--pause", type=float, default=2.0)
    p.add_argument("--launches", type=int, default=20000)
    args = p.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("train.py: torch.cuda.is_available() is False")
    result = {"mode": args.mode, "pid": os.getpid(), "torch": torch.__version__,
              "torch_cuda": torch.version.cuda, "device": torch.cuda.get_device_name(0)}
    {"train": run_train, "memory": run_memory, "launches": run_launches}[args.mode](
        args, result)
    result["cupti"] = mapped_cupti()
    result["cupti_api"] = cupti_versions(result["cupti"])
    result["injection_status"] = injection_status()
    with open(args.result, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
