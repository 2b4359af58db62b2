#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_daemon_config.py: the daemon's settings (every row of its table), --check-config, the
installed default config and systemd unit, the unit's sandbox, and requests refused up front."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, GPUSNOOP, LIB, NOBODY, ROOT, TIMEOUT, AS_NOBODY, Gpusnoop, LineReader,
                     Workload, expect_eq, run_gpusnoop, test)
from test_daemon import OOM_ENV, Daemon, oom_workload

EVENT_NAMES = ("cuda-mem, cuda-launch, cuda-launch-latency, cuda-sync, cuda-memcpy, torch-mem, "
               "cpu, gpu, nvtx")

# Every setting of the daemon's table: a good value, a bad one and the bad one's message. The
# names are read from gpusnoop.conf(5) as the binary makes it, so a new row without data here
# fails the test. "{dir}" is the test's directory.
SETTINGS = {
    "output-dir": ("{dir}/out2", "relative/dir", "'relative/dir' is not an absolute path"),
    "socket": ("{dir}/ctl2.sock", "/" + "s" * 120, "socket path longer than 107 bytes"),
    "metrics-addr": ("off", "nowhere", "'nowhere' is not HOST:PORT (or off)"),
    "metrics-allow": ("127.0.0.1,::1,10.0.0.0/8", "10.0.0.0/33",
                      "'10.0.0.0/33' is not an address or ADDRESS/BITS"),
    "user-max-recordings": ("3", "17", "'17' is not a number of recordings (0 to 16)"),
    "user-max-bytes": ("32M", "0", "'0' is not a size (e.g. 64M)"),
    "output-max-bytes": ("2G", "12Q", "'12Q' is not a size (e.g. 64M)"),
    "oom-reports": ("off", "maybe", "'maybe' is not on or off"),
    "trigger-interval": ("5m", "31d", "trigger interval '31d' is out of range (0 to 30d)"),
    "torch": ("on", "perhaps", "'perhaps' is not on or off"),
    "cuda-call-metrics": ("off", "2", "'2' is not on or off"),
    "stack-sample": ("1", "0", "'0' is not a count from 1 to 1000000"),
    "top": ("5", "-1", "'-1' is not a stack count"),
    "schedule": ("every 1h record 10s events=cuda-mem,cpu keep=3",
                 "every 1h record 10s events=cuda-mem,cuda-foo",
                 f"'cuda-foo' is not an event ({EVENT_NAMES})"),
    "flight-recorder": ("10s", "2h", "flight recorder window '2h' is out of range (1s to 1h)"),
    "oom-record": ("5s events=cuda-launch,gpu", "5s events=cpu,gpus",
                   f"'gpus' is not an event ({EVENT_NAMES})"),
    "trace-format": ("perfetto", "protobuf",
                     "'protobuf' is not a trace format (json or perfetto)"),
    "ringbuf": ("8", "3",
                "'3' is not a ring buffer size (MiB, a power of 2 from 1 to 1024)"),
}


def doc_settings():
    """The setting names gpusnoop.conf(5) lists, in its order."""
    status, out, err = run_gpusnoop("daemon", "--print-config-doc")
    expect_eq(status, 0, f"--print-config-doc ({err})")
    return [n.replace("\\-", "-") for n in re.findall(r'^\.BI (\S+) "', out, re.M)]


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def count_lines(g, text):
    return sum(text in l for l in g.err.lines)


def wait_count(g, text, n, timeout=TIMEOUT):
    """Waits until text is in n of g's stderr lines (earlier ones count too)."""
    deadline = time.monotonic() + timeout
    while count_lines(g, text) < n:
        left = deadline - time.monotonic()
        if left <= 0 or g.err._fill(left) is None:
            raise AssertionError(f"waiting for {n} x {text!r}; got {g.err.lines!r}")


