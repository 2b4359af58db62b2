#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_verifier_budget.py: the verifier's work per BPF program stays within a budget.

Start-up is dominated by the BPF verifier ("Ready means ready" in design.md): a walk whose
state the verifier cannot merge makes it check the same code hundreds of times, which no
functional test sees (the program still loads, under the 1M-instruction limit) while every
command takes seconds to be ready. The kernel counts what it checked (bpf_prog_info's
verified_insns, Linux 5.16+): each program gpusnoop loads must stay under BUDGET on this
kernel. The stack-carrying programs check ~27k; a verifier-unfriendly walk made them 110k to
560k (2.5 s to be ready instead of 0.3 s).
"""
import ctypes
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Gpusnoop, Workload, expect_eq, main, test  # noqa: E402

BUDGET = 100_000
BPF_PROG_GET_FD_BY_ID = 13
BPF_OBJ_GET_INFO_BY_FD = 15
INFO_NAME = 64           # struct bpf_prog_info: name[16]
INFO_VERIFIED_INSNS = 216
NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


def bpf(cmd, attr):
    return _libc.syscall(321, cmd, attr, len(attr))


def program_ids(pid):
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("prog_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def verified_insns(prog_id):
    """(name, verified_insns) of a loaded program, by its id."""
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("I", attr, 0, prog_id)
    fd = bpf(BPF_PROG_GET_FD_BY_ID, attr)
    if fd < 0:
        return None
    try:
        info = ctypes.create_string_buffer(512)
        attr = ctypes.create_string_buffer(128)
        struct.pack_into("IIQ", attr, 0, fd, len(info), ctypes.addressof(info))
        if bpf(BPF_OBJ_GET_INFO_BY_FD, attr) < 0:
            return None
        name = info.raw[INFO_NAME:INFO_NAME + 16].split(b"\0")[0].decode()
        return name, struct.unpack_from("I", info, INFO_VERIFIED_INSNS)[0]
    finally:
        os.close(fd)


def programs_of(workload, *args, ready="tracing CUDA allocations"):
    """name -> verified_insns of every program gpusnoop ARGS -p (workload) loaded."""
    w = Workload(workload, env=NO_DRIVER)
    g = Gpusnoop(*args, "-p", str(w.pid), "-o", os.devnull)
    try:
        g.wait_stderr(ready)
        progs = dict(filter(None, map(verified_insns, program_ids(g.proc.pid))))
        expect_eq(g.stop(), 0, f"gpusnoop status ({g.stderr_text()})")
    finally:
        g.kill()
        w.kill()
    return progs


def check_budget(progs, must_have):
    for name in must_have:
        assert name in progs, (name, sorted(progs))
    over = {n: v for n, v in progs.items() if v > BUDGET}
    assert not over, f"programs over {BUDGET} verified instructions: {over} (all: {progs})"


@test
def record_programs_verify_within_budget():
    progs = programs_of("gs_leaky", "record", ready="Ctrl-C to stop")
    check_budget(progs, ["mem_alloc_exit", "cuda_launch_ent", "cuda_call_exit"])


@test
def leaks_programs_verify_within_budget():
    progs = programs_of("gs_leaky", "leaks")
    check_budget(progs, ["mem_alloc_exit", "mem_free_exit"])


@test
def leaks_of_a_pytorch_process_verify_within_budget():
    progs = programs_of("gs_torch", "leaks")
    check_budget(progs, ["mem_alloc_exit"])


if __name__ == "__main__":
    main()
