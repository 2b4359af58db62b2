#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_leaks.py: `gpusnoop leaks` against real fixture processes with real BPF."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, GPUSNOOP, LIB, MiB, Gpusnoop, Skip, Workload, expect_eq, main, process,
                     run_gpusnoop, stacks_by_function, test, run_attached)

NO_DRIVER = {"GS_FAKE_CUDA_NO_DRIVER": "1"}


def leaky_expectations(proc):
    """The 'done when' pattern: 4 x 64 MiB from one function, 3 x 8 MiB from another."""
    by_fn = stacks_by_function(proc)
    expect_eq(sorted(by_fn), ["leak_activations", "leak_weights"], "allocating functions")
    w, a = by_fn["leak_weights"], by_fn["leak_activations"]
    expect_eq((w["bytes"], w["allocations"], w["api"]), (256 * MiB, 4, "cudaMalloc"),
              "leak_weights")
    expect_eq((a["bytes"], a["allocations"], a["api"]), (24 * MiB, 3, "cudaMalloc"),
              "leak_activations")
    expect_eq(len(proc["stacks"]), 2, "one stack per allocating loop; churn leaves none")
    expect_eq(proc["stacks"][0]["frames"][0]["symbol"], "leak_weights", "largest stack first")
    expect_eq(proc["outstanding_bytes"], 280 * MiB, "outstanding bytes")
    expect_eq(proc["outstanding_allocations"], 7, "outstanding allocations")
    expect_eq(proc["failed_allocations"], 0, "failed allocations")
    expect_eq(proc["unknown_frees"], 0, "frees of unknown pointers")
    for s in proc["stacks"]:
        expect_eq(s["frames"][1]["symbol"], "main", "caller of the allocating function")
        assert s["frames"][0]["module"].endswith("/gs_leaky"), s["frames"][0]
        assert s["oldest_age_s"] >= 0, s


def attach_by_pid(name, *args, env=None, gs_args=()):
    """Starts a held workload, attaches with -p, runs it to 'done'; returns the final report."""
    w = Workload(name, *args, env=env)
    g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json", *gs_args)
    reports = g.reports()
    expect_eq([r["report"] for r in reports], ["final"], "reports written")
    return w, reports[0], g


@test
def pid_attach_reports_exact_stacks():
    w, report, _ = attach_by_pid("gs_leaky", env=NO_DRIVER)
    leaky_expectations(process(report, w.pid))
    expect_eq(report["dropped_events"], 0, "dropped events")


@test
def runtime_calls_through_driver_count_once():
    # the fake runtime allocates with cuMemAlloc_v2: one user call must be one allocation
    w, report, g = attach_by_pid("gs_leaky")
    assert "libcuda.so.1" in g.stderr_text(), g.stderr_text()
    leaky_expectations(process(report, w.pid))


@test
def command_is_traced_from_its_first_instruction():
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"))
    expect_eq(status, 0, f"gpusnoop status ({err})")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    expect_eq([r["report"] for r in reports], ["exit", "final"], "reports written")
    proc = reports[0]["processes"][0]
    expect_eq(proc["exited"], True, "marked exited")
    expect_eq(proc["comm"], "gs_leaky", "comm")
    leaky_expectations(proc)


@test
def frees_on_another_thread_match():
    w, report, _ = attach_by_pid("gs_threads")
    proc = process(report, w.pid)
    by_fn = stacks_by_function(proc)
    expect_eq(sorted(by_fn), ["keep_on_worker"], "allocating functions")
    expect_eq((by_fn["keep_on_worker"]["bytes"], by_fn["keep_on_worker"]["allocations"]),
              (8 * MiB, 2), "keep_on_worker")
    expect_eq(proc["unknown_frees"], 0, "frees of unknown pointers")


def oom_expectations(proc):
    """gs_oom under a 200 MiB limit: 3 x 32 MiB held, then 1 GiB fails at its return probe."""
    by_fn = stacks_by_function(proc)
    expect_eq(sorted(by_fn), ["fill_device"], "allocating functions")
    expect_eq((by_fn["fill_device"]["bytes"], by_fn["fill_device"]["allocations"]),
              (96 * MiB, 3), "fill_device")
    expect_eq(proc["failed_allocations"], 1, "failed allocations")
    f = proc["failures"]
    expect_eq(len(f), 1, "failure groups")
    expect_eq((f[0]["api"], f[0]["error"], f[0]["error_name"], f[0]["count"],
               f[0]["bytes_requested"]),
              ("cudaMalloc", 2, "cudaErrorMemoryAllocation", 1, 1024 * MiB), "the failure")
    expect_eq(f[0]["frames"][0]["symbol"], "oom_request", "failing function")


