#!/bin/bash
# Golden output of 'mthpctl simulate': every trace under tests/engine/traces
# through the simulator, plain and --json, with no policy, with the shipped
# conf/policy.d and with the policy sets under tests/ctl/golden/, must print
# byte for byte what tests/ctl/golden/*.out holds (stdout, stderr and exit
# status). It guards moves of mthpctl's code: a move changes no output.
# A deliberate change of simulate's output or of the engine regenerates the
# files: MTHP_GOLDEN_UPDATE=1 meson test -C build simulate-golden, then
# review the diff.
# Env: MTHPCTL (path from meson).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
GOLDEN=$HERE/golden
TRACES=$SRC/tests/engine/traces
[ -x "${MTHPCTL:-}" ] || { echo "SKIP: MTHPCTL is not set to a built mthpctl"; exit 77; }
T=$(mktemp -d /tmp/mthpd-golden.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# policy files must be root's and not writable by others (mthpd.policy(5)):
# copy them so a checkout's owner and umask do not matter
copy_policies() { # SRC_DIR NAME
        mkdir -p "$T/$2"
        cp "$1"/*.policy "$T/$2/"
        chmod 0755 "$T/$2"
        chmod 0644 "$T/$2"/*.policy
}
copy_policies "$SRC/conf/policy.d" shipped
for p in "$GOLDEN"/policy-*/; do copy_policies "$p" "$(basename "$p")"; done
if [ "$(stat -c %u "$T/shipped/50-database.policy")" != 0 ]; then
        echo "SKIP: policy files must be owned by root and this runs as uid $(id -u)"
        exit 77
fi

cd "$TRACES" # the summary names the trace as given: keep it relative
mismatch=0
for variant in none shipped policy-always policy-never policy-auto; do
        out=$T/$variant.out
        : > "$out"
        for trace in *.rec; do
                for json in "" --json; do
                        args=($json simulate "$trace")
                        [ "$variant" = none ] || args+=(--policy-dir "$T/$variant")
                        rc=0
                        "$MTHPCTL" "${args[@]}" > "$T/stdout" 2> "$T/stderr" || rc=$?
                        {
                                echo "### mthpctl ${args[*]/$T\//} (exit $rc)"
                                cat "$T/stdout"
                                if [ -s "$T/stderr" ]; then
                                        echo "### stderr"
                                        cat "$T/stderr"
                                fi
                        } >> "$out"
                done
        done
        if [ "${MTHP_GOLDEN_UPDATE:-}" = 1 ]; then
                cp "$out" "$GOLDEN/$variant.out"
                echo "updated $GOLDEN/$variant.out"
        elif ! diff -u "$GOLDEN/$variant.out" "$out"; then
                echo "FAIL: simulate output differs from $GOLDEN/$variant.out" >&2
                mismatch=1
        fi
done
[ "$mismatch" = 0 ] || exit 1
echo "ok: $(ls "$TRACES"/*.rec | wc -l) traces x 5 policy sets x plain/--json match the golden output"
