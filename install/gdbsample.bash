# gdbsample.bash: bash completion for gdbsample and gdbsample-analyze (installed under both names).
# The options come from each tool's own --help (bash-completion's _parse_help), so they are never
# listed twice; only the values of options with a fixed set of choices are spelled out here.

_gdbsample()
{
    local cur prev words cword
    _init_completion || return

    case $prev in
        -e | -o | -u | --qmp | --tasks)
            _filedir
            return ;;
        -f)
            COMPREPLY=($(compgen -W 'report folded capture svg speedscope' -- "$cur"))
            return ;;
        --unwind)
            COMPREPLY=($(compgen -W 'auto fp cfi orc' -- "$cur"))
            return ;;
        --os)
            COMPREPLY=($(compgen -W 'auto linux testkernel none' -- "$cur"))
            return ;;
        --task-format)
            COMPREPLY=($(compgen -W 'comm comm-pid pid cpu' -- "$cur"))
            return ;;
        --summary-format)
            COMPREPLY=($(compgen -W 'human kv json' -- "$cur"))
            return ;;
        --domain)
            COMPREPLY=($(compgen -W '$(virsh list --name 2>/dev/null)' -- "$cur"))
            return ;;
        -p | -H | -r | -d | --interval | --connect | --kaslr-offset | --chains | --max-frames | --kernel-range | \
        --cpus | --pid | --comm | --max-pause | --connect-timeout | --every | --from | --until | \
        --max-hits | --phase | --phase-occurrence)
            return ;;  # a value to type
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '$(_parse_help "$1")' -- "$cur"))
    elif ((cword == 1)); then
        COMPREPLY=($(compgen -W 'record dump top replay count' -- "$cur"))
    fi
}
complete -F _gdbsample gdbsample

_gdbsample_analyze()
{
    local cur prev words cword
    _init_completion || return

    local command=${words[1]}
    if ((cword == 1)); then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W '$(_parse_help "$1")' -- "$cur"))
        else  # the commands: the lines of --help indented by four spaces
            COMPREPLY=($(compgen -W '$("$1" --help 2>/dev/null | awk "/^    [a-z]/ { print \$1 }")' -- "$cur"))
        fi
        return
    fi

    case $prev in
        -e | --elf | --base-elf | -o | --output | --diff)
            _filedir
            return ;;
        --task-format)
            COMPREPLY=($(compgen -W 'comm comm-pid pid cpu none' -- "$cur"))
            return ;;
        --kaslr-offset | --base-kaslr-offset | --cpu | --from | --until | --pid | --comm | --chains | \
        --tasks | --top | --title | --width | --tolerance | --max-tvd)
            return ;;  # a value to type
    esac

    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W '$(_parse_help "$1" "$command --help")' -- "$cur"))
    else
        _filedir  # captures, folded files, reports
    fi
}
complete -F _gdbsample_analyze gdbsample-analyze
