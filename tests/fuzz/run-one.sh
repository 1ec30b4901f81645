#!/bin/sh
# Run one libFuzzer target for a bounded time over a temporary copy of its
# seed corpus (the source corpus is never written). A crash, leak, timeout or
# failed invariant fails the test; the input is kept in ARTIFACT_DIR and
# printed (hex) so that it can be reproduced with `FUZZER FILE`.
# Usage: run-one.sh FUZZER CORPUS_DIR ARTIFACT_DIR [DICT]
# Environment: MTHP_FUZZ_SECONDS (default 10).
set -eu
bin=$1 corpus=$2 artifacts=$3 dict=${4:-}
secs=${MTHP_FUZZ_SECONDS:-10}
name=$(basename "$bin")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mthp-$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/corpus" "$tmp/crash"
if [ -d "$corpus" ]; then
        cp -- "$corpus"/* "$tmp/corpus/" 2>/dev/null || true
fi
set -- -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 -print_final_stats=1 \
        -artifact_prefix="$tmp/crash/"
[ -n "$dict" ] && set -- "$@" -dict="$dict"

rc=0
"$bin" "$@" "$tmp/corpus" >"$tmp/log" 2>&1 || rc=$?
# the last status line: "#N DONE cov: X ft: Y corp: Z/SIZE ..."
last=$(grep -E '^#[0-9]+' "$tmp/log" | tail -n 1 || true)
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$tmp/log")
echo "$name: ${secs}s, rc=$rc, execs=${execs:-?}: $last"
crashes=$(ls "$tmp/crash" | wc -l)
if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
        tail -n 60 "$tmp/log"
        mkdir -p "$artifacts"
        for f in "$tmp/crash"/*; do
                [ -e "$f" ] || continue
                cp -- "$f" "$artifacts/"
                echo "--- input $artifacts/$(basename "$f") ($(wc -c <"$f") bytes):"
                od -A d -c "$f" | head -n 40
        done
        exit 1
fi
