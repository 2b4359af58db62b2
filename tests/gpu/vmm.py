#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""vmm.py RESULT [--cudart PATH]: device memory mapped through driver entry points, as PyTorch
2.15's expandable segments map it, for gpu_test's VMM check (`leaks` must see every mapping).

The driver's cuMemAddressReserve/Create/Map/SetAccess/Unmap/Release come from the runtime's
cudaGetDriverEntryPointByVersion (cudaGetDriverEntryPoint where the runtime lacks it) and are
called through those pointers: no call by the exported name is made. Three 2 MiB pages are
mapped by map_weights and kept until exit; one 20 MiB page is mapped by map_scratch and given
back. RESULT (JSON) says what was mapped: {"pid", "kept": [[addr, size]...], "freed": [...]}.

The runtime is the libcudart this process maps once PyTorch has set CUDA up (a GPU machine),
or --cudart (the stand-in runtime of tests/fixtures, on a machine without a GPU). Standard
library only, besides PyTorch where it is used to find the runtime.
"""
import argparse
import ctypes
import json
import os
import sys

MiB = 1 << 20
CUDA_VERSION = 12030  # the version PyTorch 2.15 asks entry points for
PROT_READWRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
LOCATION_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
ALLOCATION_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED


class Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class AllocationProp(ctypes.Structure):  # CUmemAllocationProp (cuda.h), 32 bytes
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int),
                ("location", Location), ("win32HandleMetaData", ctypes.c_void_p),
                ("allocFlags", AllocFlags)]


class AccessDesc(ctypes.Structure):  # CUmemAccessDesc, 12 bytes
    _fields_ = [("location", Location), ("flags", ctypes.c_int)]


U64, SIZE, PTR = ctypes.c_ulonglong, ctypes.c_size_t, ctypes.c_void_p
SIGNATURES = {
    "cuMemAddressReserve": [ctypes.POINTER(U64), SIZE, SIZE, U64, U64],
    "cuMemCreate": [ctypes.POINTER(U64), SIZE, ctypes.POINTER(AllocationProp), U64],
    "cuMemMap": [U64, SIZE, SIZE, U64, U64],
    "cuMemSetAccess": [U64, SIZE, ctypes.POINTER(AccessDesc), SIZE],
    "cuMemUnmap": [U64, SIZE],
    "cuMemRelease": [U64],
    "cuMemAddressFree": [U64, SIZE],
}


def mapped_cudart():
    """The libcudart PyTorch loaded, once CUDA is set up."""
    import torch  # noqa: F401 (the GPU machine's interpreter has it)
    torch.cuda.init()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "/libcudart" in path and ".so" in path:
                return path
    raise SystemExit("vmm.py: no libcudart mapped after torch.cuda.init()")


def driver_functions(cudart):
    rt = ctypes.CDLL(cudart)
    get = getattr(rt, "cudaGetDriverEntryPointByVersion", None)
    fns = {}
    for name, args in SIGNATURES.items():
        fn, status = PTR(), ctypes.c_int(-1)
        if get is not None:
            err = get(name.encode(), ctypes.byref(fn), ctypes.c_uint(CUDA_VERSION), U64(0),
                      ctypes.byref(status))
        else:
            err = rt.cudaGetDriverEntryPoint(name.encode(), ctypes.byref(fn), U64(0),
                                             ctypes.byref(status))
        if err or status.value or not fn.value:
            raise SystemExit(f"vmm.py: no entry point for {name} (error {err})")
        fns[name] = ctypes.CFUNCTYPE(ctypes.c_int, *args)(fn.value)
    rt.cudaFree(None)  # the primary context, as PyTorch's first CUDA call makes it
    return fns


def check(what, err):
    if err:
        raise SystemExit(f"vmm.py: {what} failed with CUresult {err}")


class Range:
    def __init__(self, fns, size):
        self.fns, self.base, self.used = fns, U64(0), 0
        self.prop = AllocationProp(type=ALLOCATION_PINNED,
                                   location=Location(LOCATION_DEVICE, 0))
        self.access = AccessDesc(location=Location(LOCATION_DEVICE, 0), flags=PROT_READWRITE)
        check("cuMemAddressReserve",
              fns["cuMemAddressReserve"](ctypes.byref(self.base), size, 0, 0, 0))

    def map_page(self, size):
        handle, at = U64(0), self.base.value + self.used
        check("cuMemCreate", self.fns["cuMemCreate"](ctypes.byref(handle), size,
                                                     ctypes.byref(self.prop), 0))
        check("cuMemMap", self.fns["cuMemMap"](at, size, 0, handle.value, 0))
        check("cuMemSetAccess", self.fns["cuMemSetAccess"](at, size, ctypes.byref(self.access),
                                                           1))
        self.used += size
        return at, handle.value


def map_weights(r):
    return [(r.map_page(2 * MiB)[0], 2 * MiB) for _ in range(3)]


def map_scratch(r):
    at, handle = r.map_page(20 * MiB)
    check("cuMemUnmap", r.fns["cuMemUnmap"](at, 20 * MiB))
    check("cuMemRelease", r.fns["cuMemRelease"](handle))
    return [(at, 20 * MiB)]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("result")
    p.add_argument("--cudart", help="this runtime (the stand-in's), not PyTorch's")
    args = p.parse_args()
    fns = driver_functions(args.cudart or mapped_cudart())
    r = Range(fns, 64 * MiB)
    kept = map_weights(r)
    freed = map_scratch(r)
    with open(args.result, "w") as f:
        json.dump({"pid": os.getpid(), "kept": kept, "freed": freed}, f)
    return 0  # the kept pages are still mapped at exit: the exit report holds them


if __name__ == "__main__":
    sys.exit(main())
