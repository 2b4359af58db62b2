#!/usr/bin/env python3
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
"""test_cli.py: the command line as people use it: help, errors, install, man pages, completion,
and the pprof mappings that server-side symbolizers need."""
import os
import re
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import (BIN, GPUSNOOP, ROOT, TIMEOUT, Gpusnoop, Workload, expect_eq,
                     run_gpusnoop, test)
from test_profile import read_pprof

BURN = os.path.join(BIN, "gs_burn")
COMPLETION = os.path.join(ROOT, "scripts", "completion", "gpusnoop.bash")


def subcommands():
    status, out, err = run_gpusnoop("list")
    expect_eq(status, 0, f"list status ({err})")
    names = [line.split()[0] for line in out.splitlines()]
    expect_eq(names, ["leaks", "record", "profile", "top", "daemon", "ctl", "stitch", "stats",
                      "check"],
              "subcommands")
    return names


def examples(help_text):
    """The lines of the EXAMPLES: section of a --help text."""
    lines = help_text.splitlines()
    start = lines.index("EXAMPLES:") + 1
    out = []
    for line in lines[start:]:
        if not line:
            break
        out.append(line)
    return out


@test
def help_with_h_and_help_command():
    for args in (["-h"], ["--help"], ["help"]):
        status, out, err = run_gpusnoop(*args)
        expect_eq((status, err), (0, ""), f"gpusnoop {' '.join(args)}")
        assert out.startswith("Usage: gpusnoop COMMAND "), out
    for cmd in subcommands():
        status, long_help, err = run_gpusnoop(cmd, "--help")
        expect_eq((status, err), (0, ""), f"{cmd} --help")
        assert long_help.startswith(f"Usage: gpusnoop {cmd} "), long_help
        for args in ([cmd, "-h"], ["help", cmd]):
            status, out, err = run_gpusnoop(*args)
            expect_eq((status, err), (0, ""), " ".join(args))
            expect_eq(out, long_help, f"gpusnoop {' '.join(args)} vs {cmd} --help")
    status, out, err = run_gpusnoop("help", "nosuch")
    expect_eq(status, 64, "help of an unknown command: a usage error")
    assert "unknown command 'nosuch'" in err, err


@test
def errors_name_the_whole_command():
    for cmd in subcommands():
        status, out, err = run_gpusnoop(cmd, "--no-such-option")
        expect_eq(status, 64, f"{cmd}: argp's usage status")  # EX_USAGE
        expect_eq(out, "", f"{cmd}: nothing on stdout")
        assert err.startswith(f"gpusnoop {cmd}: unrecognized option '--no-such-option'"), err
        assert f"Try `gpusnoop {cmd} --help'" in err, err


@test
def help_examples_keep_their_lines():
    for cmd in subcommands():
        _, out, _ = run_gpusnoop(cmd, "--help")
        ex = examples(out)
        assert ex, f"{cmd}: no examples"
        # argp wraps at 79 columns: a wrapped example would leave a line not starting so
        for line in ex:
            assert line.startswith(f"  gpusnoop {cmd}"), f"{cmd}: broken example {line!r}"
        for line in out.splitlines():
            assert len(line) < 80, f"{cmd}: {len(line)} columns: {line!r}"


@test
def ctl_names_every_request():
    _, top, _ = run_gpusnoop("--help")
    assert re.search(r"^  ctl .*record PID SECONDS", top, re.M), top
    _, out, _ = run_gpusnoop("ctl", "--help")
    assert "or:  gpusnoop ctl [OPTION...] record PID SECONDS [EVENTS]" in out, out
    assert re.search(r"^  record PID SECONDS \[EVENTS\] ", out, re.M), out
    status, _, err = run_gpusnoop("ctl")
    expect_eq(status, 64, "ctl without a request")
    assert "status, leaks PID, snapshot PID or record PID SECONDS [EVENTS]" in err, err