@test
def out_of_memory_is_a_failure_with_its_stack():
    w, report, _ = attach_by_pid("gs_oom", env={"GS_FAKE_CUDA_MEM_LIMIT": str(200 * MiB)})
    expect_eq(w.out.lines.count("oom 2"), 1, "workload saw error 2")
    oom_expectations(process(report, w.pid))


def apis_expectations(proc):
    """gs_apis: each allocating API's return probe, and a failing free's."""
    got = {fn: (s["api"], s["bytes"], s["allocations"], s["memory"])
           for fn, s in stacks_by_function(proc).items()}
    expect_eq(got, {
        "use_malloc_async": ("cudaMallocAsync", 1 * MiB, 1, "device"),
        "use_malloc_managed": ("cudaMallocManaged", 2 * MiB, 1, "managed"),
        "use_malloc_pitch": ("cudaMallocPitch", 102400, 1, "device"),
        "use_malloc_host": ("cudaMallocHost", 3 * MiB, 1, "host"),
        "use_host_alloc": ("cudaHostAlloc", 5 * MiB, 1, "host"),
    }, "outstanding allocations (use_free_async and use_free_host freed theirs)")
    # bad_free hands cudaFree a pointer it never allocated: unknown, and the call fails
    expect_eq((proc["unknown_frees"], proc["failed_frees"]), (1, 1), "bad_free")


@test
def every_runtime_api_is_followed():
    w, report, _ = attach_by_pid("gs_apis", env=NO_DRIVER)
    apis_expectations(process(report, w.pid))


@test
def driver_api_is_followed():
    w, report, _ = attach_by_pid("gs_driver")
    proc = process(report, w.pid)
    got = {fn: (s["api"], s["bytes"], s["allocations"])
           for fn, s in stacks_by_function(proc).items()}
    expect_eq(got, {
        "drv_alloc": ("cuMemAlloc_v2", 12 * MiB, 1),
        "drv_alloc_managed": ("cuMemAllocManaged", 4 * MiB, 1),
        "drv_alloc_pitch": ("cuMemAllocPitch_v2", 10240, 1),
    }, "outstanding allocations (drv_churn freed all of its)")


@test
def library_loaded_after_attach_by_pid():
    env = {"GS_CUDART_PATH": os.path.join(LIB, "libcudart.so.13")}
    w = Workload("gs_dlopen", env=env)
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json")
    try:
        g.wait_stderr("no CUDA library loaded yet")
        g.wait_tracing()
        w.release()
        w.wait_line("loaded")
        g.wait_stderr("CUDA functions in " + os.path.join(LIB, "libcudart.so.13"))
        w.release()
        w.wait_line("done")
        expect_eq(g.stop(), 0, "gpusnoop status")
        proc = process(g.reports()[-1], w.pid)
        expect_eq(proc["outstanding_bytes"], 20 * MiB, "outstanding bytes")
        expect_eq({s["frames"][0]["symbol"] for s in proc["stacks"]}, {"late_alloc"},
                  "allocating function")
    finally:
        g.kill()
        w.finish()


@test
def library_loaded_by_command_is_probed_before_use():
    # no handshake: the child is held at the loader's link-map change until probes are in
    env = {"GS_CUDART_PATH": os.path.join(LIB, "libcudart.so.13")}
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_dlopen"), env=env)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    proc = json.loads(out.splitlines()[-1])["processes"][0]
    expect_eq((proc["outstanding_bytes"], proc["outstanding_allocations"]), (20 * MiB, 2),
              "late_alloc's allocations")


@test
def static_cudart_in_the_executable():
    w, report, g = attach_by_pid("gs_static")
    assert "CUDA functions in " + os.path.join(BIN, "gs_static") in g.stderr_text()
    proc = process(report, w.pid)
    by_fn = stacks_by_function(proc)
    expect_eq(sorted(by_fn), ["leak_activations", "leak_weights"], "allocating functions")
    expect_eq(proc["outstanding_bytes"], 280 * MiB, "outstanding bytes")


@test
def all_processes_mode_finds_new_processes():
    g = Gpusnoop("leaks", "-a", "--format", "json")
    w = None
    try:
        g.wait_tracing()
        w = Workload("gs_leaky", env=NO_DRIVER)
        g.wait_stderr("CUDA functions in " + os.path.join(LIB, "libcudart.so.13"))
        w.release()
        w.wait_line("done")
        w.finish()
        w = None
        # the exit of a process it followed produces that process's exit report
        expect_eq(g.stop(), 0, "gpusnoop status")
        exits = [r for r in g.reports() if r["report"] == "exit"]
        assert exits, g.reports()
        leaky_expectations(exits[-1]["processes"][0])
    finally:
        if w:
            w.kill()
        g.kill()


