#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_security_daemon.py: what an unprivileged local user can do to `gpusnoop daemon`."""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, TIMEOUT, LineReader, Workload, expect_eq,  # noqa: E402
                     run_gpusnoop, test)
from test_daemon import NOBODY, OOM_ENV, Daemon, config_file  # noqa: E402

PYTHON = "/usr/bin/python3"  # Debian's: nobody may run it

# A client of the control socket, as nobody. "drip": sends one byte every 0.3 s; "silent":
# sends nothing and reads nothing. It prints its progress; on "?" from stdin it says whether
# the daemon has answered it yet (peeking, so a silent client still reads nothing); on "read"
# it reads to the end and prints what came and how the connection ended.
CLIENT = r"""
import select, socket, sys
mode, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX)
s.connect(path)
s.setblocking(False)
print("connected", flush=True)
sent, got, end = 0, b"", None
def answered():
    try:
        return bool(s.recv(1, socket.MSG_PEEK))
    except BlockingIOError:
        return False
    except OSError:
        return True
def read_all():
    global got, end
    while end is None:
        select.select([s], [], [], 5)
        try:
            chunk = s.recv(4096)
        except BlockingIOError:
            continue
        except OSError as e:
            end = type(e).__name__
            break
        if not chunk:
            end = "eof"
        got += chunk
while True:
    ready, _, _ = select.select([sys.stdin], [], [], 0.3)
    if ready:
        cmd = sys.stdin.readline().strip()
        if cmd == "?":
            print("answered" if answered() else "pending", flush=True)
        elif cmd == "read":
            read_all()
            print("reply %r %s" % (got.decode(), end), flush=True)
            break
        else:
            break
    elif mode == "drip" and not answered():
        try:
            s.send(b"s")
            sent += 1
            print("sent %d" % sent, flush=True)
        except OSError as e:
            print("send failed: %s" % e, flush=True)
"""


def as_nobody():
    os.setgroups([])
    os.setgid(65534)
    os.setuid(NOBODY)


class Client:
    """A CLIENT process as nobody."""

    def __init__(self, mode, sock):
        self.proc = subprocess.Popen([PYTHON, "-c", CLIENT, mode, sock], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, preexec_fn=as_nobody)
        self.out = LineReader(self.proc.stdout)
        self.out.wait_for(lambda l: l == "connected", "client connected")

    def ask(self, cmd):
        """The client's answer to cmd ("?" or "read")."""
        want = ("pending", "answered") if cmd == "?" else ("reply ",)
        self.proc.stdin.write(cmd.encode() + b"\n")
        self.proc.stdin.flush()
        return self.out.wait_for(lambda l: l.startswith(want), f"client's answer to {cmd!r}")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(TIMEOUT)


def status_while(d, client):
    """Root's `ctl status` with client connected; then whether client was answered yet."""
    status, out, err = d.ctl("status")
    state = client.ask("?")
    expect_eq(status, 0, f"ctl status beside the client ({err})")
    assert out.startswith("gpusnoop daemon "), out
    return state


@test
def daemon_ctl_dripping_client_stalls_no_one():
    d = Daemon()
    c = None
    try:
        c = Client("drip", d.sock)
        c.out.wait_for(lambda l: l == "sent 1", "first byte dripped")
        # root is answered while the dripper's request is still open: the dripper itself says
        # it has no reply yet. Before, the daemon read the dripper to its end first.
        expect_eq(status_while(d, c), "pending", "dripper answered before root's status")
        # its line as a whole had one deadline: an error line, then an orderly end
        expect_eq(c.ask("read"), "reply 'error: request timed out\\n' eof", "dripper's reply")
        d.stop()
    finally:
        if c:
            c.kill()
        d.g.kill()
        shutil.rmtree(d.dir, ignore_errors=True)


@test
def daemon_ctl_silent_client_stalls_no_one():
    d = Daemon()
    c = None
    try:
        # connects, then neither sends nor reads: before, the daemon waited on it first
        c = Client("silent", d.sock)
        expect_eq(status_while(d, c), "pending", "silent client answered before root's status")
        status, out, err = d.ctl("status", uid=NOBODY)
        expect_eq(status, 0, f"nobody's own status beside it ({err})")
        expect_eq(c.ask("read"), "reply 'error: request timed out\\n' eof",
                  "silent client's reply")
        d.stop()
    finally:
        if c:
            c.kill()
        d.g.kill()
        shutil.rmtree(d.dir, ignore_errors=True)


@test
def daemon_config_periods_out_of_range_are_refused():
    tmp = tempfile.mkdtemp(prefix="gs-daemon-range-")
    conf = os.path.join(tmp, "gpusnoop.conf")
    try:
        for line, why in [
            ("schedule every 0.0000000001s record 1s",
             "schedule period '0.0000000001s' is out of range (1s to 30d)"),
            ("schedule every 1e300s record 1s",
             "schedule period '1e300s' is out of range (1s to 30d)"),
            ("schedule every 1m record 1e300",
             "recording length '1e300' is out of range (0.1s to 24h)"),
            ("oom-record 1e20h", "recording length '1e20h' is out of range (0.1s to 24h)"),
            ("trigger-interval 1e308", "trigger interval '1e308' is out of range (0 to 30d)"),
        ]:
            with open(conf, "w") as f:
                f.write(f"# {line}\n{line}\n")
            # before: the first spun the main loop and the rest overflowed a conversion
            status, out, err = run_gpusnoop("daemon", "--config", conf, "--output-dir",
                                            os.path.join(tmp, "out"), "--socket",
                                            os.path.join(tmp, "sock"), "--metrics-addr", "off")
            expect_eq((status, out), (1, ""), f"daemon with {line!r}")
            expect_eq(err.strip(), f"gpusnoop: error: {conf}:2: {why}", f"error for {line!r}")
            assert not os.path.exists(os.path.join(tmp, "out")), "nothing started"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


