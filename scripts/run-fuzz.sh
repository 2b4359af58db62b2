#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Runs libFuzzer harnesses for a bounded time each and says, per target, what it did.
#
# Usage: run-fuzz.sh [-t SECONDS] [-j JOBS] [--fresh] BIN...
# BIN is .output/fuzz/fuzz_<target>. Each run first replays tests/fuzz/seeds/<target>/
# (valid inputs and every crash ever found), then mutates for SECONDS. New inputs go to
# .output/fuzz/corpus/<target>, kept between runs unless --fresh (make test: the same
# bounded work every time); crashes to .output/fuzz/artifacts/<target>/, logs to
# .output/fuzz/logs/<target>.log. Prints one line per target; exits 1 when any crashed.
set -euo pipefail

seconds=600
jobs=1
fresh=0
while [[ $# -gt 0 ]]; do
	case $1 in
	-t) seconds=$2; shift 2 ;;
	-j) jobs=$2; shift 2 ;;
	--fresh) fresh=1; shift ;;
	--) shift; break ;;
	-*) echo "run-fuzz: unknown option $1" >&2; exit 2 ;;
	*) break ;;
	esac
done
if [[ $# -eq 0 || ! $seconds =~ ^[0-9]+$ || ! $jobs =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [-t SECONDS] [-j JOBS] [--fresh] BIN..." >&2
	exit 2
fi

out=.output/fuzz
mkdir -p "$out/logs"

# last "NAME: VALUE" of a libFuzzer log ("cov: 812", "stat::number_of_executed_units: 9")
field()
{
	grep -oE "$1 +[0-9]+" "$2" | tail -n 1 | awk '{ print $NF }'
}

run_one()
{
	local bin=$1 target=${1##*/fuzz_}
	local seeds=tests/fuzz/seeds/$target corpus=$out/corpus/$target
	local artifacts=$out/artifacts/$target log=$out/logs/$target.log
	local start=$SECONDS rc=0 verdict elapsed execs

	if [[ $fresh -eq 1 ]]; then
		corpus=$out/smoke-corpus/$target
		rm -rf "$corpus"
	fi
	mkdir -p "$corpus" "$artifacts" "$seeds"
	# the first directory receives new inputs; both are replayed before mutating. A wall-clock
	# bound on top of libFuzzer's own, as replaying a big corpus is not counted in it
	timeout -k 10 $((seconds * 2 + 120)) "$bin" -max_total_time="$seconds" -timeout=30 \
		-rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/" \
		"$corpus" "$seeds" >"$log" 2>&1 || rc=$?
	if [[ $rc -eq 0 ]]; then
		verdict=ok
	elif [[ $rc -eq 124 || $rc -eq 137 ]]; then
		verdict="HUNG (killed after $((SECONDS - start)) s)"
	else
		verdict="CRASHED (exit $rc): $(grep -o 'Test unit written to .*' "$log" | tail -n 1 |
			sed 's/Test unit written to //')"
	fi
	elapsed=$((SECONDS - start))
	execs=$(field 'stat::number_of_executed_units:' "$log")
	# killed before its final stats: the last "#N" status line
	execs=${execs:-$(grep -oE '^#[0-9]+' "$log" | tail -n 1 | tr -d '#')}
	printf 'fuzz %-14s %5d s %11s execs %8s exec/s  cov %5s  ft %6s  seeds %3s  corpus %6s  %s\n' \
		"$target" "$elapsed" "${execs:-?}" "$(((${execs:-0}) / (elapsed ? elapsed : 1)))" \
		"$(field 'cov:' "$log")" "$(field 'ft:' "$log")" "$(find "$seeds" -type f | wc -l)" \
		"$(field 'corp:' "$log")" "$verdict"
	if [[ $verdict != ok ]]; then
		# the report, from its first line to its summary (not the shadow bytes), and the input
		awk '/==ERROR|runtime error|check failed|ALARM|ERROR: libFuzzer/ { on = 1 }
			on && n++ < 40 { print } /^SUMMARY/ { on = 0 }' "$log" | sed 's/^/    /'
		grep -E '^(MS: |Base64: )' "$log" | tail -n 2 | sed 's/^/    /'
		echo "    (full log: $log)"
		return 1
	fi
}

for bin in "$@"; do
	if [[ ! -x $bin ]]; then
		echo "run-fuzz: $bin: not built" >&2
		exit 2
	fi
done
echo "fuzz: $# targets, ${seconds} s each, $jobs at a time; logs in $out/logs"
# each run leaves its verdict in a file: with -j, wait(1) cannot say whose exit it reaped
status=$(mktemp -d)
trap 'rm -rf "$status"' EXIT
for bin in "$@"; do
	while [[ $(jobs -rp | wc -l) -ge $jobs ]]; do
		wait -n || true
	done
	(run_one "$bin" || touch "$status/${bin##*/fuzz_}") &
done
wait
failed=$(find "$status" -type f | wc -l)
echo "fuzz: $# targets, $failed crashed"
[[ $failed -eq 0 ]]