@test
def daemon_config_every_setting_good_and_bad_at_load_reload_and_check():
    names = doc_settings()
    expect_eq(sorted(names), sorted(SETTINGS), "settings of the table with test data here")
    tmp = tempfile.mkdtemp(prefix="gs-daemon-settings-")
    conf = os.path.join(tmp, "gpusnoop.conf")
    base = (f"output-dir {tmp}/out\nsocket {tmp}/ctl.sock\nmetrics-addr 127.0.0.1:0\n"
            "# line 4 is the setting under test\n")
    good = {n: v[0].format(dir=tmp) for n, v in SETTINGS.items()}

    # every good value at once: checked, then loaded by a daemon that starts
    write(conf, base + "".join(f"{n} {v}\n" for n, v in good.items()))
    status, out, err = run_gpusnoop("daemon", "--check-config", conf)
    expect_eq((status, out, err.strip()), (0, "", f"gpusnoop: {conf}: valid"), "good values")
    g = Gpusnoop("daemon", "--config", conf)
    try:
        g.wait_stderr("daemon: following every CUDA process", timeout=60)
        write(conf, base)
        g.proc.send_signal(signal.SIGHUP)
        wait_count(g, "configuration reloaded", 1)
        for i, name in enumerate(names):
            _, bad, msg = SETTINGS[name]
            line = f"gpusnoop: error: {conf}:5: {msg}"
            write(conf, base + f"{name} {bad}\n")
            status, out, err = run_gpusnoop("daemon", "--check-config", conf)
            expect_eq((status, out, err.strip()), (1, "", line), f"--check-config, bad {name}")
            status, out, err = run_gpusnoop("daemon", "--config", conf)
            expect_eq((status, out, err.strip()), (1, "", line), f"start, bad {name}")
            g.proc.send_signal(signal.SIGHUP)
            wait_count(g, line, 1)
            wait_count(g, "reload: keeping the running configuration", i + 1)

            write(conf, base + f"{name} {good[name]}\n")
            status, _, err = run_gpusnoop("daemon", "--check-config", conf)
            expect_eq(status, 0, f"--check-config, good {name} ({err})")
            g.proc.send_signal(signal.SIGHUP)
            wait_count(g, "configuration reloaded", i + 2)
        assert g.proc.poll() is None, "daemon still running"
        expect_eq(count_lines(g, "unchanged: read at start only"), 0, "start-only warnings")
        expect_eq(g.stop(), 0, f"daemon status ({g.stderr_text()})")
    finally:
        g.kill()

    # a missing --config is an error; a missing file is not valid either
    status, _, err = run_gpusnoop("daemon", "--check-config", os.path.join(tmp, "none"))
    expect_eq((status, err.strip()),
              (1, f"gpusnoop: error: {tmp}/none: No such file or directory"), "missing file")


@test
def daemon_config_without_config_reads_etc_or_says_defaults():
    """No --config: /etc/gpusnoop.conf when there is one, else the defaults and one line."""
    tmp = tempfile.mkdtemp(prefix="gs-daemon-etc-")
    # a private /etc, empty, then with a config in it: the host's stays as it is
    script = ('set -e; mount -t tmpfs none /etc; "$@" || echo "status $?"; '
              'echo "top x" >/etc/gpusnoop.conf; "$@" || echo "status $?"')
    p = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", GPUSNOOP, "daemon",
                        "--output-dir", "relative"],
                       capture_output=True, timeout=TIMEOUT)
    lines = p.stderr.decode().strip().splitlines()
    expect_eq(lines, ["gpusnoop: /etc/gpusnoop.conf: not there: default settings "
                      "(see gpusnoop.conf(5))",
                      "gpusnoop: error: --output-dir: 'relative' is not an absolute path",
                      "gpusnoop: error: /etc/gpusnoop.conf:1: 'x' is not a stack count"],
              "without --config: defaults, then the file at /etc")
    expect_eq(p.stdout.decode().split("\n")[:2], ["status 1", "status 1"], "statuses")


