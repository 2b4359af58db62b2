# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""preflight.py: what gpu-test/run checks first, one line each, before any GPU check: kernel,
BTF, BPF (a trivial program loaded), uprobes and uprobe_multi, the NVIDIA driver and GPU,
PyTorch and its CUDA, the CUPTI file PyTorch maps and its API version. Standard library only:
it runs with the host's python3, where nothing can be installed (bpf() through ctypes)."""
import ctypes
import errno
import json
import os
import platform
import re
import struct
import subprocess

SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine(), 321)
BPF_PROG_LOAD, BPF_LINK_CREATE = 5, 28
PROG_SOCKET_FILTER, PROG_KPROBE = 1, 2
BPF_TRACE_UPROBE_MULTI = 48  # enum bpf_attach_type, Linux 6.6
# r0 = 0; exit
TRIVIAL = struct.pack("<BBhiBBhi", 0xb7, 0, 0, 0, 0x95, 0, 0, 0)
TORCH_TIMEOUT = 180  # seconds for `import torch` and CUDA's start on a cold machine

_libc = ctypes.CDLL(None, use_errno=True)


def _bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    fd = _libc.syscall(SYS_BPF, cmd, buf, 128)
    return (fd, 0) if fd >= 0 else (-1, ctypes.get_errno())


def _prog_load(prog_type, attach_type=0):
    insns = ctypes.create_string_buffer(TRIVIAL, len(TRIVIAL))
    lic = ctypes.create_string_buffer(b"GPL")
    # prog_type, insn_cnt, insns, license, log_level, log_size, log_buf, kern_version,
    # prog_flags, prog_name[16], prog_ifindex, expected_attach_type
    attr = struct.pack("<IIQQIIQII16sII", prog_type, len(TRIVIAL) // 8,
                       ctypes.addressof(insns), ctypes.addressof(lic), 0, 0, 0, 0, 0,
                       b"gs_preflight", 0, attach_type)
    return _bpf(BPF_PROG_LOAD, attr)


def check_bpf():
    """(ok, text): a socket filter `r0 = 0; exit` loads."""
    fd, err = _prog_load(PROG_SOCKET_FILTER)
    if fd < 0:
        return False, "not allowed: loading a trivial program: %s" % os.strerror(err)
    os.close(fd)
    return True, "allowed (a trivial program loads)"


def check_uprobe_multi():
    """libbpf's probe: a uprobe_multi link on '/' fails with EBADF where the kernel has it."""
    fd, err = _prog_load(PROG_KPROBE, BPF_TRACE_UPROBE_MULTI)
    if fd < 0:
        return False, "no (program load: %s)" % os.strerror(err)
    path = ctypes.create_string_buffer(b"/")
    offset = ctypes.c_ulonglong(0)
    # prog_fd, target_fd, attach_type, flags, then uprobe_multi: path, offsets,
    # ref_ctr_offsets, cookies, cnt, flags, pid
    attr = struct.pack("<iiIIQQQQIII", fd, -1, BPF_TRACE_UPROBE_MULTI, 0,
                       ctypes.addressof(path), ctypes.addressof(offset), 0, 0, 1, 0, 0)
    link, err = _bpf(BPF_LINK_CREATE, attr)
    os.close(fd)
    if link >= 0:
        os.close(link)
    return (err == errno.EBADF), ("yes" if err == errno.EBADF else
                                  "no (link: %s)" % os.strerror(err or 0))


def driver_version():
    try:
        with open("/proc/driver/nvidia/version") as f:
            m = re.search(r"Kernel Module(?: for \S+)?\s+(\d[\d.]*)", f.read())
            return m.group(1) if m else None
    except OSError:
        return None


