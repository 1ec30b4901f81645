#!/bin/sh
# Run every fuzz target of a -Dfuzz=true build for SECONDS each, JOBS at a
# time, and print one line per target: execs, exec/s, coverage (cov: edges,
# ft: features), corpus size and crashes. Each target grows its own corpus in
# BUILD_DIR/fuzz-corpus/NAME (seeded from tests/fuzz/corpus/NAME; the source
# corpus is never written); crash inputs and logs go to BUILD_DIR/fuzz-out/.
# Usage: tests/fuzz/run-fuzz.sh [SECONDS [BUILD_DIR]]   (defaults: 60 build-fuzz)
# Environment: JOBS (default 1), TARGETS (default: every fuzz-* built).
set -eu
secs=${1:-60}
build=${2:-build-fuzz}
jobs=${JOBS:-1}
src=$(cd "$(dirname "$0")" && pwd)
bindir=$build/tests/fuzz
[ -d "$bindir" ] || { echo "run-fuzz: no $bindir: configure with -Dfuzz=true (tests/fuzz/README.md)" >&2; exit 2; }
bindir=$(cd "$bindir" && pwd)
out=$(cd "$build" && pwd)/fuzz-out
mkdir -p "$out"
if [ -z "${TARGETS:-}" ]; then
        TARGETS=""
        for f in "$bindir"/fuzz-*; do
                [ -f "$f" ] && [ -x "$f" ] && TARGETS="$TARGETS ${f##*/fuzz-}"
        done
fi
targets=$TARGETS
[ -n "$targets" ] || { echo "run-fuzz: no fuzz targets in $bindir (run ninja -C $build)" >&2; exit 2; }

run() {
        t=$1
        corpus=$(dirname "$out")/fuzz-corpus/$t
        mkdir -p "$corpus" "$out/$t"
        cp -n -- "$src/corpus/$t"/* "$corpus/" 2>/dev/null || true
        set -- -max_total_time="$secs" -timeout=5 -rss_limit_mb=1024 -print_final_stats=1 \
                -artifact_prefix="$out/$t/"
        [ -f "$src/dict/$t.dict" ] && set -- "$@" -dict="$src/dict/$t.dict"
        rc=0
        "$bindir/fuzz-$t" "$@" "$corpus" >"$out/$t.log" 2>&1 || rc=$?
        execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log")
        rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$out/$t.log")
        last=$(grep -E '^#[0-9]+' "$out/$t.log" | tail -n 1 || true)
        cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
        ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
        crashes=$(ls "$out/$t" | grep -c -E '^(crash|leak|timeout|oom)-' || true)
        printf '%-8s execs=%-9s exec/s=%-6s cov=%-5s ft=%-6s corpus=%-5s crashes=%s%s\n' "$t" "${execs:-?}" \
                "${rate:-?}" "${cov:-?}" "${ft:-?}" "$(ls "$corpus" | wc -l)" "$crashes" \
                "$([ "$rc" -ne 0 ] && echo " (exit $rc, see $out/$t.log)")"
}

fail=0
set -- $targets
while [ $# -gt 0 ]; do
        pids=""
        i=0
        while [ $i -lt "$jobs" ] && [ $# -gt 0 ]; do
                run "$1" >"$out/$1.line" &
                pids="$pids $!"
                shift
                i=$((i + 1))
        done
        for p in $pids; do
                wait "$p" || fail=1
        done
done
for t in $targets; do
        cat "$out/$t.line"
        grep -q 'crashes=0$' "$out/$t.line" || fail=1
done
exit $fail
