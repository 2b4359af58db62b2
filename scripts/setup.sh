#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Installs the Debian bookworm packages gpusnoop needs: `setup.sh build` what building,
# installing and running it (and `make demo`) need; `setup.sh test` (the default) those and
# what the tests, benchmarks and fuzzers use as well.
set -euo pipefail

BUILD_PACKAGES=(
	make gcc g++ clang llvm pkg-config
	libbpf-dev bpftool
	libelf-dev zlib1g-dev
	libmicrohttpd-dev # gpusnoop daemon: the Prometheus metrics endpoint
	libyajl-dev # streaming JSON parser: `gpusnoop stitch` reads traces larger than memory
	libdw-dev # DWARF CFI (.eh_frame/.debug_frame) for --stacks dwarf (user/unwind.c)
	liblzma-dev # MiniDebugInfo (.gnu_debugdata, xz): symbols of stripped files (user/debuginfo.c)
	systemtap-sdt-dev # <sys/sdt.h>: the USDT probes of the PyTorch-like demo/test fixtures
	help2man # make man/install: the man pages, made from each subcommand's --help
	bash-completion # loads scripts/completion/gpusnoop.bash once installed (make install)
)
TEST_PACKAGES=(
	python3 jq # the e2e tests
	python3-venv # e2e: the tests' own virtual environment (Holistic Trace Analysis)
	groff-base man-db # e2e: the man pages render without warnings
	prometheus # e2e: a real Prometheus server scrapes the daemon's metrics
	python3-torch # e2e tests against a real PyTorch (Debian 1.13, CPU); make bench
	bpftrace # e2e: a pending return probe under --stacks dwarf; make bench: the peer
	qemu-system-x86 cpio iproute2 # e2e test_kernels: boots 5.10, 5.15, 6.1, 6.12 (tests/kernels)
	libclang-rt-14-dev # libFuzzer and the sanitizers' runtimes: make fuzz, make fuzz-smoke
	debootstrap # make bundle's bullseye sysroot; test_bundle's minbase roots (scripts/bundle)
	linux-perf # e2e test_perf_agree: perf record -g is the reference for leaf frames
	libc6-dbg # e2e test_debuginfo: libc named from its separate debug file
	xz-utils # e2e test_debuginfo: a MiniDebugInfo section is made with xz
	debuginfod libdebuginfod1 # e2e test_debuginfod: a real server; the client gpusnoop dlopens
	tmux # e2e test_top: gpusnoop top on a real terminal (send-keys, capture-pane)
	systemd # e2e test_daemon_config: systemd-analyze verify of the unit
	util-linux mount # e2e test_daemon_config: unshare, setpriv, findmnt emulate the unit's sandbox
	golang-go # e2e test_daemon_profile: `go tool pprof` reads the daemon's profiles, over HTTP too
)

mode=${1:-test}
case "$mode" in
build) PACKAGES=("${BUILD_PACKAGES[@]}") ;;
test) PACKAGES=("${BUILD_PACKAGES[@]}" "${TEST_PACKAGES[@]}") ;;
*)
	echo "usage: $0 [build|test]" >&2
	exit 2
	;;
esac
# e2e: the tests' own virtual environment, kept with pip's downloads outside the work tree (a
# second run downloads nothing): Holistic Trace Analysis (PyPI) reads the GPU traces, pandas < 3
# as HTA 0.5 assigns across integer dtypes, which pandas 3 refuses; a real PyTorch 2.x writes
# the Kineto traces `stitch` merges and runs the CPU allocator `leaks` reads (test_torch2.py).
# PyPI's torch for Linux x86-64 is the full CUDA 12.4 build (its nvidia-* wheels: ~3 GB to
# download, 5 GB installed): the CPU-only wheels are on download.pytorch.org's own index, which
# CI cannot reach, and the CUDA build runs as well without a GPU (torch.cuda.is_available() is
# False), and the tests use only its CPU profiler and allocator. py-spy: the oracle the Python
# frames of 3.14 and 3.15 are compared with (test_python314.py). nvtx: NVIDIA's NVTX for Python,
# whose ranges `record -e nvtx` reads as it reads torch.cuda.nvtx's (test_nvtx.py).
# kubernetes-validate: the Kubernetes object schema, offline, for scripts/deploy/*.yaml
# (test_daemon_config.py). perfetto: Perfetto's trace schema as Python bindings
# (perfetto_trace_pb2), which decode `record --format perfetto` files (test_perfetto.py).
# A second one holds PyTorch 2.15 (its CUDA 13 build), whose memory snapshot format and
# allocator paths the memory snapshot tests check too (test_memory_snapshot.py).
TEST_CACHE=/var/cache/gpusnoop-tests
VENV_PACKAGES=(HolisticTraceAnalysis==0.5.0 'pandas<3' torch==2.5.1 py-spy==0.4.3 nvtx==0.2.17
	kubernetes-validate==1.37.0 perfetto==0.59.1)
VENV215_PACKAGES=(torch==2.15.0)
# venv_ready DIR PACKAGE...: DIR's interpreter has each package, at the version pinned
venv_ready() {
	local dir=$1
	shift
	"$dir/bin/python" - "$@" 2>/dev/null <<-'EOF'
		import re, sys
		from importlib.metadata import version
		for req in sys.argv[1:]:
		    name, op, want = re.fullmatch(r"([\w.-]+)(==|<)?(.*)", req).groups()
		    got = version(name)  # raises when not installed
		    assert op != "==" or got == want, (name, got, want)
	EOF
}
# setup_venv DIR PACKAGE...: made once; a second run finds them and downloads nothing
setup_venv() {
	local dir=$1
	shift
	venv_ready "$dir" "$@" && return 0
	echo "setup: installing $* in $dir" >&2
	mkdir -p "$TEST_CACHE"
	[ -x "$dir/bin/python" ] || python3 -m venv "$dir"
	PIP_CACHE_DIR="$TEST_CACHE/pip" "$dir/bin/pip" install -q "$@"
	venv_ready "$dir" "$@"
}

missing=()
for p in "${PACKAGES[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "setup: missing packages: ${missing[*]}; run as root (e.g. sudo make ...)" >&2
		exit 1
	fi
	echo "setup: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "$mode" = test ]; then
	setup_venv "$TEST_CACHE/venv" "${VENV_PACKAGES[@]}"
	setup_venv "$TEST_CACHE/venv-torch2.15" "${VENV215_PACKAGES[@]}"
	# Debian unstable's python3.14, python3.15 and PyTorch (tests/e2e/test_python314.py), made
	# once and cached; a failure here is the tests' to report, with roots.sh's own message
	"$(dirname "$0")/bundle/roots.sh" sid-torch >/dev/null ||
		echo "setup: the sid roots could not be made (tests/e2e/test_python314.py will say)" >&2
fi
