#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# roots.sh: prints the path of a cached Debian root, making it first (debootstrap minbase):
#   sysroot   bullseye with the -dev packages' static .a files: `make bundle` links against its
#             glibc 2.31, so the bundle runs on any glibc >= 2.31
#   bullseye  bare minbase + python3 (glibc 2.31): test_bundle runs the bundle in it
#   bookworm  bare minbase + python3 (glibc 2.36): likewise
#   sid       minbase + python3.14 + python3.15 (Debian unstable, stripped interpreters): the
#             Python-frame e2e tests run them chrooted, gpusnoop outside (tests/e2e/test_python314)
#   sid-torch sid + python3-torch (PyTorch for 3.14), installed by apt inside a copy of sid
# Roots live under /var/cache/gpusnoop-tests/roots/NAME (ROOTS_DIR=), made in a temporary
# folder and renamed into place, under a lock, so a cut-off run or a parallel one leaves no half
# root behind. Needs root and debootstrap (scripts/setup.sh test installs it).
set -euo pipefail

ROOTS_DIR=${ROOTS_DIR:-/var/cache/gpusnoop-tests/roots}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SYSROOT_PACKAGES=libc6-dev,libelf-dev,libdw-dev,zlib1g-dev,libzstd-dev,liblzma-dev
SYSROOT_PACKAGES+=,libbz2-dev,libyajl-dev,libmicrohttpd-dev,libstdc++-10-dev,linux-libc-dev
# a version bump of a root's contents: roots made before it are made again
ROOT_VERSION=1

# The -dev packages' lib*.so links are absolute (/lib/x86_64-linux-gnu/libdl.so.2): followed
# from outside the root they reach the host's newer glibc. Make them relative to the root.
relink() {
	local link target
	find "$1/usr/lib" "$1/usr/lib64" -xdev -type l -lname '/*' -print0 |
		while IFS= read -r -d '' link; do
			target=$(readlink "$link")
			ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$1$target")" "$link"
		done
}

name=${1:?usage: roots.sh sysroot|bullseye|bookworm|sid|sid-torch}
case "$name" in
sysroot) suite=bullseye include=$SYSROOT_PACKAGES ;;
bullseye | bookworm) suite=$name include=python3 ;;
sid) suite=sid include=python3.14,python3.15 ;;
sid-torch) suite=sid include=python3-torch base=sid ;;
*)
	echo "roots.sh: unknown root '$name'" >&2
	exit 2
	;;
esac
root=$ROOTS_DIR/$name
stamp=$root/.gpusnoop-root-$ROOT_VERSION
if [ -e "$stamp" ]; then
	echo "$root"
	exit 0
fi
mkdir -p "$ROOTS_DIR"
exec 9>"$ROOTS_DIR/.$name.lock"
flock 9
if [ ! -e "$stamp" ]; then
	command -v debootstrap >/dev/null || {
		echo "roots.sh: no debootstrap (run ./scripts/setup.sh test)" >&2
		exit 1
	}
	tmp=$ROOTS_DIR/.$name.tmp
	rm -rf "$tmp"
	echo "roots.sh: making $name ($suite minbase, $include) in $root" >&2
	if [ -n "${base:-}" ]; then
		# a root derived from another: a copy of it, with apt's packages added inside
		from=$("$0" "$base")
		cp -a "$from" "$tmp"
		rm -f "$tmp/.gpusnoop-root-$ROOT_VERSION"
		if ! chroot "$tmp" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends ${include//,/ } >"$ROOTS_DIR/.$name.log" 2>&1; then
			echo "roots.sh: apt-get install $include in $name failed:" >&2
			tail -5 "$ROOTS_DIR/.$name.log" >&2
			rm -rf "$tmp"
			exit 1
		fi
		rm -rf "$tmp"/var/cache/apt/archives/*.deb
		touch "$tmp/.gpusnoop-root-$ROOT_VERSION"
		rm -rf "$root"
		mv "$tmp" "$root"
		echo "$root"
		exit 0
	fi
	# bullseye leaves deb.debian.org for archive.debian.org when its LTS ends: try both
	ok=
	for mirror in "$MIRROR" http://archive.debian.org/debian; do
		rm -rf "$tmp"
		if debootstrap --variant=minbase --include="$include" "$suite" "$tmp" "$mirror" \
			>"$ROOTS_DIR/.$name.log" 2>&1; then
			ok=1
			break
		fi
	done
	if [ -z "$ok" ]; then
		echo "roots.sh: debootstrap $suite failed; last lines of $ROOTS_DIR/.$name.log:" >&2
		tail -5 "$ROOTS_DIR/.$name.log" >&2
		exit 1
	fi
	# nothing cached that a root does not need: apt's downloads
	rm -rf "$tmp"/var/cache/apt/archives/*.deb
	[ "$name" != sysroot ] || relink "$tmp"
	touch "$tmp/.gpusnoop-root-$ROOT_VERSION"
	rm -rf "$root"
	mv "$tmp" "$root"
fi
echo "$root"