def installed(prefix="/usr"):
    """make install into a fresh DESTDIR: its path."""
    dest = tempfile.mkdtemp(prefix="gs-install-", dir=os.path.join(ROOT, ".output"))
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "install",
                        f"DESTDIR={dest}", f"PREFIX={prefix}"], capture_output=True, timeout=300)
    expect_eq(p.returncode, 0, f"make install ({p.stderr.decode()})")
    return dest


def unit_exec_start(dest):
    """The installed unit's ExecStart, its paths under DESTDIR."""
    with open(os.path.join(dest, "usr/lib/systemd/system/gpusnoop.service")) as f:
        unit = f.read()
    cmd = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1).split()
    expect_eq(cmd[:4], ["/usr/bin/gpusnoop", "daemon", "--config", "/etc/gpusnoop.conf"],
              "ExecStart")
    return [dest + cmd[0]] + cmd[1:3] + [dest + cmd[3]], unit


def scrape(url):
    with urllib.request.urlopen(url, timeout=5) as r:
        expect_eq(r.status, 200, "metrics HTTP status")
        return r.read().decode()


@test
def daemon_config_make_install_default_config_starts_the_unit_command():
    dest = installed()
    try:
        conf = os.path.join(dest, "etc/gpusnoop.conf")
        status, default, _ = run_gpusnoop("daemon", "--print-default-config")
        with open(conf) as f:
            expect_eq(f.read(), default, "installed config: the table's defaults")
        cmd, unit = unit_exec_start(dest)
        status, _, err = run_gpusnoop("daemon", "--check-config", conf)
        expect_eq(status, 0, f"--check-config of the installed file ({err})")

        # the unit's command as it is, with this test's own socket, directory and port
        run = tempfile.mkdtemp(prefix="gs-unit-")
        g = subprocess.Popen(cmd + ["--output-dir", f"{run}/out", "--socket", f"{run}/s",
                                    "--metrics-addr", "127.0.0.1:0"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        err = LineReader(g.stderr)
        try:
            line = err.wait_for(lambda l: "metrics on http://" in l, "metrics", 60)
            err.wait_for(lambda l: "following every CUDA process" in l, "start", 60)
            m = scrape(re.search(r"(http://\S+/metrics)", line).group(1))
            assert re.search(r"^gpusnoop_processes \d+$", m, re.M), m
            g.send_signal(signal.SIGINT)
            expect_eq(g.wait(TIMEOUT), 0, f"daemon status ({err.drain()})")
        finally:
            if g.poll() is None:
                g.kill()
                g.wait()

        # a second install leaves an edited config alone
        with open(conf, "a") as f:
            f.write("top 3\n")
        p = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "install",
                            f"DESTDIR={dest}", "PREFIX=/usr"], capture_output=True,
                           timeout=300)
        expect_eq(p.returncode, 0, "make install again")
        assert "gpusnoop.conf exists: left as it is" in p.stderr.decode(), p.stderr
        with open(conf) as f:
            assert f.read().endswith("top 3\n"), "edited config replaced"

        # systemd's own check of the unit, its commands at their DESTDIR paths: no warning
        udir = tempfile.mkdtemp(prefix="gs-unit-verify-")
        write(os.path.join(udir, "gpusnoop.service"),
              unit.replace("/usr/bin/gpusnoop", dest + "/usr/bin/gpusnoop")
              .replace("/etc/gpusnoop.conf", conf))
        p = subprocess.run(["systemd-analyze", "verify", os.path.join(udir, "gpusnoop.service")],
                           capture_output=True, timeout=120,
                           env=dict(os.environ, MANPATH=os.path.join(dest, "usr/share/man")))
        expect_eq((p.returncode, p.stderr.decode()), (0, ""), "systemd-analyze verify")

        # gpusnoop.conf(5) renders clean and documents every setting with its default
        p = subprocess.run(["man", "--warnings=w", "-l",
                            os.path.join(dest, "usr/share/man/man5/gpusnoop.conf.5")],
                           capture_output=True, timeout=TIMEOUT,
                           env=dict(os.environ, MANWIDTH="80", MANPAGER="cat", PAGER="cat",
                                    LC_ALL="C.UTF-8"))
        expect_eq((p.returncode, p.stderr.decode()), (0, ""), "man gpusnoop.conf")
        page = p.stdout.decode()
        for name in SETTINGS:
            assert re.search(rf"^ {{7}}{name} ", page, re.M), f"{name} in:\n{page}"
        assert "Default: /var/lib/gpusnoop" in page and "Reload:" in page, page
    finally:
        shutil.rmtree(dest, ignore_errors=True)