@test
def record_default_events_are_one_list():
    _, out, _ = run_gpusnoop("record", "--help")
    m = re.search(r"Without -e:\n  -e (\S+)\n", out)
    assert m, out
    default = m.group(1)
    expect_eq(default, "cuda-mem,cuda-launch,cuda-sync,cuda-memcpy,torch-mem", "default events")
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = " ".join(f.read().split())
    assert f"Without `-e`: `-e {default}`" in readme, "README's default events differ"


@test
def record_names_the_unknown_event():
    """-e cpu,cuda: the usage error names 'cuda', not the whole list."""
    status, _, err = run_gpusnoop("record", "-e", "cpu,cuda", "-o", "/dev/null", "--", "true")
    expect_eq(status, 64, f"status ({err})")
    assert "unknown event 'cuda' (cuda-mem, " in err, err


@test
def duration_zero_is_documented_as_no_limit():
    for cmd in ("leaks", "record", "profile"):
        _, out, _ = run_gpusnoop(cmd, "--help")
        assert re.search(r"-d, --duration=SECS +Stop after SECS seconds \(default 0: no limit\)",
                         out), f"{cmd}: {out}"


@test
def profile_without_target_names_cgroup():
    status, out, err = run_gpusnoop("profile", "-F", "99")
    expect_eq((status, out), (64, ""), "profile without a target: a usage error")
    expect_eq(err, "gpusnoop: error: give exactly one of -p PID, -a, --cgroup PATH or "
              "-- CMD ARGS\n", "profile's error")
    status, _, err = run_gpusnoop("leaks")
    expect_eq(err, "gpusnoop: error: give exactly one of -p PID, -a or -- CMD ARGS\n",
              "leaks' error")


def make(*args):
    p = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT] + list(args),
                       capture_output=True, timeout=300)
    expect_eq(p.returncode, 0, f"make {' '.join(args)} ({p.stderr.decode()})")


def files_under(top):
    out = {}
    for d, _, names in os.walk(top):
        for n in names:
            path = os.path.join(d, n)
            out[os.path.relpath(path, top)] = stat.S_IMODE(os.lstat(path).st_mode)
    return out


@test
def make_install_destdir_lays_out_files_and_uninstall_removes_them():
    dest = tempfile.mkdtemp(prefix="gs-install-")
    make("install", f"DESTDIR={dest}", "PREFIX=/opt/gs")
    want = {"opt/gs/bin/gpusnoop": 0o755,
            "opt/gs/lib/systemd/system/gpusnoop.service": 0o644,
            "opt/gs/share/bash-completion/completions/gpusnoop": 0o644,
            "opt/gs/share/man/man8/gpusnoop.8": 0o644,
            "opt/gs/share/man/man7/gpusnoop.7": 0o644,
            "opt/gs/share/man/man5/gpusnoop.conf.5": 0o644,
            "etc/gpusnoop.conf": 0o644}
    for cmd in subcommands():
        want[f"opt/gs/share/man/man8/gpusnoop-{cmd}.8"] = 0o644
    if os.path.exists(os.path.join(ROOT, "libgpusnoop-cupti.so")):  # built where CUPTI is
        want["opt/gs/lib/gpusnoop/libgpusnoop-cupti.so"] = 0o644
    expect_eq(files_under(dest), want, "installed files")
    with open(os.path.join(dest, "opt/gs/lib/systemd/system/gpusnoop.service")) as f:
        unit = f.read()
    assert "\nExecStart=/opt/gs/bin/gpusnoop daemon " in unit, unit
    with open(os.path.join(dest, "opt/gs/bin/gpusnoop"), "rb") as a, open(GPUSNOOP, "rb") as b:
        assert a.read() == b.read(), "installed binary differs from ./gpusnoop"
    make("uninstall", f"DESTDIR={dest}", "PREFIX=/opt/gs")
    expect_eq(files_under(dest), {}, "files left after uninstall")


