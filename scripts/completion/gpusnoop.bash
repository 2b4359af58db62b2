# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
# bash completion for gpusnoop: commands, options, -e events, pids and files. Everything is
# read from the gpusnoop being completed (`list`, `CMD --help`), so it follows the binary.

# The comma list after "EVENTS is a comma list of" in `record --help`.
_gpusnoop_events()
{
	"$1" record --help 2>/dev/null | tr '\n' ' ' |
		sed -n 's/.*EVENTS is a comma list of \([^.]*\)\..*/\1/p' | tr -d ','
}

# File names: directories end in "/" with no space after them, names are quoted (as
# bash-completion's _filedir). $1: -f (any file) or -d (directories).
_gpusnoop_files()
{
	local IFS=$'\n'

	COMPREPLY=($(compgen "$1" -- "$2"))
	compopt -o filenames 2>/dev/null
}

# -e a,b,c: complete the name after the last comma, keeping the ones before it.
_gpusnoop_complete_list()
{
	local cur=$1 words=$2 done_part=""

	if [[ $cur == *,* ]]; then
		done_part=${cur%,*},
		cur=${cur##*,}
	fi
	COMPREPLY=($(compgen -W "$words" -P "$done_part" -- "$cur"))
	compopt -o nospace 2>/dev/null
}

_gpusnoop()
{
	local bin=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local cmd=${COMP_WORDS[1]} i

	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$("$bin" list 2>/dev/null | awk '{ print $1 }') help" \
			-- "$cur"))
		return
	fi
	if [ "$cmd" = help ]; then
		[ "$COMP_CWORD" -eq 2 ] &&
			COMPREPLY=($(compgen -W "$("$bin" list 2>/dev/null | awk '{ print $1 }')" \
				-- "$cur"))
		return
	fi
	for ((i = 2; i < COMP_CWORD; i++)); do
		if [ "${COMP_WORDS[i]}" = -- ]; then # the command gpusnoop runs
			COMPREPLY=($(compgen -c -- "$cur"))
			return
		fi
	done
	# --opt=value: bash splits at '=' (COMP_WORDBREAKS)
	if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 2 ]; then
		prev=${COMP_WORDS[COMP_CWORD - 2]}
	elif [ "$cur" = "=" ]; then
		cur=""
	fi
	case $prev in
	-e | --events)
		_gpusnoop_complete_list "$cur" "$(_gpusnoop_events "$bin")"
		return
		;;
	-p | --pid)
		COMPREPLY=($(compgen -W "$(cd /proc && echo [0-9]*)" -- "$cur"))
		return
		;;
	--stacks)
		COMPREPLY=($(compgen -W "fp dwarf" -- "$cur"))
		return
		;;
	-s | --sort)
		[ "$cmd" = top ] &&
			COMPREPLY=($(compgen -W "pid rank mem torch tensors launches sync copies ooms" \
				-- "$cur"))
		return
		;;
	-f | --format)
		case $cmd in
		profile) COMPREPLY=($(compgen -W "folded pprof" -- "$cur")) ;;
		leaks) COMPREPLY=($(compgen -W "text json memory-snapshot" -- "$cur")) ;;
		stats) COMPREPLY=($(compgen -W "text csv json" -- "$cur")) ;;
		*) COMPREPLY=($(compgen -W "text json" -- "$cur")) ;;
		esac
		return
		;;
	-o | --output | --config | --check-config | --socket | --memory-snapshot)
		_gpusnoop_files -f "$cur"
		return
		;;
	--output-dir | --cgroup)
		_gpusnoop_files -d "$cur"
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$("$bin" "$cmd" --help 2>/dev/null |
			grep -oE -- '(^|[ ,])--?[a-zA-Z][a-zA-Z-]*' | tr -d ' ,' | sort -u)" -- "$cur"))
	elif [ "$cmd" = ctl ] && [ "$COMP_CWORD" -eq 2 ]; then
		COMPREPLY=($(compgen -W "status leaks snapshot record" -- "$cur"))
	elif [ "$cmd" = stitch ] || [ "$cmd" = stats ]; then
		_gpusnoop_files -f "$cur"
	fi
}
complete -F _gpusnoop gpusnoop