def check_driver(libcuda="libcuda.so.1"):
    """(info or None, text): the driver's library, its version, and the first GPU's name."""
    try:
        cuda = ctypes.CDLL(libcuda)
    except OSError as e:
        return None, "no NVIDIA driver: %s" % e
    err = cuda.cuInit(0)
    if err:
        return None, "no usable GPU: cuInit returned %d" % err
    count, version, dev = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    name = ctypes.create_string_buffer(256)
    cuda.cuDriverGetVersion(ctypes.byref(version))
    if cuda.cuDeviceGetCount(ctypes.byref(count)) or count.value < 1:
        return None, "no GPU: the driver reports no device"
    cuda.cuDeviceGet(ctypes.byref(dev), 0)
    cuda.cuDeviceGetName(name, 256, dev)
    info = {"driver": driver_version(), "cuda_driver_version": version.value,
            "devices": count.value, "gpu": name.value.decode(errors="replace")}
    return info, "%s (CUDA %d.%d), %d device(s)" % (
        info["driver"] or "?", version.value // 1000, version.value % 1000 // 10, count.value)


TORCH_PROBE = r"""
import ctypes, json, torch
r = {"version": torch.__version__, "cuda": torch.version.cuda,
     "available": torch.cuda.is_available(), "cupti": []}
if r["available"]:
    torch.zeros(1, device="cuda")
with open("/proc/self/maps") as f:
    paths = sorted({l.split()[-1] for l in f if "libcupti" in l.split()[-1]})
for p in paths:
    v = ctypes.c_uint(0)
    try:
        ctypes.CDLL(p).cuptiGetVersion(ctypes.byref(v))
        r["cupti"].append({"path": p, "api": v.value})
    except OSError as e:
        r["cupti"].append({"path": p, "error": str(e)})
print(json.dumps(r))
"""


def probe_torch(python, env):
    try:
        p = subprocess.run([python, "-c", TORCH_PROBE], capture_output=True, text=True,
                           env=env, timeout=TORCH_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, "%s: %s" % (python, e)
    if p.returncode:
        last = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
        return None, "%s: %s" % (python, last)
    return json.loads(p.stdout.strip().splitlines()[-1]), None


def run(say, python=None, env=None):
    """Checks the machine, says one line each through say(name, text); returns a dict:
    kernel, btf, bpf, uprobes, uprobe_multi (bools where a check), driver (or None), why
    (what stops the GPU checks, or None), and torch (the probe's answer, or None)."""
    r = {"kernel": platform.release()}
    say("kernel", r["kernel"])
    r["btf"] = os.path.exists("/sys/kernel/btf/vmlinux")
    say("BTF", "present (/sys/kernel/btf/vmlinux)" if r["btf"] else "absent")
    r["bpf"], text = check_bpf()
    say("BPF", text)
    r["uprobes"] = os.path.exists("/sys/bus/event_source/devices/uprobe/type")
    say("uprobes", "yes" if r["uprobes"] else "no (no uprobe PMU in /sys/bus/event_source)")
    r["uprobe_multi"], text = check_uprobe_multi() if r["bpf"] else (False, "unknown (no BPF)")
    say("uprobe_multi", text)
    r["driver"], text = check_driver()
    say("driver", text)
    r["why"] = None if r["driver"] else text
    say("GPU", r["driver"]["gpu"] if r["driver"] else "none")
    r["torch"] = None
    if not r["driver"]:
        say("PyTorch", "not checked (no driver)")
        return r
    info, why = probe_torch(python, env)
    if info is None:
        r["why"] = "no PyTorch: " + why
        say("PyTorch", why)
        return r
    r["torch"] = info
    say("PyTorch", "%s (CUDA %s)%s, %s" % (info["version"], info["cuda"], "" if info["available"]
                                           else " cannot use the GPU", python))
    if not info["available"]:
        r["why"] = "PyTorch %s: torch.cuda.is_available() is False" % info["version"]
    say("CUPTI", "; ".join("%s API %s" % (c["path"], c.get("api", c.get("error")))
                           for c in info["cupti"]) or "PyTorch maps none")
    return r