def render(page):
    """man -l of page at 80 columns, with groff's warnings: (stdout, stderr)."""
    p = subprocess.run(["man", "--warnings=w", "-l", page], capture_output=True,
                       timeout=TIMEOUT, env=dict(os.environ, MANWIDTH="80", MANPAGER="cat",
                                                 PAGER="cat", LC_ALL="C.UTF-8"))
    expect_eq(p.returncode, 0, f"man -l {page}")
    return p.stdout.decode(), p.stderr.decode()


@test
def man_pages_render_without_warnings_and_match_help():
    out_dir = tempfile.mkdtemp(prefix="gs-man-")
    p = subprocess.run([os.path.join(ROOT, "scripts", "man", "gen-man.sh"), GPUSNOOP, out_dir],
                       capture_output=True, timeout=120)
    expect_eq(p.returncode, 0, f"gen-man.sh ({p.stderr.decode()})")
    pages = {"gpusnoop": None}
    pages.update({f"gpusnoop-{cmd}": cmd for cmd in subcommands()})
    expect_eq(sorted(os.listdir(out_dir)), sorted([f"{n}.8" for n in pages] + ["gpusnoop.7"]),
              "pages")
    for name, cmd in pages.items():
        page = os.path.join(out_dir, f"{name}.8")
        g = subprocess.run(["groff", "-ww", "-man", "-Tutf8", "-z", page], capture_output=True,
                           timeout=TIMEOUT)
        expect_eq((g.returncode, g.stderr.decode()), (0, ""), f"groff -ww {name}")
        text, warnings = render(page)
        expect_eq(warnings, "", f"man --warnings -l {name}")
        # hyphenation and justification may change spacing, never the words
        flat = " ".join(text.replace("\u2010", "-").split())
        assert f"NAME {name} - " in flat, flat
        if cmd is None:
            continue
        _, help_text, _ = run_gpusnoop(cmd, "--help")
        for line in examples(help_text):  # verbatim, one per line
            assert re.search(r"^ +" + re.escape(line.strip()) + "$", text, re.M), \
                f"{name}: example {line!r} not in:\n{text}"
        assert "SEE ALSO gpusnoop(8)" in flat, flat


SECTIONS = os.path.join(ROOT, "scripts", "man", "sections")


def roff_headings(page):
    """The .SH and .SS titles of a roff page, fonts and escapes taken out, upper-cased."""
    out = set()
    with open(page) as f:
        for line in f:
            m = re.match(r'^\.S[HS] +"?(.*?)"?$', line.rstrip("\n"))
            if m:
                t = re.sub(r"\\f[BIRP]", "", m.group(1)).replace("\\-", "-")
                out.add(t.replace("\\(dq", '"').upper())
    return out


def md_headings(md):
    with open(md) as f:
        return [re.sub(r"^#+ ", "", l.strip()).replace("`", "").upper()
                for l in f if re.match(r"^##+ ", l)]