# systemd's capability names as setpriv spells them
def unit_caps(unit):
    caps = re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M)
    assert caps, "the unit limits capabilities"
    return ",".join(["-all"] + ["+" + c.lower()[4:] for c in caps.group(1).split()])


# The unit's sandbox outside systemd, line by line: ProtectSystem=strict and ProtectHome=
# read-only (every mount read-only but the API file systems, the state directory and the
# socket's directory writable: ReadWritePaths), PrivateTmp (a fresh /tmp and /var/tmp),
# ProtectKernelTunables and ProtectControlGroups (/sys and /proc/sys read-only), then
# NoNewPrivileges and CapabilityBoundingSet by setpriv. A checkout under /tmp or /var/tmp (CI's
# may be) is carried over the fresh /tmp through /mnt, as an installed daemon lives in /usr.
SANDBOX = r'''set -e
state=$1 run=$2 caps=$3 checkout=$4; shift 4
mount --bind "$state" "$state"
mount --bind "$run" "$run"
case "$checkout" in /tmp/*|/var/tmp/*) mount --rbind "$checkout" /mnt ;; *) checkout= ;; esac
findmnt -rn -o TARGET | while read -r m; do
	case "$m" in /proc|/proc/*|/dev|/dev/*|"$state"|"$run"|/mnt/*) continue ;; esac
	mount -o remount,bind,ro "$m"
done
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp
if [ -n "$checkout" ]; then
	mkdir -p "$checkout"
	mount --rbind /mnt "$checkout"
fi
mount --bind /proc/sys /proc/sys
mount -o remount,bind,ro /proc/sys
exec setpriv --no-new-privs --bounding-set="$caps" --inh-caps=-all -- "$@"
'''


CONTAINER = r'''set -e
mount -t tmpfs -o mode=0700,uid=65534,gid=65534 none "$1"
mkdir "$1/bin"
cp "$2" "$1/bin/gs_oom"
ln -s "$3" "$1/lib"
exec "$1/bin/gs_oom" --hold
'''


