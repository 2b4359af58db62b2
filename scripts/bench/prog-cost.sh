#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# prog-cost.sh: what each BPF program of one gpusnoop session costs per run on gs_bench's loop,
# from kernel.bpf_stats_enabled (run_time_ns / run_cnt, read from the session's own program
# descriptors), and the loop's CPU ns per iteration. Root; after `make gpusnoop fixtures`.
#   scripts/bench/prog-cost.sh record            # or: leaks --format json, record -e ...
#   scripts/bench/prog-cost.sh daemon            # PROG_COST_DAEMON_METRICS=on: cuda-call-metrics,
#                                                # PROG_COST_DAEMON_CONF=LINE: another setting
#   scripts/bench/prog-cost.sh floor min-mem     # gs_bench_floor's empty programs (a SET of it)
# GS_BENCH_GPUSNOOP=PATH: that gpusnoop binary (a build before a change) instead of ./gpusnoop.
# PROG_COST_TARGET=python: the loop is py_target.py's (cudaMalloc + cudaFree under 23 Python
# frames, Debian's python3.11), for the cost of the Python walk per program run.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: $0 SUBCOMMAND [ARGS...]" >&2; exit 2; }
tmp=$(mktemp -d)
was=$(sysctl -n kernel.bpf_stats_enabled)
workload=""
tool=""
cleanup() {
	[ -n "$tool" ] && kill "$tool" 2>/dev/null || true
	[ -n "$workload" ] && kill "$workload" 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$was"
	rm -rf "$tmp"
}
trap cleanup EXIT
wait_for() { # FILE PATTERN: up to 60 s
	for _ in $(seq 600); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	echo "$0: timed out waiting for '$2' in $1" >&2
	exit 1
}

sysctl -qw kernel.bpf_stats_enabled=1
if [ "${PROG_COST_TARGET:-}" = python ]; then
	/usr/bin/python3.11 scripts/bench/py_target.py .output/fixtures/lib/libcudart.so.13 20000 20 \
		>"$tmp/w.out" 2>&1 &
else
	.output/fixtures/bin/gs_bench loop 20000 500 --hold >"$tmp/w.out" 2>&1 &
fi
workload=$!
wait_for "$tmp/w.out" '^ready'
if [ "$1" = daemon ]; then # every CUDA process, the others' runs counted too
	printf 'cuda-call-metrics %s\n%s\n' "${PROG_COST_DAEMON_METRICS:-off}" \
		"${PROG_COST_DAEMON_CONF:-}" >"$tmp/d.conf"
	"${GS_BENCH_GPUSNOOP:-./gpusnoop}" daemon --config "$tmp/d.conf" --output-dir "$tmp/out" \
		--socket "$tmp/ctl.sock" --metrics-addr 127.0.0.1:0 2>"$tmp/t.err" &
	tool=$!
	wait_for "$tmp/t.err" 'daemon: following every CUDA process'
	wait_for "$tmp/t.err" "CUDA functions in $PWD/.output/fixtures/lib/libcudart"
elif [ "$1" = floor ]; then # the empty programs: what a probe hit costs with nothing in it
	.output/bench/gs_bench_floor "$workload" "${2:-min-mem}" 2>"$tmp/t.err" &
	tool=$!
	wait_for "$tmp/t.err" '^attached'
else
	"${GS_BENCH_GPUSNOOP:-./gpusnoop}" "$@" -p "$workload" -o /dev/null 2>"$tmp/t.err" &
	tool=$!
	wait_for "$tmp/t.err" 'Ctrl-C to stop'
fi
kill -USR1 "$workload"
wait_for "$tmp/w.out" '^done'
python3 - "$tool" <<'PY'
import json, os, subprocess, sys
pid = sys.argv[1]
seen = set()
for fd in os.listdir("/proc/%s/fd" % pid):
    try:
        with open("/proc/%s/fdinfo/%s" % (pid, fd)) as f:
            kv = dict(l.split(":\t", 1) for l in f.read().splitlines() if ":\t" in l)
    except OSError:
        continue
    if "prog_id" not in kv or kv["prog_id"] in seen or not int(kv.get("run_cnt", 0)):
        continue
    seen.add(kv["prog_id"])
    show = subprocess.run(["bpftool", "prog", "show", "id", kv["prog_id"], "-j"],
                          stdout=subprocess.PIPE, check=True).stdout
    cnt = int(kv["run_cnt"])
    print("%-24s %9d runs %8.0f ns/run" % (json.loads(show)["name"], cnt,
                                           int(kv["run_time_ns"]) / cnt))
PY
kill -INT "$tool"
wait "$tool" || true
tool=""
kill -USR1 "$workload"
wait "$workload" || true
workload=""
grep '^ns_per_iter' "$tmp/w.out"