@test
def deleted_executable_still_symbolizes():
    tmp = tempfile.mkdtemp()
    try:
        exe = os.path.join(tmp, "gs_leaky")
        shutil.copy(os.path.join(BIN, "gs_leaky"), exe)
        w = Workload("gs_leaky", exe=exe, env=dict(NO_DRIVER, LD_LIBRARY_PATH=LIB))
        os.unlink(exe)
        g = run_attached(w, "leaks", "-p", str(w.pid), "--format", "json")
        proc = process(g.reports()[-1], w.pid)
        expect_eq(sorted(stacks_by_function(proc)), ["leak_activations", "leak_weights"],
                  "symbols from the deleted file")
    finally:
        shutil.rmtree(tmp)


@test
def real_cudart_without_gpu_reports_failures():
    real = "/usr/local/cuda/lib64/libcudart.so.13"
    if not os.path.exists(real):
        raise Skip("no CUDA toolkit at /usr/local/cuda")
    env = {"LD_LIBRARY_PATH": os.path.dirname(os.path.realpath(real))}
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--",
                                    os.path.join(BIN, "gs_leaky"), env=env)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    assert "CUDA functions in " in err and "libcudart.so.13" in err, err
    proc = json.loads(out.splitlines()[-1])["processes"][0]
    expect_eq(proc["outstanding_allocations"], 0, "allocations (no GPU: none succeed)")
    expect_eq(proc["failed_allocations"], 1, "failed allocations (the workload stops at one)")
    f = proc["failures"][0]
    assert f["error"] in (34, 35, 100), f
    expect_eq(f["frames"][0]["symbol"], "leak_weights", "failing function")


@test
def reports_every_interval_and_on_sigterm():
    w = Workload("gs_leaky", env=NO_DRIVER)
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json", "--interval", "0.3")
    try:
        g.wait_tracing()
        w.release()
        w.wait_line("done")
        import time
        time.sleep(1.0)
        expect_eq(g.stop(signal.SIGTERM), 0, "gpusnoop status")
        kinds = [r["report"] for r in g.reports()]
        assert kinds.count("interval") >= 2, kinds
        expect_eq(kinds[-1], "final", "last report")
        leaky_expectations(process(g.reports()[-1], w.pid))
    finally:
        g.kill()
        w.finish()


@test
def min_age_hides_young_allocations():
    w, report, _ = attach_by_pid("gs_leaky", env=NO_DRIVER, gs_args=("--min-age", "3600"))
    proc = process(report, w.pid)
    expect_eq((proc["stacks"], proc["outstanding_bytes"]), ([], 0), "nothing an hour old")


@test
def top_limits_stacks_shown():
    w, report, _ = attach_by_pid("gs_leaky", env=NO_DRIVER, gs_args=("--top", "1"))
    proc = process(report, w.pid)
    expect_eq((len(proc["stacks"]), proc["stacks_total"]), (1, 2), "stacks shown / total")
    expect_eq(proc["stacks"][0]["frames"][0]["symbol"], "leak_weights", "the largest")


@test
def text_report_for_people():
    w = Workload("gs_leaky", env=NO_DRIVER)
    g = run_attached(w, "leaks", "-p", str(w.pid))
    text = g.stdout.decode()
    assert f"pid {w.pid} (gs_leaky): 280.0 MiB outstanding in 7 allocations" in text, text
    assert "256.0 MiB        4" in text and "24.0 MiB        3" in text, text
    assert "leak_weights+0x" in text and "leak_activations+0x" in text, text


@test
def output_file_gets_the_report():
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "leaks.json")
        status, out, err = run_gpusnoop("leaks", "-o", path, "--format", "json", "--",
                                        os.path.join(BIN, "gs_leaky"), env=NO_DRIVER)
        expect_eq(status, 0, f"gpusnoop status ({err})")
        assert "{" not in out, out  # the workload's own lines only
        with open(path) as f:
            leaky_expectations(json.loads(f.readline())["processes"][0])
    finally:
        shutil.rmtree(tmp)