@test
def man_pages_carry_the_hand_written_sections():
    """Every page renders with man -l without a warning, gpusnoop(7) and gpusnoop.conf(5)
    included, and holds the sections of its scripts/man/sections/NAME.N.md; every
    '"Title" in gpusnoop(N)' they or the README name is a heading of that page."""
    out_dir = tempfile.mkdtemp(prefix="gs-man-")
    p = subprocess.run([os.path.join(ROOT, "scripts", "man", "gen-man.sh"), GPUSNOOP, out_dir],
                       capture_output=True, timeout=120)
    expect_eq(p.returncode, 0, f"gen-man.sh ({p.stderr.decode()})")
    status, doc, err = run_gpusnoop("daemon", "--print-config-doc")
    expect_eq(status, 0, f"--print-config-doc ({err})")
    with open(os.path.join(out_dir, "gpusnoop.conf.5"), "w") as f:
        f.write(doc)
    pages = sorted(os.listdir(out_dir))
    for page in pages:
        text, warnings = render(os.path.join(out_dir, page))
        expect_eq(warnings, "", f"man --warnings -l {page}")
        assert "NAME" in text, f"{page}: {text}"
    written = sorted(n[:-3] for n in os.listdir(SECTIONS) if n.endswith(".md"))
    expect_eq(written, sorted(["gpusnoop.7", "gpusnoop.8"] +
                              [f"gpusnoop-{c}.8" for c in subcommands()]),
              "a sections file per page")
    heads = {page: roff_headings(os.path.join(out_dir, page)) for page in pages}
    for name in written:
        md = os.path.join(SECTIONS, f"{name}.md")
        for h in md_headings(md):
            assert h in heads[name], f"{name} lacks {h!r} of {md}: {sorted(heads[name])}"
    texts = [os.path.join(SECTIONS, f"{n}.md") for n in written] + [os.path.join(ROOT, "README.md")]
    for path in texts:
        with open(path) as f:
            text = " ".join(f.read().split())
        for title, page, sec in re.findall(
                r'"([^"]+)" in `?(gpusnoop[\w.-]*)\((\d)\)', text):
            assert title.upper() in heads[f"{page}.{sec}"], f"{path}: no {title!r} in {page}"
        for titles, page, sec in re.findall(
                r"([A-Z][A-Z ,-]+[A-Z]) in `(gpusnoop[\w.-]*)\((\d)\)`", text):
            for title in titles.split(", "):
                assert title in heads[f"{page}.{sec}"], f"{path}: no {title!r} in {page}"
        for page, sec, titles in re.findall(
                r"`(gpusnoop[\w.-]*)\((\d)\)` \(([A-Z][A-Z ,-]+)\)", text):
            for title in titles.split(", "):
                assert title in heads[f"{page}.{sec}"], f"{path}: no {title!r} in {page}"
        for page, sec in re.findall(r"\b(gpusnoop(?:-[a-z]+)?(?:\.conf)?)\((\d)\)", text):
            assert f"{page}.{sec}" in heads, f"{path}: names {page}({sec}), not a page"


@test
def readme_is_a_guide_whose_paths_exist():
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    lines = readme.count("\n")
    assert lines <= 320, f"README.md: {lines} lines"
    for cmd in subcommands():
        assert re.search(rf"^### .*\b{cmd}\b", readme, re.M), f"README: no section for {cmd}"
    for title in ("Quick start", "Install", "Reading the outputs", "Limits", "Dependencies"):
        assert f"\n## {title}\n" in readme, f"README: no {title}"
    for target in re.findall(r"\]\(([^)#]+)\)", readme):
        if not re.match(r"https?:", target):
            assert os.path.exists(os.path.join(ROOT, target)), f"README links to {target}"
    for path in set(re.findall(r"`((?:scripts|tests|profilers|user|bpf|stitch)/[\w./*-]*)`",
                               readme)):
        found = [p for p in [os.path.join(ROOT, path)] if "*" not in p and os.path.exists(p)]
        if "*" in path:
            import glob
            found = glob.glob(os.path.join(ROOT, path))
        assert found, f"README names {path}, which does not exist"
    # every package setup.sh installs is in the Dependencies tables, with its why
    deps = readme[readme.index("\n## Dependencies\n"):]
    deps = deps[:deps.index("\n## ", 1)]
    with open(os.path.join(ROOT, "scripts", "setup.sh")) as f:
        setup = f.read()
    for group in re.findall(r"^[A-Z]+_PACKAGES=\((.*?)^\)", setup, re.M | re.S):
        for line in group.splitlines():
            for pkg in line.split("#")[0].split():
                assert re.search(rf"(?<![\w-]){re.escape(pkg)}(?![\w-])", deps), \
                    f"README's Dependencies lack {pkg}"


def complete(*words):
    """COMPREPLY of the completion function for the command line words (the last one is
    being typed), with gpusnoop found on PATH as an installed one would be."""
    script = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); '
              '_gpusnoop; printf "%s\\n" "${COMPREPLY[@]}"')
    p = subprocess.run(["bash", "-c", script, "bash", COMPLETION] + list(words),
                       capture_output=True, timeout=TIMEOUT,
                       env=dict(os.environ, PATH=f"{ROOT}:{os.environ['PATH']}"))
    expect_eq((p.returncode, p.stderr.decode()), (0, ""), f"completion of {words}")
    return sorted(l for l in p.stdout.decode().splitlines() if l)


