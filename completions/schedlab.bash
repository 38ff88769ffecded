# bash completion for schedlab: the commands, each command's options as its own --help
# gives them, the workloads for run and sweep and the presets for --preset as
# `schedlab list` gives them, so that it never names what the binary does not have.
# `make install` puts it where bash-completion finds it; or `source` it.

_schedlab_list() {
	# the names at the start of each entry of `schedlab list --what` (two-space indent)
	"$1" list "$2" 2>/dev/null | awk '/^  [a-z0-9]/ { print $1 }'
}

_schedlab_commands() {
	# the commands `schedlab --help` lists under "Commands:"
	"$1" --help 2>/dev/null |
		awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^$/ { exit }'
}

_schedlab() {
	local prog=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]} prev words
	local cmd=${COMP_WORDS[1]}

	prev=${COMP_WORDS[COMP_CWORD - 1]}
	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		mapfile -t COMPREPLY < <(compgen -W "$(_schedlab_commands "$prog") help" -- "$cur")
		return
	fi
	case $prev in
	--preset)
		mapfile -t COMPREPLY < <(compgen -W "$(_schedlab_list "$prog" --presets)" -- "$cur")
		return ;;
	-o | --out)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return ;;
	esac
	if [[ $cur == -* ]]; then
		# the options that begin a line of the help, not those its prose names
		words=$("$prog" "$cmd" --help 2>/dev/null | grep -oE -- '^ +(-., )?--[a-z][a-z0-9-]*' |
			grep -oE -- '--[a-z][a-z0-9-]*' | sort -u)
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	case $cmd in
	run | sweep)
		mapfile -t COMPREPLY < <(compgen -W "$(_schedlab_list "$prog" --workloads)" -- "$cur") ;;
	help)
		[ "$COMP_CWORD" -eq 2 ] &&
			mapfile -t COMPREPLY < <(compgen -W "$(_schedlab_commands "$prog")" -- "$cur") ;;
	compare | diagnose | flame)
		mapfile -t COMPREPLY < <(compgen -f -- "$cur") ;;
	esac
}

complete -F _schedlab schedlab
