#!/usr/bin/env bash
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# gen-man.sh BIN OUTDIR: gpusnoop(8) and gpusnoop-CMD(8) for each command `BIN list` names,
# made by help2man from BIN's --help, so a man page says what --help says. EXAMPLES are kept
# verbatim (help2man would fold them into paragraphs). The hand-written sections of a page
# (DESCRIPTION, FILES, SECURITY, ...) are scripts/man/sections/NAME.8.md, a small Markdown that
# md2roff.awk turns into help2man's include format: reference lives there, the README guides.
# gpusnoop(7), how gpusnoop works, is scripts/man/sections/gpusnoop.7.md alone.
set -euo pipefail

bin=$1
out=$2
if ! command -v help2man >/dev/null; then
	echo "gen-man.sh: help2man is not installed (apt-get install help2man, or" \
		"./scripts/setup.sh build)" >&2
	exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
version=$("$bin" --version | awk '{ print $2; exit }')
commands=$("$bin" list | awk '{ print $1 }')

# The lines after "EXAMPLES:" of a --help text, up to the first blank line, as roff no-fill.
examples_roff() {
	awk '/^EXAMPLES:$/ { on = 1; next } on && /^$/ { exit } on' "$1" |
		sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e 's/^[.'\'']/\\\&&/' -e 's/^ *//'
}

# help2man's page, renamed NAME (gpusnoop-record, not gpusnoop) and its EXAMPLES verbatim.
page() {
	local name=$1 summary=$2 cmd=$3
	local help="$tmp/$name.help" include="$tmp/$name.h2m"

	$cmd --help >"$help"
	{
		echo "[SEE ALSO]"
		if [ "$name" = gpusnoop ]; then
			printf '.BR gpusnoop (7),\n'
			for c in $commands; do printf '.BR gpusnoop\\-%s (8)\n' "$c"; done
		elif [ "$name" = gpusnoop-daemon ]; then
			printf '.BR gpusnoop (8),\n.BR gpusnoop.conf (5)\n'
		else
			echo ".BR gpusnoop (8)"
		fi
		if [ -e "$here/sections/$name.8.md" ]; then
			awk -f "$here/md2roff.awk" "$here/sections/$name.8.md"
		fi
	} >"$include"
	help2man --no-info --section=8 --manual="gpusnoop manual" --source="gpusnoop $version" \
		--name="$summary" --include="$include" "$cmd" >"$tmp/$name.raw"
	examples_roff "$help" >"$tmp/$name.examples"
	awk -v upper="$(echo "$name" | tr a-z- A-Z-)" -v name="$name" -v ex="$tmp/$name.examples" '
		/^\.TH / { sub(/^\.TH [^ ]+/, ".TH " upper) }
		/^\.SH NAME$/ { print; getline; sub(/^[^ ]+ \\-/, name " \\-") }
		/^\.SS "EXAMPLES:"$/ {
			print ".SH EXAMPLES"; print ".nf"
			while ((getline line < ex) > 0) print line
			print ".fi"; skip = 1; next
		}
		skip && /^\.S[HS] / { skip = 0 }
		!skip' "$tmp/$name.raw" >"$out/$name.8"
}

page gpusnoop "CUDA and PyTorch memory, calls and CPU stacks of running processes, with eBPF" \
	"$bin"
for c in $commands; do
	page "gpusnoop-$c" "$("$bin" list | awk -v c="$c" '$1 == c { $1 = ""; sub(/^ /, ""); print }')" \
		"$bin $c"
done

# gpusnoop(7): no --help behind it, so the include format's "[SECTION]" lines become .SH here
month=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(date +%s)}" +'%B %Y') # as help2man dates its pages
{
	printf '.TH GPUSNOOP 7 "%s" "gpusnoop %s" "gpusnoop manual"\n' "$month" "$version"
	printf '.SH NAME\ngpusnoop \\- how gpusnoop traces: probes, process trees, PyTorch, stacks,'
	printf ' floods, security, performance\n'
	awk -f "$here/md2roff.awk" "$here/sections/gpusnoop.7.md" |
		awk '/^\[.*\]$/ { print ".SH \"" substr($0, 2, length($0) - 2) "\""; next } 1'
	printf '.SH "SEE ALSO"\n.BR gpusnoop (8),\n.BR gpusnoop.conf (5)\n'
} >"$out/gpusnoop.7"
