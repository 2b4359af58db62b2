#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Installs the Debian bookworm packages gpusnoop needs to build, test and run its demo.
set -euo pipefail

PACKAGES=(
	make gcc g++ clang llvm pkg-config
	libbpf-dev bpftool
	libelf-dev zlib1g-dev
	python3 jq
)
# `make bench` only (setup.sh --bench): the bpftrace peer, and a PyTorch process mapping libtorch
BENCH_PACKAGES=(
	bpftrace
	python3-torch
)
if [ "${1:-}" = --bench ]; then
	PACKAGES+=("${BENCH_PACKAGES[@]}")
fi

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "setup: missing packages: ${missing[*]}; run as root (sudo make ...)" >&2
	exit 1
fi
echo "setup: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
