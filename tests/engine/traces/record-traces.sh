#!/bin/bash
# Re-record the real-workload traces that tests/record/test-traces.c replays
# through the engine (so the engine tests run without a kernel).
#
#   sudo tests/engine/traces/record-traces.sh BUILD_DIR [TRACE...]
#
# TRACE: dense-anon, sparse-anon, dense-shmem, mixed-anon, zero-anon,
# limited-sparse (default: all those), zero-anon-oldsampler (the same as
# zero-anon; record it with BUILD_DIR = a build of 648cb41^ and WORKLOAD = a
# newer mthp-workload with --value; 648cb41^ is the density sampler from
# before "zeros count as bloat only in mappings that hold data": it is the
# input that sampler gave the engine). zero-anon: will-it-scale page_fault1's
# shape, a dense anon fault loop writing 0 to every page (mthp-workload
# --value 0). pgbench-select, pgbench-select-30s, pgbench-select-unit,
# pgbench-tpcb-unit, stress-vm, stress-vm-2w, stress-vm-512k and
# stress-vm-grown are not
# recorded here: tests/bench/mthp-bench records them (--record-dir, see
# docs/benchmarks.md; pgbench-select-30s: --scenario pgbench-select --sizes 64K
# --reps 5 --real-seconds 30, the median run of mthpd; stress-vm: --mthpd-caps
# unit --sizes 64K --scenario stress-vm --configs mthpd --reps 1
# --real-seconds 10, stress-ng --vm's workers; stress-vm-2w: --mthpd-caps
# unit --configs 4K,all,mthpd --reps 3 --real-seconds 15 --scenario
# stress-vm, the first rep's mthpd run, recorded on main with the churn
# rule (33ea5f8..2d385fb); stress-vm-512k and stress-vm-grown:
# --mthpd-caps unit --configs 4K,all,mthpd --reps 3 --real-seconds 30
# --scenario pgbench-select --scenario stress-vm on 94ec70e, the mthpd
# runs of reps 1 and 2; pgbench-*-unit: --mthpd-caps
# unit --sizes 64K --configs 4K,64K,all,mthpd --reps 3 --real-seconds 30, the
# median run of mthpd; recorded on 1e30669, whose sampler also read anon
# zeros mapped by PTEs as small while 2M anon was on: no anon size was
# raised in them, so it did not apply; pgbench-select-burst: --mthpd-caps
# root --configs all,mthpd --reps 5 --real-seconds 30 --scenario
# pgbench-select --mthpd-config (CollapseBudget=256M) on de5b01d, rep 3's
# mthpd run, whose fault-burst tick 3 came before the backends; mixed-burst,
# mixed-blind and mixed-shell: --mthpd-caps root --configs 4K,2M,all,mthpd
# --reps 5 --scenario mixed (mixed-burst, mixed-blind: runs 142 and 133 on
# dc4f9cb; mixed-shell: --configs 4K,all,mthpd, run 18 on 7516063);
# sparse-shell: --configs 4K,all,mthpd --reps 3 --scenario sparse-anon on
# 7516063, run 42); buildbox: tests/bench/mixed-host --only-buildbox --reps 3
# --record-dir DIR on 1c95ad2 (a gcc -O2 loop and short scripts under mthpd,
# managing the real knobs), rep 1's file cut after tick 40, when another
# tree's dense test program started on the shared host). A new trace needs
# the golden output of simulate regenerated: MTHP_GOLDEN_UPDATE=1 MTHPCTL=BUILD/ctl/mthpctl
# tests/ctl/simulate-golden.sh. limited-sparse (issue
# 16): the dense anon workload, and 3 s into it a sparse one (1 GiB, 1 byte
# per 64 KiB, held) in a v1 memory cgroup mthpd-test-trace-PID limited to
# 600 MB, created then (needs the v1 memory hierarchy at /sys/fs/cgroup/memory).
# Needs root (density sampling reads other processes' pagemap) and a kernel
# with mTHP sysfs. mthpd runs with --dry-run: it writes no knob; the knobs
# keep whatever values the host has. Each trace: ~2 s idle, the workload for
# 6 s, ~2 s idle, ticks of 500 ms. The workloads run as symlinks named
# mthp-dense / mthp-sparse, so their comm says which is which.
# Holds the real-kernel lock so that no benchmark changes knobs meanwhile.
# Checks that 'mthpctl simulate' on each new trace makes exactly the changes
# the dry-run daemon logged. TRACE_DIR=DIR writes the traces there instead.
set -euo pipefail

