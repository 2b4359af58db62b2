#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Slurm Prolog and Epilog for nodes that run `gpusnoop daemon` (slurm.conf, the same script
# for both; slurmd sets SLURM_SCRIPT_CONTEXT):
#   Prolog=/usr/local/share/gpusnoop/gpusnoop-slurm-job.sh
#   Epilog=/usr/local/share/gpusnoop/gpusnoop-slurm-job.sh
# prolog: the daemon runs (started when it does not), and the job's start is noted;
# epilog: the daemon's reports and traces written while the job ran (its OOMs, their flight
# recorder traces, recordings) are copied to JOBS_DIR/JOBID/. They are the job user's when
# GPUSNOOP_SLURM_EXCLUSIVE=1 says a node runs one job at a time; otherwise they may name other
# jobs' processes, and stay root's.
# A prolog that fails drains the node: nothing here fails a job, errors are only logged.
# Settings (environment, e.g. in slurm.conf's PrologEpilogEnv or a wrapper):
#   GPUSNOOP_OUTPUT_DIR   the daemon's output-dir (default /var/lib/gpusnoop)
#   GPUSNOOP_JOBS_DIR     where each job's files go (default /var/lib/gpusnoop-jobs)
#   GPUSNOOP_SLURM_STATE  the jobs' start marks (default /run/gpusnoop-slurm)
#   GPUSNOOP_START        how to start the daemon (default: systemctl start gpusnoop)
# For a multi-host trace of a running job, see gpusnoop-slurm.sh beside this script.
set -uo pipefail

context=${SLURM_SCRIPT_CONTEXT:-${1:-}}
job=${SLURM_JOB_ID:-}
out=${GPUSNOOP_OUTPUT_DIR:-/var/lib/gpusnoop}
jobs=${GPUSNOOP_JOBS_DIR:-/var/lib/gpusnoop-jobs}
state=${GPUSNOOP_SLURM_STATE:-/run/gpusnoop-slurm}
start=${GPUSNOOP_START:-systemctl start gpusnoop}

log() { echo "gpusnoop-slurm-job: job $job: $*" >&2; }

[[ "$job" =~ ^[0-9]+(_[0-9]+)?$ ]] || { log "no valid SLURM_JOB_ID"; exit 0; }
case "$context" in
prolog*)
	if ! install -d -m 0700 "$state" || ! : >"$state/$job"; then
		log "cannot mark the start in $state"
	fi
	pgrep -x gpusnoop >/dev/null || $start || log "the daemon is not running ($start failed)"
	;;
epilog*)
	[ -e "$state/$job" ] || exit 0
	dest="$jobs/$job"
	# the users' directories are their own, 0700, in one that anyone may pass through
	if install -d -m 0755 "$jobs" && install -d -m 0700 "$dest"; then
		find "$out" -maxdepth 1 -type f -name 'gpusnoop-*' -newer "$state/$job" \
			-exec cp -p -t "$dest" {} + || log "copying from $out failed"
		if [ "${GPUSNOOP_SLURM_EXCLUSIVE:-0}" = 1 ] && [ -n "${SLURM_JOB_UID:-}" ]; then
			chown -R "$SLURM_JOB_UID${SLURM_JOB_GID:+:$SLURM_JOB_GID}" "$dest" ||
				log "chown failed"
		fi
		rmdir "$dest" 2>/dev/null || true # kept when it holds something
	else
		log "cannot create $dest"
	fi
	rm -f "$state/$job"
	;;
*) log "run as Slurm's Prolog or Epilog (SLURM_SCRIPT_CONTEXT=$context)" ;;
esac
exit 0
