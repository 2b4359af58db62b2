#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Runs unit-test binaries, shows their output and sums their "N passed, N failed" lines.
#
# Usage: run-unit.sh BIN...
# A binary that crashes, hangs past GS_UNIT_TIMEOUT seconds (default 120) or ends without
# its summary line counts as one failed test, on top of the tests it reported before that.
# Exits 1 when any test failed.
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 BIN..." >&2
	exit 1
fi

timeout_s=${GS_UNIT_TIMEOUT:-120}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

total_passed=0
total_failed=0
summary_re='^([0-9]+) passed, ([0-9]+) failed$'

for bin in "$@"; do
	echo "# $bin"
	rc=0
	timeout -k 5 "$timeout_s" "$bin" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}

	last=$(tail -n 1 "$log")
	if [[ $last =~ $summary_re ]]; then
		passed=${BASH_REMATCH[1]}
		failed=${BASH_REMATCH[2]}
		# a summary, then a non-zero exit without failures: broken at exit (a leak checker,
		# a failed flush); a summary with failures and exit 0: a broken harness
		if { [[ $rc -ne 0 ]] && [[ $failed -eq 0 ]]; } ||
		   { [[ $rc -eq 0 ]] && [[ $failed -ne 0 ]]; }; then
			echo "FAIL $bin: exit status $rc after \"$last\""
			failed=$((failed + 1))
		fi
	else
		# died mid-run: keep what it reported, plus one failure for the crash itself
		passed=$(grep -c '^ok ' "$log" || true)
		failed=$(sed -n 's/^FAIL \([^ ]*\) .*/\1/p' "$log" | sort -u | wc -l)
		if [[ $rc -eq 124 ]]; then
			why="timed out after ${timeout_s}s"
		elif [[ $rc -gt 128 ]]; then
			why="killed by signal $((rc - 128))"
		else
			why="exit status $rc without a summary line"
		fi
		echo "FAIL $bin: $why"
		failed=$((failed + 1))
	fi
	total_passed=$((total_passed + passed))
	total_failed=$((total_failed + failed))
done

echo "$total_passed passed, $total_failed failed"
[[ $total_failed -eq 0 ]]