@test
def bad_input_is_one_clear_error():
    cases = [
        (["leaks", "-p", "12abc"], "invalid pid"),
        (["leaks", "-p", "4194000", "-d", "1"], "no such process"),
        (["leaks", "-d", "1"], "exactly one of"),
        (["leaks", "--", "/nonexistent/cmd"], "cannot run"),
        (["leaks", "--format", "xml", "-a"], "unknown format"),
        (["nosuchcommand"], "unknown command"),
    ]
    for args, text in cases:
        status, out, err = run_gpusnoop(*args)
        assert status != 0, (args, status)
        assert text in err, (args, err)


@test
def process_without_cuda_is_an_error_but_report_is_written():
    w = Workload("gs_dlopen")  # links no CUDA library until told to
    try:
        status, out, err = run_gpusnoop("leaks", "-p", str(w.pid), "-d", "0.5", "--format",
                                        "json")
        expect_eq(status, 1, "status")
        assert "no CUDA library loaded yet" in err and "no target loaded a CUDA library" in err, err
        expect_eq(json.loads(out)["processes"], [], "empty report")
    finally:
        w.kill()


@test
def target_exit_ends_the_session_with_its_report():
    w = Workload("gs_leaky", env=NO_DRIVER)
    g = Gpusnoop("leaks", "-p", str(w.pid), "--format", "json")
    try:
        g.wait_tracing()
        w.release()
        w.wait_line("done")
        w.finish()
        expect_eq(g.wait(), 0, "gpusnoop exits by itself")
        reports = g.reports()
        expect_eq([r["report"] for r in reports], ["exit"], "reports")
        proc = process(reports[0], w.pid)
        expect_eq(proc["exited"], True, "exited")
        leaky_expectations(proc)
    finally:
        g.kill()


@test
def target_that_execs_is_followed_into_its_new_image():
    # sh replaces itself with the workload: same pid, new image, probes follow the exec
    cmd = "exec " + os.path.join(BIN, "gs_leaky")
    status, out, err = run_gpusnoop("leaks", "--format", "json", "--", "/bin/sh", "-c", cmd,
                                    env=NO_DRIVER)
    expect_eq(status, 0, f"gpusnoop status ({err})")
    reports = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    expect_eq([r["report"] for r in reports], ["exit", "final"], "reports")
    proc = reports[0]["processes"][0]
    expect_eq(proc["comm"], "gs_leaky", "comm after exec")
    leaky_expectations(proc)


@test
def without_privileges_the_error_names_the_capabilities():
    if not shutil.which("setpriv"):
        raise Skip("setpriv (util-linux) not installed")
    w = Workload("gs_leaky", env=NO_DRIVER)
    try:
        p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                            "--inh-caps=-all", GPUSNOOP, "leaks", "-p", str(w.pid), "-d", "1"],
                           capture_output=True, text=True, timeout=30)
        expect_eq(p.returncode, 1, "status")
        assert "CAP_BPF" in p.stderr and "CAP_PERFMON" in p.stderr, p.stderr
        expect_eq(len(p.stderr.strip().splitlines()), 1, "one line of error")
    finally:
        w.kill()


@test
def full_ring_buffer_is_counted_and_reported():
    # gpusnoop is stopped while 20000 alloc/free pairs flood a 1 MiB ring buffer
    w = Workload("gs_leaky", env=dict(NO_DRIVER, GS_CHURN="20000"))
    g = Gpusnoop("leaks", "-p", str(w.pid), "--ringbuf", "1")
    try:
        g.wait_tracing()
        os.kill(g.proc.pid, signal.SIGSTOP)
        w.release()
        w.wait_line("done")
        os.kill(g.proc.pid, signal.SIGCONT)
        expect_eq(g.stop(), 0, "gpusnoop status")
        text = g.stdout.decode()
        assert "WARNING:" in text and "events were lost (ring buffer full:" in text, text
    finally:
        g.kill()
        w.finish()
    w = Workload("gs_leaky", env=dict(NO_DRIVER, GS_CHURN="20000"))
    g = Gpusnoop("leaks", "-p", str(w.pid), "--ringbuf", "1", "--format", "json")
    try:
        g.wait_tracing()
        os.kill(g.proc.pid, signal.SIGSTOP)
        w.release()
        w.wait_line("done")
        os.kill(g.proc.pid, signal.SIGCONT)
        expect_eq(g.stop(), 0, "gpusnoop status")
        report = g.reports()[-1]
        assert report["dropped_events"] > 0, report
        expect_eq(report["dropped_events"], report["lost"]["ringbuf_full"], "cause")
    finally:
        g.kill()
        w.finish()


if __name__ == "__main__":
    sys.exit(main())