class NobodyWorkload(Workload):
    """A fixture workload run as nobody."""

    def __init__(self, name, env):
        self.proc = subprocess.Popen([os.path.join(BIN, name), "--hold"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env=dict(os.environ, **env), preexec_fn=as_nobody)
        self.out = LineReader(self.proc.stdout)
        self.out.wait_for(lambda l: l.startswith("ready "), "workload ready")
        self.pid = self.proc.pid


@test
def daemon_ctl_per_user_limits():
    tmp, conf = config_file("gs-daemon-user-", "user-max-bytes 1  # a user's newest file only\n")
    d = Daemon("--config", conf)
    w = None
    try:
        w = NobodyWorkload("gs_oom", OOM_ENV)
        d.wait_probed()
        w.release()
        w.wait_line("oom 2")
        d.g.wait_stderr(f"pid {w.pid} (gs_oom): cuda-oom: report")
        paths = []
        for _ in range(2):
            status, out, err = d.ctl("record", str(w.pid), "600", "cuda-mem", uid=NOBODY)
            expect_eq(status, 0, f"nobody's recording ({err})")
            paths.append(out.strip())
        for p in paths:  # the file says who asked
            assert p.startswith(os.path.join(d.out, "gpusnoop-user65534-record-")), paths
        # a third would hold more of the daemon's recording slots than one user may
        status, out, err = d.ctl("record", str(w.pid), "600", "cuda-mem", uid=NOBODY)
        expect_eq((status, out), (1, ""), "nobody's third recording")
        expect_eq(err, "gpusnoop: error: at most 2 recordings per user at once; "
                  "2 of yours are running\n", "nobody's third recording refused")
        # root is not limited, and root's file keeps its plain name
        status, out, err = d.ctl("record", str(w.pid), "600", "cuda-mem")
        expect_eq(status, 0, f"root's recording ({err})")
        assert out.startswith(os.path.join(d.out, "gpusnoop-record-")), out
        # lengths are range-checked before anything starts: a usage error, as ctl's others
        status, _, err = d.ctl("record", str(w.pid), "nan", uid=NOBODY)
        expect_eq((status, err), (64, "gpusnoop: error: 'nan' is not a recording length in "
                                     "seconds (0.1 to 3600)\n"), "record nan")

        # a user's snapshots stay within that user's budget, and never cost the OOM report
        oom_reports = d.reports("cuda-oom-*")
        expect_eq(len(oom_reports), 2, f"OOM report (.txt, .json): {oom_reports}")
        for _ in range(3):
            status, out, err = d.ctl("snapshot", str(w.pid), uid=NOBODY)
            expect_eq(status, 0, f"nobody's snapshot ({err})")
            assert out.startswith(os.path.join(d.out, "gpusnoop-user65534-snapshot-")), out
        expect_eq(len(glob.glob(os.path.join(d.out, "gpusnoop-user65534-*"))), 1,
                  f"nobody's files under a 1-byte budget: {os.listdir(d.out)}")
        expect_eq(d.reports("cuda-oom-*"), oom_reports, "OOM report kept")
        status, out, err = d.ctl("snapshot", str(w.pid))
        expect_eq(status, 0, f"root's snapshot ({err})")
        expect_eq(len(d.reports("snapshot-*")), 2, "root's snapshot, not limited")
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()
        shutil.rmtree(d.dir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def scrape(url):
    """The metrics text, or the name of the error the client got."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read().decode()
    except (OSError, urllib.error.URLError) as e:
        return type(e).__name__


@test
def daemon_metrics_allow_limits_who_scrapes():
    status, out, _ = run_gpusnoop("daemon", "--help")
    expect_eq(status, 0, "daemon --help")
    assert "pid and comm to whoever can connect" in " ".join(out.split()), out
    tmp, conf = config_file("gs-daemon-metrics-", "metrics-allow 192.0.2.1  # not this host\n")
    d = Daemon("--config", conf)
    try:
        # refused at accept, before a byte of the request is read
        got = scrape(d.metrics_url)
        assert "gpusnoop_" not in got, got
        with open(conf, "w") as f:
            f.write("metrics-allow 10.0.0.0/8,127.0.0.1\n")
        d.g.proc.send_signal(signal.SIGHUP)
        d.g.wait_stderr("configuration reloaded")
        line = [l for l in d.g.err.lines if "metrics on http://" in l][-1]
        got = scrape(re.search(r"(http://\S+/metrics)", line).group(1))
        assert "gpusnoop_" in got, got
        d.stop()
    finally:
        d.g.kill()
        shutil.rmtree(d.dir, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
