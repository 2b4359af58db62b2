#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Packs the initramfs the kernel tests boot: this build of gpusnoop, its fixtures and their libraries.
set -euo pipefail

# usage: mkinitrd.sh OUT.cpio.gz [INIT]  (INIT: another /init than init.sh, to debug a kernel)
# A minimal root made of copied binaries and the libraries ldd names for them, no distribution
# root: what the checks in init.sh run. The repository's gpusnoop and .output/fixtures keep
# their absolute paths, so RUNPATHs ($ORIGIN/../lib) and the paths the tests expect in stack
# frames are the same as on the host.
out=$(realpath -m "$1")
repo=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT

tools=(bash sh cat mkdir mount sleep gzip base64 timeout ls rm env seq grep uname sync)
tools+=(ip) # the guest brings lo up: the daemon serves metrics on 127.0.0.1
bins=()
for t in "${tools[@]}"; do
	bins+=("$(command -v "$t")")
done
bins+=("$repo/gpusnoop")
while IFS= read -r -d '' f; do
	bins+=("$f")
done < <(find "$repo/.output/fixtures" -type f \( -perm -u+x -o -name '*.so*' \) -print0)

mkdir -p "$root"/{proc,sys,dev,tmp,run,etc,bin,sbin,usr/bin}
mkdir -p "$root$repo/.output"
cp -a "$repo/.output/fixtures" "$root$repo/.output/"
cp "$repo/gpusnoop" "$root$repo/"
for t in "${tools[@]}"; do
	cp -L "$(command -v "$t")" "$root/bin/"
done
# every library any of them loads, and the loader
for lib in $(ldd "${bins[@]}" 2>/dev/null | awk '/=> \// { print $3 } /^\t\/[^ ]*ld-linux/ { print $1 }' |
	sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
mkdir -p "$root/lib64"
cp -L /lib64/ld-linux-x86-64.so.2 "$root/lib64/"
cp "${2:-$repo/tests/kernels/init.sh}" "$root/init"
chmod +x "$root/init"
echo "root:x:0:0::/:/bin/bash" >"$root/etc/passwd"
echo "$repo" >"$root/repo"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