def sandboxed_daemon(caps):
    """The unit's sandbox with caps (setpriv's form) around the daemon: a container's OOM is
    reported with its stack named, shown in the metrics, and recorded through ctl; raises
    AssertionError on the first that is not so."""
    # outside /tmp, which the sandbox replaces
    top = tempfile.mkdtemp(prefix="gs-sandbox-", dir=os.path.join(ROOT, ".output"))
    os.chmod(top, 0o755)
    state, run, ns = (os.path.join(top, d) for d in ("state", "run", "container"))
    os.mkdir(state, 0o700)
    os.mkdir(run, 0o755)
    os.mkdir(ns)
    sock = os.path.join(run, "gpusnoop.sock")
    g = subprocess.Popen(["unshare", "-m", "sh", "-c", SANDBOX, "sh", state, run, caps, ROOT,
                          GPUSNOOP, "daemon", "--output-dir", f"{state}/out", "--socket", sock,
                          "--metrics-addr", "127.0.0.1:0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    err = LineReader(g.stderr)
    w = None
    try:
        line = err.wait_for(lambda l: "metrics on http://" in l, "metrics", 60)
        err.wait_for(lambda l: "following every CUDA process" in l, "start", 60)
        status = open(f"/proc/{g.pid}/status").read()  # the shell exec'd into setpriv, gpusnoop
        expect_eq(re.search(r"^NoNewPrivs:\s+(\d)", status, re.M).group(1), "1", "no new privs")
        # a container's process, with every capability (as training jobs often are), its
        # program in its own mount namespace (the host's path is an empty directory) in a
        # directory only another user may enter: the daemon reads it through /proc/PID/root
        # with CAP_SYS_PTRACE (its capabilities are no superset of the process's) and
        # CAP_DAC_READ_SEARCH; without either, the stack has no names
        w = subprocess.Popen(["unshare", "-m", "sh", "-c", CONTAINER, "sh", ns,
                              os.path.join(BIN, "gs_oom"), LIB],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=dict(os.environ, **OOM_ENV))
        out = LineReader(w.stdout)
        out.wait_for(lambda l: l.startswith("ready "), "workload ready")
        err.wait_for(lambda l: f"CUDA functions in {os.path.join(LIB, 'libcudart.so.13')}" in l,
                     "probes", 60)
        os.kill(w.pid, signal.SIGUSR1)
        out.wait_for(lambda l: l.startswith("oom 2"), "the OOM")
        report = err.wait_for(lambda l: f"pid {w.pid} (gs_oom): cuda-oom: report" in l,
                              "report", 30).split(": report ")[1]
        with open(report) as f:
            frames = json.load(f)["trigger"]["frames"]
        expect_eq([f["symbol"] for f in frames[:2]], ["oom_request", "main"],
                  "the failing call's stack, named")
        url = re.search(r"(http://\S+/metrics)", line).group(1)
        deadline = time.monotonic() + 5  # refreshed every second
        while f'pid="{w.pid}"' not in scrape(url) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert f'pid="{w.pid}"' in scrape(url), "the process in the metrics"
        p = subprocess.run([GPUSNOOP, "ctl", "--socket", sock, "record", str(w.pid), "1"],
                           capture_output=True, timeout=TIMEOUT)
        expect_eq(p.returncode, 0, f"ctl record ({p.stderr.decode()})")
        trace = p.stdout.decode().strip()
        err.wait_for(lambda l: f"recording done: {trace}" in l, "the recording", 60)
        assert os.path.getsize(trace) > 0, trace
        g.send_signal(signal.SIGINT)
        expect_eq(g.wait(TIMEOUT), 0, f"daemon status ({err.drain()})")
    finally:
        for p in (g, w):
            if p and p.poll() is None:
                p.kill()
                p.wait()
        shutil.rmtree(top, ignore_errors=True)


@test
def daemon_config_unit_sandbox_and_capabilities_still_work():
    with open(os.path.join(ROOT, "scripts/deploy/gpusnoop.service")) as f:
        unit = f.read()
    for line in ("NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/run",
                 "ProtectHome=read-only", "PrivateTmp=yes", "ProtectKernelTunables=yes",
                 "ProtectControlGroups=yes"):
        assert f"\n{line}\n" in unit, f"{line} in the unit"
    caps = unit_caps(unit)
    sandboxed_daemon(caps)
    # and each capability is needed: without it the daemon does not start (no BPF), or the
    # container's program is out of its reach (no names), not merely slower
    for cap in caps.split(",")[1:]:
        try:
            sandboxed_daemon(caps.replace("," + cap, ""))
        except AssertionError as e:
            assert ("stream closed before metrics" in str(e) or
                    "the failing call's stack, named" in str(e)), f"without {cap[1:]}: {e}"
            continue
        raise AssertionError(f"the daemon works without {cap[1:]}: drop it from the unit")


@test
def daemon_config_bad_events_refused_up_front_and_failures_say_why():
    d = Daemon()
    w = None
    try:
        w = oom_workload(d)
        status, out, err = d.ctl("record", str(w.pid), "1", "cuda-foo")
        expect_eq((status, out, err.strip()),
                  (64, "", f"gpusnoop: error: 'cuda-foo' is not an event ({EVENT_NAMES})"),
                  "ctl record with an unknown event: a usage error")
        status, out, err = d.ctl("record", str(w.pid), "1", "cuda-mem,,cpu")
        expect_eq((status, out), (64, ""), f"ctl record with an empty event name ({err})")

        # a recording that fails says why in the daemon's log: here its trace cannot grow
        # past the 100 bytes the daemon's file size limit leaves (the daemon writes no file)
        subprocess.run(["prlimit", "--pid", str(d.g.proc.pid), "--fsize=100:unlimited"],
                       check=True, timeout=TIMEOUT)
        status, out, err = d.ctl("record", str(w.pid), "1")
        expect_eq(status, 0, f"ctl record ({err})")
        line = d.g.wait_stderr(f"recording {out.strip()} failed: ", timeout=60)
        expect_eq(line.split(" failed: ")[1], "writing the output descriptor: File too large",
                  f"why ({d.g.stderr_text()})")
        assert not os.path.exists(out.strip()), "no trace left"
        d.stop()
    finally:
        d.g.kill()
        if w:
            w.kill()


VENV = "/var/cache/gpusnoop-tests/venv/bin"  # scripts/setup.sh test makes it
DEPLOY = os.path.join(ROOT, "scripts", "deploy")


def yaml_documents(path):
    """The documents of a YAML file, parsed by PyYAML (in the tests' venv)."""
    p = subprocess.run([os.path.join(VENV, "python"), "-c",
                        "import json, sys, yaml; "
                        "print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))", path],
                       capture_output=True, timeout=TIMEOUT)
    expect_eq(p.returncode, 0, f"PyYAML on {path} ({p.stderr.decode()})")
    return json.loads(p.stdout)


@test
def daemon_config_kubernetes_manifests_validate_offline():
    files = [os.path.join(DEPLOY, f) for f in ("gpusnoop-daemonset.yaml", "gpusnoop-cuda-pod.yaml")]
    # the Kubernetes object schema, unknown fields refused, offline (schemas in the package)
    p = subprocess.run([os.path.join(VENV, "kubernetes-validate"), "--strict"] + files,
                       capture_output=True, timeout=120)
    out = p.stdout.decode() + p.stderr.decode()
    expect_eq(p.returncode, 0, f"kubernetes-validate ({out})")
    expect_eq(len(re.findall(r"^INFO .* passed for resource", out, re.M)), 3, out)
    assert "WARN" not in out and "ERROR" not in out, out

    config_map, ds = yaml_documents(files[0])
    pod_spec = ds["spec"]["template"]["spec"]
    expect_eq(pod_spec["hostPID"], True, "hostPID")
    c = pod_spec["containers"][0]
    sc = c["securityContext"]
    with open(os.path.join(DEPLOY, "gpusnoop.service")) as f:
        unit_set = unit_caps(f.read()).split(",")[1:]
    expect_eq(sorted(sc["capabilities"]["add"]), sorted(x[1:].upper() for x in unit_set),
              "the unit's capabilities")
    expect_eq((sc["capabilities"]["drop"], sc.get("privileged", False),
               sc["allowPrivilegeEscalation"]), (["ALL"], False, False), "nothing more")
    volumes = {v["name"]: v for v in pod_spec["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in c["volumeMounts"]}
    for path in ("/sys/kernel/btf", "/sys/kernel/debug", "/sys/kernel/tracing"):
        expect_eq(mounts[path]["hostPath"]["path"], path, f"{path} from the host")

    # the config it mounts passes --check-config
    expect_eq(c["args"], ["daemon", "--config", "/etc/gpusnoop/gpusnoop.conf"], "args")
    expect_eq(mounts["/etc/gpusnoop"]["configMap"]["name"], config_map["metadata"]["name"],
              "config mount")
    tmp = tempfile.mkdtemp(prefix="gs-k8s-")
    conf = os.path.join(tmp, "gpusnoop.conf")
    write(conf, config_map["data"]["gpusnoop.conf"])
    status, _, err = run_gpusnoop("daemon", "--check-config", conf)
    expect_eq(status, 0, f"the ConfigMap's settings ({err})")

    # the injection library: copied to the node by the init container, named by pods
    init = pod_spec["initContainers"][0]
    host_dir = volumes[init["volumeMounts"][0]["name"]]["hostPath"]["path"]
    expect_eq(init["command"][-2:], ["/usr/local/lib/gpusnoop/libgpusnoop-cupti.so", "/host/"],
              "init container")
    (pod,) = yaml_documents(files[1])
    env = {e["name"]: e["value"] for e in pod["spec"]["containers"][0]["env"]}
    lib = env["CUDA_INJECTION64_PATH"]
    expect_eq(os.path.dirname(lib), host_dir, "the pod's library directory")
    expect_eq(pod["spec"]["volumes"][0]["hostPath"]["path"], host_dir, "the pod's volume")


@test
def daemon_config_slurm_prolog_epilog_hand_the_job_its_files():
    tmp = tempfile.mkdtemp(prefix="gs-slurm-job-")
    os.chmod(tmp, 0o755)  # for the job's user
    out, jobs, state = (os.path.join(tmp, d) for d in ("out", "jobs", "state"))
    os.mkdir(out)
    write(os.path.join(out, "gpusnoop-cuda-oom-1-before.json"), "{}")
    env = dict(os.environ, SLURM_JOB_ID="4242", SLURM_JOB_UID=str(NOBODY),
               SLURM_JOB_GID=str(NOBODY), GPUSNOOP_OUTPUT_DIR=out, GPUSNOOP_JOBS_DIR=jobs,
               GPUSNOOP_SLURM_STATE=state, GPUSNOOP_START="true",
               GPUSNOOP_SLURM_EXCLUSIVE="1")
    script = os.path.join(DEPLOY, "gpusnoop-slurm-job.sh")
    for context in ("prolog_slurmd", "epilog_slurmd"):
        if context.startswith("epilog"):
            write(os.path.join(out, "gpusnoop-cuda-oom-7-during.json"), "{}")
            write(os.path.join(out, "other-file"), "")
        p = subprocess.run([script], env=dict(env, SLURM_SCRIPT_CONTEXT=context),
                           capture_output=True, timeout=TIMEOUT)
        expect_eq((p.returncode, p.stderr.decode()), (0, ""), context)
    dest = os.path.join(jobs, "4242")
    expect_eq(sorted(os.listdir(dest)), ["gpusnoop-cuda-oom-7-during.json"], "the job's files")
    st = os.stat(os.path.join(dest, "gpusnoop-cuda-oom-7-during.json"))
    expect_eq((st.st_uid, os.stat(dest).st_uid), (NOBODY, NOBODY), "the job user's")
    p = subprocess.run(AS_NOBODY + ["cat", os.path.join(dest, "gpusnoop-cuda-oom-7-during.json")],
                       capture_output=True, timeout=TIMEOUT)
    expect_eq((p.returncode, p.stdout), (0, b"{}"), "the job's user reads it")
    expect_eq(os.listdir(state), [], "start marks left")
    # an epilog without a prolog (gpusnoop installed meanwhile) does nothing, and succeeds
    p = subprocess.run([script], env=dict(env, SLURM_SCRIPT_CONTEXT="epilog_slurmd",
                                          SLURM_JOB_ID="4243"), capture_output=True,
                       timeout=TIMEOUT)
    expect_eq((p.returncode, os.path.exists(os.path.join(jobs, "4243"))), (0, False), "no prolog")
