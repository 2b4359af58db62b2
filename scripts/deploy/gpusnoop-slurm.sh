#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Multi-host capture with a common start time: run once per node (srun --ntasks-per-node=1),
# each node records every CUDA process into OUTDIR/HOST.json.gz; stitch them afterwards.
#
#   srun --ntasks-per-node=1 sudo scripts/gpusnoop-slurm.sh -d 30 /shared/gs-$SLURM_JOB_ID
#   gpusnoop stitch /shared/gs-$SLURM_JOB_ID/*.json.gz -o job.json.gz
set -euo pipefail

usage() {
	echo "usage: $0 [-s START_EPOCH_SECONDS] [-d SECS] [-e EVENTS] [-g GPUSNOOP] OUTDIR" >&2
	exit 1
}

start="" duration=30 events="" gpusnoop="$(dirname "$0")/../gpusnoop"
while getopts "s:d:e:g:" opt; do
	case "$opt" in
	s) start="$OPTARG" ;;
	d) duration="$OPTARG" ;;
	e) events="$OPTARG" ;;
	g) gpusnoop="$OPTARG" ;;
	*) usage ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || usage
outdir="$1"
[[ "$duration" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "$0: bad duration '$duration'" >&2; exit 1; }
command -v "$gpusnoop" >/dev/null || { echo "$0: no gpusnoop at '$gpusnoop' (-g)" >&2; exit 1; }

# Without -s every node picks the same instant on its own: the next full minute at least
# 10 s away (node clocks are NTP-synchronized; each trace records its clock offsets, so
# `gpusnoop stitch` aligns what small skew remains).
now=$(date +%s)
if [ -z "$start" ]; then
	start=$(((now + 10 + 59) / 60 * 60))
fi
[[ "$start" =~ ^[0-9]+$ ]] || { echo "$0: bad start time '$start'" >&2; exit 1; }
mkdir -p "$outdir"
out="$outdir/$(hostname -s).json.gz"
if [ "$start" -gt "$now" ]; then
	sleep $((start - now))
fi
args=(record -a -d "$duration" -o "$out")
[ -n "$events" ] && args+=(-e "$events")
"$gpusnoop" "${args[@]}"
echo "$(hostname -s): wrote $out" >&2
