#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Installs the Debian bookworm packages gpusnoop needs to build, test and run its demo.
set -euo pipefail

PACKAGES=(
	make gcc g++ clang llvm pkg-config
	libbpf-dev bpftool
	libelf-dev zlib1g-dev
	python3 jq
	libmicrohttpd-dev # gpusnoop daemon: the Prometheus metrics endpoint
	prometheus # e2e: a real Prometheus server scrapes the daemon's metrics
	libyajl-dev # streaming JSON parser: `gpusnoop stitch` reads traces larger than memory
	libdw-dev # DWARF CFI (.eh_frame/.debug_frame) for --stacks dwarf (user/unwind.c)
	systemtap-sdt-dev # <sys/sdt.h>: the USDT probes of the PyTorch-like test fixtures
	python3-torch # e2e tests against a real PyTorch (Debian 1.13, CPU); make bench
	bpftrace # e2e: a pending return probe under --stacks dwarf; make bench: the peer
	libclang-rt-14-dev # libFuzzer and the sanitizers' runtimes: make fuzz, make fuzz-smoke
)
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
