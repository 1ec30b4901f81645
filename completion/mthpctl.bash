# bash completion for mthpctl(8)
# shellcheck shell=bash

_mthpctl_sizes() {
        # the sizes this kernel offers (hugepages-64kB -> 64K), else the x86-64 set
        local d kb sizes=()
        for d in /sys/kernel/mm/transparent_hugepage/hugepages-*kB; do
                [ -d "$d" ] || continue
                kb=${d##*hugepages-}
                kb=${kb%kB}
                if ((kb >= 1024 && kb % 1024 == 0)); then
                        sizes+=("$((kb / 1024))M")
                else
                        sizes+=("${kb}K")
                fi
        done
        ((${#sizes[@]})) || sizes=(8K 16K 32K 64K 128K 256K 512K 1M 2M)
        echo "${sizes[@]}"
}

_mthpctl_knobs() {
        local s
        for s in $(_mthpctl_sizes); do
                [ "$s" = 8K ] || echo "$s/anon"
                echo "$s/shmem"
        done
        echo global/enabled global/defrag global/shmem_enabled
}

# the values the kernel offers for knob $1, read from its file
_mthpctl_values() {
        local dir=/sys/kernel/mm/transparent_hugepage file size kb
        case $1 in
        global/*) file=$dir/${1#global/} ;;
        */anon | */shmem)
                size=${1%/*}
                case $size in
                *M) kb=$((${size%M} * 1024)) ;;
                *) kb=${size%K} ;;
                esac
                [ "${1#*/}" = anon ] && file=$dir/hugepages-${kb}kB/enabled || file=$dir/hugepages-${kb}kB/shmem_enabled
                ;;
        esac
        if [ -r "$file" ]; then
                tr -d '[]' < "$file"
        else
                echo always inherit madvise within_size advise never defer defer+madvise deny force
        fi
}

# files (or directories with -d), without needing the bash-completion package
_mthpctl_files() {
        local IFS=$'\n'
        compopt -o filenames 2>/dev/null || true
        COMPREPLY=($(compgen "${1:--f}" -- "$cur"))
}

_mthpctl() {
        local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
        local words=("${COMP_WORDS[@]}") cword=$COMP_CWORD
        COMPREPLY=()

        local commands="status sizes cgroups explain history metrics top pin unpin resume mode reload restore exec check simulate help"
        local global="-j --json -r --root -s --state-dir --sample -h --help --version"

        case $prev in
        -r | --root | -s | --state-dir)
                _mthpctl_files -d
                return
                ;;
        -c | --config | -o | --output)
                _mthpctl_files
                return
                ;;
        -p | --policy-dir)
                _mthpctl_files -d
                return
                ;;
        --sample | -i | --interval)
                COMPREPLY=($(compgen -W "0 100ms 500ms 1s 2s 5s" -- "$cur"))
                return
                ;;
        --since | --until)
                COMPREPLY=($(compgen -W "-1h -30min -1d today yesterday now +1h +1d tomorrow" -- "$cur"))
                return
                ;;
        --for)
                COMPREPLY=($(compgen -W "30min 1h 2h 8h 1d 1w" -- "$cur"))
                return
                ;;
        -n | --lines | --iterations)
                return
                ;;
        -t | --type)
                COMPREPLY=($(compgen -W "config policy" -- "$cur"))
                return
                ;;
        esac

        # the command: the first word that is not an option or an option's value
        local i cmd="" cmd_at=0
        for ((i = 1; i < cword; i++)); do
                case ${words[i]} in
                -r | --root | -s | --state-dir | --sample) ((i++)) ;;
                -*) ;;
                *)
                        cmd=${words[i]}
                        cmd_at=$i
                        break
                        ;;
                esac
        done

        if [ -z "$cmd" ]; then
                if [[ $cur == -* ]]; then
                        COMPREPLY=($(compgen -W "$global" -- "$cur"))
                else
                        COMPREPLY=($(compgen -W "$commands" -- "$cur"))
                fi
                return
        fi

        # exec: after '--' it is the command line of CMD
        if [ "$cmd" = exec ]; then
                for ((i = cmd_at + 1; i < cword; i++)); do
                        [ "${words[i]}" = -- ] || continue
                        if declare -F _command_offset >/dev/null; then
                                _command_offset $((i + 1)) # bash-completion: complete CMD as CMD would
                        elif ((cword == i + 1)); then
                                COMPREPLY=($(compgen -c -- "$cur"))
                        else
                                _mthpctl_files
                        fi
                        return
                done
        fi

        local opts="-r --root -s --state-dir -h --help"
        case $cmd in
        status) opts+=" -j --json --sample" ;;
        sizes | explain | mode) opts+=" -j --json" ;;
        history) opts+=" -j --json -n --lines --since" ;;
        top) opts+=" -i --interval --iterations" ;;
        pin) opts+=" --for --until" ;;
        exec) opts+=" --thp=disable --thp=except-advised --thp=madvise --thp=inherit --" ;;
        simulate) opts+=" -j --json -c --config -p --policy-dir" ;;
        cgroups) opts+=" -j --json --sample -p --policy-dir" ;;
        check) opts+=" -j --json -t --type" ;;
        metrics) opts+=" -j --json -o --output" ;;
        esac
        if [[ $cur == -* ]]; then
                COMPREPLY=($(compgen -W "$opts" -- "$cur"))
                [[ ${COMPREPLY-} != *= ]] || compopt -o nospace 2>/dev/null || true
                return
        fi

        # positional arguments: count those after the command
        local args=()
        for ((i = cmd_at + 1; i < cword; i++)); do
                case ${words[i]} in
                -r | --root | -s | --state-dir | --sample | -n | --lines | --since | --for | --until | \
                        -i | --interval | --iterations | -c | --config | -p | --policy-dir | -t | --type) ((i++)) ;;
                -*) ;;
                *) args+=("${words[i]}") ;;
                esac
        done
        case $cmd in
        explain)
                ((${#args[@]} == 0)) && COMPREPLY=($(compgen -W "$(_mthpctl_sizes)" -- "$cur"))
                ;;
        pin)
                if ((${#args[@]} == 0)); then
                        COMPREPLY=($(compgen -W "$(_mthpctl_knobs)" -- "$cur"))
                elif ((${#args[@]} == 1)); then
                        COMPREPLY=($(compgen -W "$(_mthpctl_values "${args[0]}")" -- "$cur"))
                fi
                ;;
        unpin | resume)
                ((${#args[@]} == 0)) && COMPREPLY=($(compgen -W "$(_mthpctl_knobs)" -- "$cur"))
                ;;
        mode)
                ((${#args[@]} == 0)) && COMPREPLY=($(compgen -W "manage observe" -- "$cur"))
                ;;
        check | simulate)
                _mthpctl_files
                ;;
        esac
} &&
        complete -F _mthpctl mthpctl
