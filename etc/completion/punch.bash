# bash completion for punch (installed as
# /usr/share/bash-completion/completions/punch). Commands and options come
# from `punch --help` and each command's --help; job ids from
# `punch list --json`, asked of the server only when an id is due.

# The ids of the user's jobs, newest first (empty if the server cannot be
# reached). The --url/--secret given on the line are passed on.
_punch_job_ids()
{
    local -a conn=()
    local i
    for ((i = 1; i < ${#COMP_WORDS[@]} - 1; i++)); do
        case ${COMP_WORDS[i]} in
            --url|--secret) conn+=("${COMP_WORDS[i]}" "${COMP_WORDS[i+1]}") ;;
        esac
    done
    "${COMP_WORDS[0]}" "${conn[@]}" list --json 2>/dev/null |
        grep -o '"id"[[:space:]]*:[[:space:]]*"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/'
}

_punch()
{
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local commands="submit state list wait logs cancel fetch resume predict generate profile data keygen help version"
    local global="--url --secret --help --version"

    case $prev in
        --url|--secret|--interval|-i|--identity) return 0 ;;
        --max-new-tokens|--temperature|--top-k|--seed) return 0 ;;
        -o|--output)
            COMPREPLY=($(compgen -d -- "$cur")); return 0 ;;
        -s|--state)
            COMPREPLY=($(compgen -W "queued starting running succeeded failed cancelled timeout" -- "$cur"))
            return 0 ;;
        -f|--format)
            # fetch's -f is --format; logs' -f is --follow (takes no value).
            if [[ " ${COMP_WORDS[*]} " == *" fetch "* ]]; then
                COMPREPLY=($(compgen -W "safetensors npz both" -- "$cur")); return 0
            fi ;;
    esac

    # The command: the first word that is neither an option nor an option's value.
    local cmd="" i=1 nargs=0
    while ((i < COMP_CWORD)); do
        case ${COMP_WORDS[i]} in
            --url|--secret|--interval|-o|--output|-s|--state|-i|--identity) ((i++)) ;;
            -f|--format) [[ $cmd == fetch ]] && ((i++)) ;;
            -*) ;;
            *) if [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; else ((nargs++)); fi ;;
        esac
        ((i++))
    done

    if [[ -z $cmd ]]; then
        if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "$global" -- "$cur"))
        else
            COMPREPLY=($(compgen -W "$commands" -- "$cur"))
        fi
        return 0
    fi

    local opts=""
    case $cmd in
        submit) opts="--wait -w --quiet -q --dry-run -n --interval" ;;
        state)  opts="--json" ;;
        list)   opts="--state -s --json" ;;
        wait)   opts="--interval --quiet -q" ;;
        logs)   opts="--follow -f --interval" ;;
        cancel) opts="" ;;
        fetch)  opts="--output -o --format -f --onnx --all -a" ;;
        resume) opts="" ;;
        predict) opts="--output -o" ;;
        generate) opts="--max-new-tokens --temperature --top-k --seed --json" ;;
        profile) opts="--json" ;;
        data)   opts="" ;;
        keygen) opts="--identity -i --admin" ;;
        help)   COMPREPLY=($(compgen -W "$commands" -- "$cur")); return 0 ;;
        *)      return 0 ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts $global" -- "$cur"))
        return 0
    fi
    ((nargs > 0)) && return 0
    case $cmd in
        submit)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur")) ;;
        state|wait|logs|cancel|fetch|resume|predict|generate|profile)
            COMPREPLY=($(compgen -W "$(_punch_job_ids)" -- "$cur")) ;;
        data)
            COMPREPLY=($(compgen -W "push list rm" -- "$cur")) ;;
    esac
    return 0
}
complete -F _punch punch