@test
def bash_completion_of_commands_options_and_events():
    expect_eq(complete("gpusnoop", ""), sorted(subcommands() + ["help"]), "commands")
    expect_eq(complete("gpusnoop", "re"), ["record"], "re<TAB>")
    expect_eq(complete("gpusnoop", "help", "st"), ["stats", "stitch"], "help st<TAB>")
    expect_eq(complete("gpusnoop", "leaks", "--on"), ["--on-oom"], "leaks --on<TAB>")
    expect_eq(complete("gpusnoop", "record", "-e", "cuda-m"), ["cuda-mem", "cuda-memcpy"],
              "-e cuda-m<TAB>")
    expect_eq(complete("gpusnoop", "record", "--events", "=", "cpu,torch"), ["cpu,torch-mem"],
              "--events=cpu,torch<TAB>")
    expect_eq(complete("gpusnoop", "profile", "--format", "p"), ["pprof"], "--format p<TAB>")
    expect_eq(complete("gpusnoop", "ctl", "r"), ["record"], "ctl r<TAB>")
    expect_eq(complete("gpusnoop", "top", "--sort", "l"), ["launches"], "top --sort l<TAB>")
    opts = complete("gpusnoop", "daemon", "--")
    for want in ("--config", "--metrics-addr", "--output-dir", "--socket", "--help"):
        assert want in opts, opts


def build_id(path):
    p = subprocess.run(["readelf", "-n", path], capture_output=True, timeout=TIMEOUT)
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout.decode())
    assert m, f"{path} has no build id"
    return m.group(1)


def maps_of(pid):
    """[(start, end, offset, path)] of the file mappings of pid."""
    out = []
    with open(f"/proc/{pid}/maps") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 6 and parts[5].startswith("/"):
                start, end = (int(x, 16) for x in parts[0].split("-"))
                out.append((start, end, int(parts[2], 16), parts[5]))
    return out


@test
def pprof_mappings_are_placed_with_build_ids():
    w = Workload("gs_burn", env={"GS_BURN_ROUNDS": "1000000"})
    out = os.path.join(tempfile.mkdtemp(prefix="gs-pprof-"), "p.pb.gz")
    try:
        maps = maps_of(w.pid)
        g = Gpusnoop("profile", "-p", str(w.pid), "-F", "499", "--format", "pprof", "-o", out)
        try:
            g.wait_stderr("profiling at")
            w.release()
            time.sleep(2)  # samples to look at; no count depends on the time
            expect_eq(g.stop(signal.SIGINT), 0, f"status ({g.stderr_text()})")
        finally:
            g.kill()
    finally:
        w.kill()
    p = read_pprof(out)
    s = p["strings"]
    mappings = [p["mappings"][i] for i in sorted(p["mappings"])]
    expect_eq(sorted(p["mappings"]), list(range(1, len(mappings) + 1)), "mapping ids")
    # pprof names the profile after the first mapping: the executable
    first = mappings[0]
    expect_eq(s[first[5]], BURN, "first mapping")
    placed = {}
    for m in mappings:
        name = s[m[5]]
        if not name.startswith("/"):
            expect_eq(name, "[kernel.kallsyms]", "the one mapping without a file")
            continue
        want = [(a, b, off) for a, b, off, path in maps if path == name]
        got = (m.get(2, 0), m.get(3, 0), m.get(4, 0))
        assert got in want, f"{name}: {got} not one of its /proc maps lines {want}"
        expect_eq(s[m.get(6, 0)], build_id(name), f"{name} build id")
        placed[m[1]] = got
    expect_eq(first.get(7, 0), 1, "the executable's frames are named: has_functions")
    # every user location lies inside its mapping
    for loc in p["locations"].values():
        if loc.get(2) in placed:
            start, limit, _ = placed[loc[2]]
            assert start <= loc[3] < limit, (loc, placed[loc[2]])