BUILD=$(realpath "${1:?usage: $0 BUILD_DIR [TRACE...]}")
shift
OUT=${TRACE_DIR:-$(dirname "$(realpath "$0")")}
MTHPD=$BUILD/daemon/mthpd
MTHPCTL=$BUILD/ctl/mthpctl
[[ -x $MTHPCTL ]] || MTHPCTL=$BUILD/daemon/mthpctl  # builds before mthpctl moved to ctl/
WORKLOAD=${WORKLOAD:-$BUILD/tests/bench/mthp-workload}  # zero-anon-oldsampler: the new one (--value)
LOCK=${MTHP_REALKERNEL_LOCK:-/tmp/mthpd-realkernel.lock}
[[ $(id -u) == 0 ]] || { echo "$0: needs root" >&2; exit 1; }
[[ -x $MTHPD && -x $WORKLOAD ]] || { echo "$0: build $BUILD first" >&2; exit 1; }

exec 9>>"$LOCK"
flock -w 900 9 || { echo "$0: $LOCK busy for 15 min" >&2; exit 1; }

T=$(mktemp -d /tmp/mthp-traces.XXXXXX)
PIDS=()
cleanup() {
        local p
        for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        rm -rf "$T"
}
trap cleanup EXIT
ln -s "$WORKLOAD" "$T/mthp-dense"
ln -s "$WORKLOAD" "$T/mthp-sparse"
: > "$T/empty.conf"   # built-in defaults: a recording does not depend on them

# record NAME WORKLOAD-ARGS... (';' separates workloads that run together)
record() {
        local name=$1 rec=$OUT/$1.rec log=$T/$1.log
        shift
        mkdir -p "$T/state-$name"
        "$MTHPD" --dry-run --interval 500ms -c "$T/empty.conf" --state-dir "$T/state-$name" \
                --record "$rec" 2>"$log" &
        local daemon=$!
        PIDS=("$daemon")
        sleep 2
        local args=() wl=()
        for a in "$@" ';'; do
                if [[ $a == ';' ]]; then
                        "${args[@]}" --seconds 6 --quiet >>"$T/$name.workload" 2>&1 &
                        wl+=($!)
                        args=()
                else
                        args+=("$a")
                fi
        done
        PIDS+=("${wl[@]}")
        wait "${wl[@]}"
        sleep 2
        kill -TERM "$daemon"
        wait "$daemon"
        PIDS=()
        sed -n 's/^mthpd: would set //p' "$log" > "$T/$name.daemon"
        "$MTHPCTL" simulate "$rec" | sed -n 's/^tick [0-9]*: //p' > "$T/$name.replay"
        local same="replay makes the same changes"
        cmp -s "$T/$name.daemon" "$T/$name.replay" || { same="REPLAY DIFFERS"; diff "$T/$name.daemon" "$T/$name.replay" || true; }
        echo "$name: $(grep -c '^tick ' "$rec") ticks, $(du -k "$rec" | cut -f1) KiB;" \
                "$(wc -l < "$T/$name.daemon") would-be changes, $same; workload:" \
                "$(sed -n 's/^summary //p' "$T/$name.workload" | tr '\n' ' ')"
}

CG=/sys/fs/cgroup/memory/mthpd-test-trace-$$
cg_remove() {
        [[ -d $CG ]] || return 0
        local p
        for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null || true; done
        for _ in $(seq 100); do rmdir "$CG" 2>/dev/null && return 0; sleep 0.05; done
}
trap 'cg_remove; cleanup' EXIT
# the workload of limited-sparse: dense anon, and the sparse program in a
# limited cgroup created 3 s later
limited_sparse() {
        "$T/mthp-dense" --kind anon --pattern dense --seconds 10 --quiet &
        local dense=$!
        sleep 3
        mkdir "$CG"
        echo $((600 << 20)) >"$CG/memory.limit_in_bytes"
        sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" --kind anon --pattern sparse --stride 64K --size 1G --hold --seconds 5 --quiet' \
                sh "$CG" "$T/mthp-sparse"
        wait $dense
        cg_remove
}

TRACES=("$@")
((${#TRACES[@]})) || TRACES=(dense-anon sparse-anon dense-shmem mixed-anon zero-anon limited-sparse)
for t in "${TRACES[@]}"; do
        case $t in
        dense-anon) record "$t" "$T/mthp-dense" --kind anon --pattern dense ;;
        sparse-anon) record "$t" "$T/mthp-sparse" --kind anon --pattern sparse --stride 64K ;;
        dense-shmem) record "$t" "$T/mthp-dense" --kind shmem --pattern dense ;;
        zero-anon|zero-anon-oldsampler) record "$t" "$T/mthp-dense" --kind anon --pattern dense --value 0 ;;
        mixed-anon)
                record "$t" "$T/mthp-dense" --kind anon --pattern dense ';' \
                        "$T/mthp-sparse" --kind anon --pattern sparse --stride 64K ;;
        limited-sparse) record "$t" limited_sparse ;;
        *) echo "$0: unknown trace '$t'" >&2; exit 2 ;;
        esac
done
