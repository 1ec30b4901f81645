#!/bin/bash
# bash completion of mthpctl: commands, options, sizes, knob ids and values.
# Env: COMPLETION (completion/mthpctl.bash).
set -euo pipefail
# shellcheck source=/dev/null
. "$COMPLETION"

fail() { echo "FAIL: $*" >&2; exit 1; }
comp() { # comp WORD...: what completing the last word offers
        COMP_WORDS=("$@")
        COMP_CWORD=$(($# - 1))
        COMPREPLY=()
        _mthpctl
        echo "${COMPREPLY[*]-}"
}
expect() { # expect "WORDS" WANTED...: every WANTED is offered
        local got
        # shellcheck disable=SC2086
        got=" $(comp $1) "
        shift
        for w in "$@"; do
                [[ $got == *" $w "* ]] || fail "completing '$*' offers '$got', not '$w'"
        done
}

[ "$(comp mthpctl st)" = status ] || fail "st -> $(comp mthpctl st)"
expect "mthpctl ''" status sizes cgroups explain history metrics top pin unpin resume mode reload restore exec check simulate
expect "mthpctl --" --json --root --state-dir --sample --help --version
expect "mthpctl history --" --since --lines --json
expect "mthpctl top --" --interval --iterations
expect "mthpctl cgroups --" --json --sample --policy-dir
expect "mthpctl metrics --" --json --output
expect "mthpctl simulate x --" --config --policy-dir
expect "mthpctl pin 64K/anon always --" --for --until
expect "mthpctl exec --thp" --thp=disable --thp=except-advised --thp=madvise --thp=inherit
expect "mthpctl mode ''" manage observe
expect "mthpctl check --" --type --json
expect "mthpctl check --type ''" config policy
expect "mthpctl -s /tmp explain ''" 16K 64K 2M
expect "mthpctl pin ''" 16K/anon 64K/shmem 8K/shmem global/defrag
[[ " $(comp mthpctl pin '') " != *" 8K/anon "* ]] || fail "8K has no anon knob"
expect "mthpctl pin 64K/anon ''" always never
expect "mthpctl pin global/defrag ''" defer madvise
expect "mthpctl unpin 2" 2M/anon 2M/shmem
expect "mthpctl history --since ''" -1h yesterday
expect "mthpctl exec -- gre" grep
mkdir -p "${TMPDIR:-/tmp}/mthpctl-comp.$$/conf.d"
touch "${TMPDIR:-/tmp}/mthpctl-comp.$$/a.conf"
expect "mthpctl check ${TMPDIR:-/tmp}/mthpctl-comp.$$/a" "${TMPDIR:-/tmp}/mthpctl-comp.$$/a.conf"
expect "mthpctl --state-dir ${TMPDIR:-/tmp}/mthpctl-comp.$$/c" "${TMPDIR:-/tmp}/mthpctl-comp.$$/conf.d"
rm -r "${TMPDIR:-/tmp}/mthpctl-comp.$$"
echo "ok - completion offers commands, options, sizes, knobs and values"
