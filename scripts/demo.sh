#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# `make demo`: gpusnoop leaks and record on bundled workloads that use a stand-in CUDA runtime.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: gpusnoop loads BPF programs: run it as root (e.g. sudo make demo)" >&2
	exit 1
fi
workload=.output/fixtures/bin/gs_leaky
json=.output/demo-leaks.json
kernels=.output/fixtures/bin/gs_kernels
trace=.output/demo-trace.json.gz
cat <<EOT
== gpusnoop demo ==
The workload ($workload) links a stand-in libcudart.so.13 (host memory, no GPU needed).
It keeps 4 x 64 MiB from leak_weights(), churns 1000 alloc/free pairs in churn_buffers()
and keeps 3 x 8 MiB from leak_activations(). gpusnoop starts it, probes the CUDA runtime
before main() runs, and prints what the process still held when it exited:

\$ gpusnoop leaks -- $workload
EOT
./gpusnoop leaks -- "$workload"
echo "\$ gpusnoop leaks --format json -o $json -- $workload"
./gpusnoop leaks --format json -o "$json" -- "$workload" >/dev/null 2>&1
echo "wrote $json ($(wc -c <"$json") bytes): one JSON document per report"

cat <<EOT

Next, a workload that launches 3000 gemm_kernel, 1000 relu_kernel and 10 scale<float>
kernels, synchronizes 100 times (each ~2 ms) and copies data. gpusnoop records every call
as a timeline and prints a summary:

\$ gpusnoop record -o $trace -- $kernels
EOT
./gpusnoop record -o "$trace" -- "$kernels"
echo "wrote $trace ($(wc -c <"$trace") bytes): open it in https://ui.perfetto.dev"
