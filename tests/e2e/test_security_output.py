#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_security_output.py: outputs never truncated early, never through a name, never partial."""
import glob
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import BIN, GPUSNOOP, TIMEOUT, expect_eq, run_gpusnoop, test
from test_daemon import NOBODY, Daemon, oom_workload, valid_trace


def free_pid():
    """A pid no process has (999999 unless taken)."""
    pid = 999999
    while os.path.exists(f"/proc/{pid}"):
        pid += 1
    return pid


def listing(d):
    return sorted(os.listdir(d))


@test
def bad_pid_leaves_an_existing_output_byte_identical():
    tmp = tempfile.mkdtemp(prefix="gs-out-")
    try:
        precious = os.path.join(tmp, "precious.json")
        data = os.urandom(1 << 20)
        with open(precious, "wb") as f:
            f.write(data)
        os.chmod(precious, 0o640)
        pid = free_pid()
        for cmd in (["record", "-p", str(pid), "-o", precious],
                    ["leaks", "-p", str(pid), "-o", precious],
                    ["profile", "-p", str(pid), "-o", precious]):
            status, out, err = run_gpusnoop(*cmd)
            expect_eq((status, out), (1, ""), f"{cmd[0]} on a missing pid")
            expect_eq(err.strip().splitlines(), [f"gpusnoop: error: pid {pid}: no such process"],
                      f"{cmd[0]}: one line")
            with open(precious, "rb") as f:
                expect_eq(f.read() == data, True, f"{cmd[0]}: precious.json byte-identical")
            expect_eq(listing(tmp), ["precious.json"], f"{cmd[0]}: nothing else created")
        expect_eq(stat.S_IMODE(os.stat(precious).st_mode), 0o640, "its mode")
    finally:
        shutil.rmtree(tmp)


def expect_refused(out_dir, want, sock):
    status, out, err = run_gpusnoop("daemon", "--output-dir", out_dir, "--socket", sock,
                                    "--metrics-addr", "off", timeout=90)
    expect_eq((status, out), (1, ""), f"daemon with output directory {out_dir}")
    # with no --config, the default file's absence is said first (this machine has none)
    lines = [l for l in err.strip().splitlines() if "not there: default settings" not in l]
    expect_eq(lines, [f"gpusnoop: error: output directory {out_dir}: {want}"], "one line")
    expect_eq(listing(out_dir), [], "nothing written into it")
    assert not os.path.exists(sock), "no control socket"


@test
def daemon_refuses_an_output_directory_others_can_write():
    tmp = tempfile.mkdtemp(prefix="gs-out-dir-")
    try:
        sock = os.path.join(tmp, "ctl.sock")
        theirs = os.path.join(tmp, "theirs")
        os.mkdir(theirs, 0o700)
        os.chown(theirs, NOBODY, NOBODY)
        expect_refused(theirs, f"owned by uid {NOBODY}, not by root: refused", sock)
        shared = os.path.join(tmp, "shared")
        os.mkdir(shared)
        os.chmod(shared, 0o777)
        expect_refused(shared, "writable by group or others (mode 0777): refused (chmod go-w)",
                       sock)
        os.chmod(shared, 0o1777)  # sticky does not help: others still add files
        expect_refused(shared, "writable by group or others (mode 1777): refused (chmod go-w)",
                       sock)
    finally:
        shutil.rmtree(tmp)


def children_of(pid):
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    kids.append((int(entry), f.read().split(b"\0")[:-1]))
        except (FileNotFoundError, ProcessLookupError, IndexError):
            pass
    return kids


def temporaries(out_dir):
    return glob.glob(os.path.join(out_dir, ".gpusnoop-*.tmp.*"))


@test
def daemon_recording_child_gets_a_descriptor_and_never_writes_through_a_link():
    d = Daemon()
    w = None
    secret = os.path.join(d.dir, "secret")
    try:
        st = os.stat(d.out)
        expect_eq((st.st_uid, stat.S_IMODE(st.st_mode)), (0, 0o700), "the directory it made")
        with open(secret, "w") as f:
            f.write("root only\n")
        os.chmod(secret, 0o600)
        os.utime(secret, ns=(1_000_000_000, 1_000_000_000))
        w = oom_workload(d)

        status, out, err = d.ctl("record", str(w.pid), "2", "cuda-mem")
        expect_eq(status, 0, f"ctl record ({err})")
        path = out.strip()
        assert os.path.dirname(path) == d.out, path
        # nothing by that name until the recording succeeded
        assert not os.path.lexists(path), path
        # the child writes through a descriptor to a temporary and is given no path
        deadline = time.monotonic() + TIMEOUT
        while True:  # until it ran exec (before, it shows the daemon's command line)
            kids = [(pid, argv) for pid, argv in children_of(d.g.proc.pid) if b"record" in argv]
            if kids or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        expect_eq(len(kids), 1, f"recording children {kids}")
        child, argv = kids[0]
        assert not any(d.out.encode() in a for a in argv), argv
        assert b"-o" not in argv, argv
        fd = argv[argv.index(b"--output-fd") + 1].decode()
        expect_eq(fd.endswith(",gz"), True, f"--output-fd {fd}")
        target = os.readlink(f"/proc/{child}/fd/{fd.split(',')[0]}")
        expect_eq(os.path.dirname(target), d.out, "the descriptor's file")
        assert os.path.basename(target).startswith("." + os.path.basename(path) + ".tmp."), target
        # a link planted at the final name: the trace never goes through it
        os.symlink(secret, path)
        d.g.wait_stderr(f"error: {path}: File exists", timeout=90)
        with open(secret) as f:
            expect_eq(f.read(), "root only\n", "the link's target")
        expect_eq(os.stat(secret).st_mtime_ns, 1_000_000_000, "the link's target's mtime")
        expect_eq(os.readlink(path), secret, "the link, left alone")
        expect_eq(temporaries(d.out), [], "temporaries left")

        # without interference the trace is renamed into place, private
        status, out, err = d.ctl("record", str(w.pid), "1", "cuda-mem")
        expect_eq(status, 0, f"ctl record ({err})")
        path = out.strip()
        d.g.wait_stderr(f"recording done: {path}", timeout=90)
        valid_trace(path)
        st = os.lstat(path)
        expect_eq((stat.S_ISREG(st.st_mode), st.st_uid, stat.S_IMODE(st.st_mode)),
                  (True, 0, 0o600), "the trace file")
        expect_eq(temporaries(d.out), [], "temporaries left")
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()
        shutil.rmtree(d.dir, ignore_errors=True)


@test
def full_disk_fails_with_enospc_and_leaves_no_partial_file():
    mnt = tempfile.mkdtemp(prefix="gs-full-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "gs-full", mnt], check=True,
                   timeout=TIMEOUT)
    try:
        old = os.path.join(mnt, "old.json")
        with open(old, "w") as f:
            f.write("old trace\n")
        for name in ("old.json", "new.json"):
            path = os.path.join(mnt, name)
            status, out, err = run_gpusnoop("record", "-o", path, "--",
                                            os.path.join(BIN, "gs_kernels"), timeout=120)
            expect_eq(status, 1, f"record onto a full disk ({err})")
            assert f"gpusnoop: error: writing {path}: No space left on device" in err, err
            assert "Input/output error" not in err, err
            expect_eq(listing(mnt), ["old.json"], "files on the full disk")
            with open(old) as f:
                expect_eq(f.read(), "old trace\n", "the old trace")
    finally:
        subprocess.run(["umount", mnt], timeout=TIMEOUT)
        os.rmdir(mnt)
