#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# Fetches Debian's cloud kernels (bullseye 5.10, bookworm 6.1, trixie 6.12) into the test cache.
set -euo pipefail

# usage: fetch.sh [SUITE...]; prints "SUITE PATH-TO-VMLINUZ" for each. apt-get download of the
# newest linux-image-*-cloud-amd64 of each Debian suite, with that suite's own lists (not the
# host's), unpacked with dpkg -x; a kernel already in the cache is not fetched again. "jammy"
# is Ubuntu 22.04's 5.15 (its release kernel, fixed: Debian has no Ubuntu keyring to check a
# suite's lists with, so the package's SHA-256 from jammy's index is pinned here).
CACHE=${GS_KERNEL_CACHE:-/var/cache/gpusnoop-tests/kernels}
MIRROR=${GS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
[ $# -gt 0 ] || set -- bullseye bookworm trixie

JAMMY_DEB=pool/main/l/linux/linux-image-unsigned-5.15.0-25-generic_5.15.0-25.25_amd64.deb
JAMMY_SHA256=ac69df20790c48217eb1386ef81fd10d3f20a4ede4dab81cc107c65d29549fa0
UBUNTU_MIRROR=${GS_UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}

fetch_jammy() {
	local dir=$1
	rm -rf "$dir" && mkdir -p "$dir/root"
	curl -fsS -o "$dir/k.deb" "$UBUNTU_MIRROR/$JAMMY_DEB"
	echo "$JAMMY_SHA256  $dir/k.deb" | sha256sum -c --quiet >&2
	dpkg -x "$dir/k.deb" "$dir/root"
	rm -f "$dir/k.deb"
}

fetch_one() {
	local suite=$1 dir=$CACHE/$1 apt pkg
	if ls "$dir"/root/boot/vmlinuz-* >/dev/null 2>&1; then
		echo "$suite $(ls "$dir"/root/boot/vmlinuz-* | head -1)"
		return
	fi
	if [ "$suite" = jammy ]; then
		fetch_jammy "$dir"
		echo "$suite $(ls "$dir"/root/boot/vmlinuz-* | head -1)"
		return
	fi
	apt=$dir/apt
	rm -rf "$dir" && mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir/root"
	echo "deb [signed-by=$KEYRING] $MIRROR $suite main" >"$apt/sources.list"
	local opts=(-o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o APT::Sandbox::User=root
		-o Debug::NoLocking=1)
	apt-get "${opts[@]}" -qq update >&2
	# the unsigned image where the suite has one (its files are the same), else the signed
	pkg=$(apt-cache "${opts[@]}" search --names-only '^linux-image-[0-9][0-9.+a-z-]*-cloud-amd64(-unsigned)?$' |
		awk '{ print $1 }' | sort -V | tail -1)
	[ -n "$pkg" ] || { echo "$suite: no cloud kernel found" >&2; return 1; }
	(cd "$dir" && apt-get "${opts[@]}" -qq download "$pkg" >&2)
	dpkg -x "$dir"/*.deb "$dir/root"
	rm -rf "$apt" "$dir"/*.deb "$dir/root/lib" "$dir/root/usr" # modules: the tests need none
	echo "$suite $(ls "$dir"/root/boot/vmlinuz-* | head -1)"
}

for suite in "$@"; do
	fetch_one "$suite"
done
