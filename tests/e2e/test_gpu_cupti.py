#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_gpu_cupti.py: which CUPTI the injection library binds in the process it is loaded in."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import LIB, Gpusnoop, Workload, expect_eq, main, test
from test_gpu import (INJECTION, LOAD_TIMEOUT, expect_gpu_rows, expect_linked, gpu_env, gpu_rows,
                      load)

CUPTI12 = os.path.join(LIB, "cupti12", "libcupti.so.12")


def mapped_cuptis(pid):
    """The libcupti files a process maps, by file name."""
    with open(f"/proc/{pid}/maps") as f:
        return sorted({os.path.basename(line.split()[-1]) for line in f
                       if "libcupti" in line.split()[-1]})


def record_attached(w, *options):
    """`record -e gpu [options] -p` of a held workload, released and run to its end: the
    trace, the CUPTI files it mapped, and gpusnoop's stderr."""
    out = os.path.join(tempfile.mkdtemp(), "gpu.json")
    g = Gpusnoop("record", "-e", "gpu", *options, "-p", str(w.pid), "-o", out)
    try:
        g.wait_stderr("Ctrl-C to stop", LOAD_TIMEOUT)
        w.release()
        w.wait_line("done")
        maps = mapped_cuptis(w.pid)
        expect_eq(w.finish(), 0, "workload status")
        expect_eq(g.wait(), 0, f"record status; stderr:\n{g.stderr_text()}")
    finally:
        w.kill()
        g.kill()
    trace, _ = load(out)
    return trace, maps, g.stderr_text()


def expect_cuptis_own_clock(trace):
    """The stand-in as a CUDA 12 CUPTI has 12.6 Update 2 to 13.0's bug: with a timestamp
    callback its kernel records have no times. So the library keeps CUPTI's clock
    (CLOCK_REALTIME) and gpusnoop shifts it onto the trace's: every row above is in place
    (expect_linked: no kernel before its launch), and the checks say how well."""
    clock = trace["metadata"]["gpu"]["clock"]
    expect_eq(clock["method"], "cupti_clock_realtime_shifted", "clock method")
    expect_eq(trace["metadata"]["gpu"]["no_timestamps"], 0, "records without times")
    assert clock["checks"] >= 1 and clock["max_error_ns"] < 10_000_000, clock


@test
def gpu_library_uses_the_cupti_the_process_already_maps():
    """PyTorch maps the libcupti.so.N of its own CUDA before the driver starts: the library
    binds that one (the stand-in as a CUDA 12 CUPTI: its soname, CUDA 12.4's shorter kernel
    and memcpy records), and no second CUPTI is loaded beside it."""
    w = Workload("gs_gpu", env=gpu_env(CUDA_INJECTION64_PATH=INJECTION, LD_PRELOAD=CUPTI12))
    trace, maps, _ = record_attached(w)
    expect_eq(maps, ["libcupti.so.12"], "CUPTI files mapped")
    expect_gpu_rows(trace)
    expect_linked(trace, w.pid)
    expect_cuptis_own_clock(trace)


@test
def gpu_library_loads_a_cupti_when_the_process_has_none():
    w = Workload("gs_gpu", env=gpu_env(CUDA_INJECTION64_PATH=INJECTION))
    trace, maps, _ = record_attached(w)
    expect_eq(maps, ["libcupti.so.13"], "CUPTI files mapped")
    expect_gpu_rows(trace)


@test
def gpu_library_uses_the_cupti_its_variable_names():
    """GPUSNOOP_CUPTI_LIBRARY=PATH picks the CUPTI (how the tests pair a real PyTorch, which
    maps NVIDIA's CUPTI, with the stand-in GPU); a path that does not load is one line on the
    process's stderr and no GPU rows, and the process goes on."""
    w = Workload("gs_gpu", env=gpu_env(CUDA_INJECTION64_PATH=INJECTION,
                                        GPUSNOOP_CUPTI_LIBRARY=CUPTI12))
    trace, maps, _ = record_attached(w)
    expect_eq(maps, ["libcupti.so.12"], "CUPTI files mapped")
    expect_gpu_rows(trace)
    w = Workload("gs_gpu", env=gpu_env(CUDA_INJECTION64_PATH=INJECTION,
                                        GPUSNOOP_CUPTI_LIBRARY="/nonexistent/libcupti.so"))
    trace, maps, err = record_attached(w)
    expect_eq((maps, gpu_rows(trace)), ([], []), "no CUPTI, no GPU rows")
    assert "GPU records: none: no traced process started CUDA with the injection library" \
        in err, err
    errs = [line for line in w.proc.stderr.read().decode().splitlines() if "gpusnoop-cupti" in line]
    expect_eq(errs, ["gpusnoop-cupti: GPUSNOOP_CUPTI_LIBRARY: /nonexistent/libcupti.so: cannot "
                     "open shared object file: No such file or directory; no GPU activity for "
                     "gpusnoop"], "the library's one line")


@test
def gpu_inject_says_why_the_library_set_up_nothing():
    """--inject into a process whose library cannot start CUPTI: gpusnoop reports the
    library's own reason on its stderr, and the process goes on to exit 0."""
    bad = "/nonexistent/libcupti.so"
    w = Workload("gs_gpu", env=gpu_env(GPUSNOOP_CUPTI_LIBRARY=bad))
    trace, _, err = record_attached(w, "--inject")
    expect_eq([line for line in err.splitlines() if "--inject" in line],
              [f"gpusnoop: warning: --inject: pid {w.pid}: the library set up no GPU activity: "
               f"GPUSNOOP_CUPTI_LIBRARY: {bad}: cannot open shared object file: No such file or "
               "directory"], "gpusnoop's line")
    expect_eq(gpu_rows(trace), [], "no GPU rows")


if __name__ == "__main__":
    main()
