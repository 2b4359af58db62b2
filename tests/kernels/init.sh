#!/bin/bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# /init of the kernel tests' initramfs: runs gpusnoop's checks, one result line each on ttyS1.

# A result line: "@@GS NAME STATUS STDOUT STDERR", the outputs gzipped and base64-encoded, on
# the second serial port, which carries nothing else (the console has the kernel's messages).
# tests/e2e/test_kernels.py parses them and applies the host tests' exact checks.
export PATH=/bin:/usr/bin:/sbin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
# no tmpfs on /tmp: the initramfs root is writable already, and the repository (with the
# gpusnoop under test) may itself live under /tmp, as a CI checkout can
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf
ip link set lo up 2>/dev/null
REPO=$(cat /repo)
BIN=$REPO/.output/fixtures/bin
LIB=$REPO/.output/fixtures/lib
GS=$REPO/gpusnoop
exec 3>/dev/ttyS1
cd /tmp || exit 1

result() {
	local name=$1 rc
	shift
	# a new shell, so that a check that is a function of this script can be timed out too
	timeout 240 bash -c '"$@"' bash "$@" >/tmp/out 2>/tmp/err </dev/null
	rc=$?
	echo "@@GS $name $rc $(gzip -c /tmp/out | base64 -w0) $(gzip -c /tmp/err | base64 -w0)" >&3
}

# waits up to $3 half-seconds for a line with $2 in file $1
wait_for() {
	for _ in $(seq "$3"); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}

record() {
	"$GS" record -o /tmp/t.json.gz "$@" >/dev/null && gzip -dc /tmp/t.json.gz
}

# waits as wait_for, while process $4 lives
wait_alive() {
	for _ in $(seq "$3"); do
		grep -qF -- "$2" "$1" 2>/dev/null && return 0
		kill -0 "$4" 2>/dev/null || return 1
		sleep 0.5
	done
	return 1
}

# the daemon's OOM report: the host test's sequence (tests/e2e/test_daemon.py)
daemon_oom() {
	local dpid wpid f
	"$GS" daemon --output-dir /tmp/reports --socket /tmp/ctl.sock \
		--metrics-addr 127.0.0.1:0 2>/tmp/daemon.err &
	dpid=$!
	if ! wait_alive /tmp/daemon.err "daemon: following every CUDA process" 240 "$dpid"; then
		wait "$dpid"
		cat /tmp/daemon.err >&2
		return 1
	fi
	GS_FAKE_CUDA_MEM_LIMIT=$((256 << 20)) GS_FAKE_CUDA_NO_DRIVER=1 "$BIN/gs_oom" --hold \
		>/tmp/oom.out &
	wpid=$!
	wait_for /tmp/oom.out "ready " 60 &&
		wait_for /tmp/daemon.err "CUDA functions in $LIB/libcudart.so.13" 120 &&
		kill -USR1 "$wpid" && wait_for /tmp/oom.out "oom 2" 120
	for _ in $(seq 60); do
		ls /tmp/reports/gpusnoop-cuda-oom-*.json >/dev/null 2>&1 && break
		sleep 0.5
	done
	kill -INT "$dpid"
	wait "$dpid"
	kill -USR1 "$wpid" 2>/dev/null
	wait "$wpid"
	cat /tmp/daemon.err >&2
	# the reports, not the flight recorder's traces beside them
	for f in /tmp/reports/gpusnoop-cuda-oom-*.json; do
		case $f in *.trace.json) ;; *) cat "$f" ;; esac
	done
}

export REPO BIN LIB GS
export -f wait_for wait_alive record daemon_oom
echo "@@GS-START $(uname -r)" >&3
result check "$GS" check
result leaks "$GS" leaks --format json -- "$BIN/gs_leaky"
# return probes: each allocating API's, a failing free's, a failing allocation's (with its stack)
result leaks_apis env GS_FAKE_CUDA_NO_DRIVER=1 "$GS" leaks --format json -- "$BIN/gs_apis"
result leaks_oom env GS_FAKE_CUDA_MEM_LIMIT=$((200 << 20)) "$GS" leaks --format json -- \
	"$BIN/gs_oom"
result record record -- "$BIN/gs_kernels"
# stdout: the trace or profile alone, without the workload's lines
result record_cpu record -e cpu -F 499 -- env GS_BURN_ROUNDS=30 "$BIN/gs_burn"
result profile bash -c "GS_BURN_ROUNDS=30 $GS profile -F 499 -o /tmp/p.folded -- $BIN/gs_burn \
	>/dev/null && cat /tmp/p.folded"
# the stack-slice copy's bounded loops (--stacks dwarf) pass this kernel's verifier too
result profile_dwarf bash -c "GS_BURN_ROUNDS=30 $GS profile --stacks dwarf -F 499 -o /tmp/p.folded \
	-- $BIN/gs_burn >/dev/null && cat /tmp/p.folded"
printf 'echo shell $$\n%s\n%s &\nwait\n' "$BIN/gs_leaky" "$BIN/gs_leaky" >/tmp/steps.sh
result tree "$GS" leaks --format json -- bash /tmp/steps.sh
result daemon_oom daemon_oom
echo "@@GS-DONE" >&3
sync
echo o >/proc/sysrq-trigger
sleep 10
