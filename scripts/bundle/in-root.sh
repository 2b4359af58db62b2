#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# in-root.sh ROOT DIR CMD...: runs CMD chrooted in ROOT (a roots.sh root), in a mount namespace
# of its own: a fresh tmpfs on ROOT/tmp, DIR (the host's) at /tmp/in, and the host's /proc,
# /sys (BTF, tracefs, the uprobe PMU) and /dev. The mounts go with the namespace: the cached
# root is never written to, and nothing is left mounted however CMD ends.
set -euo pipefail
[ $# -ge 3 ] || {
	echo "usage: in-root.sh ROOT DIR CMD..." >&2
	exit 2
}
exec unshare --mount --propagation private -- bash -euc '
	root=$1 dir=$2
	shift 2
	mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
	mkdir "$root/tmp/in"
	mount --bind "$dir" "$root/tmp/in"
	for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
	exec chroot "$root" "$@"
' in-root "$@"
