#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# check-glibc.sh FILE...: fails unless each ELF file needs glibc <= 2.31 only: no GLIBC_
# symbol version above 2.31, and no needed library outside glibc (libc, libm, libdl,
# libpthread, librt, the loader). What `make bundle` promises: it runs on any glibc >= 2.31.
set -euo pipefail

MAX=2.31
GLIBC_LIBS='^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1'
GLIBC_LIBS+='|ld-linux-x86-64\.so\.2)$'
status=0
for f in "$@"; do
	newest=$(objdump -T "$f" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
	highest=$(printf '%s\n%s\n' "${newest:-$MAX}" "$MAX" | sort -V | tail -1)
	if [ "$highest" != "$MAX" ]; then
		echo "check-glibc: $f needs GLIBC_$newest (> $MAX):" >&2
		objdump -T "$f" | grep -E "GLIBC_$newest\b" | head -5 >&2
		status=1
	fi
	others=$(objdump -p "$f" | awk '$1 == "NEEDED" { print $2 }' | grep -Ev "$GLIBC_LIBS" || true)
	if [ -n "$others" ]; then
		echo "check-glibc: $f needs libraries outside glibc: $(echo $others)" >&2
		status=1
	fi
done
exit $status
