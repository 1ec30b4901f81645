#!/bin/bash
# SPDX-License-Identifier: MIT
# optout (issue 14): processes that opted out of THP have no say. Real
# processes on the real kernel, each case beside one dense anon workload:
#
#  C. control: a sparse anon workload (1 byte per 64K) that did not opt out
#     -> it holds 2M/anon back (never always), and explain names it
#  P. the same sparse workload under prctl(PR_SET_THP_DISABLE) (Redis's
#     default): it gets no large folio whatever the knobs say
#     -> 2M/anon becomes always; explain says it was left out (prctl)
#  N. the same sparse workload with its region MADV_NOHUGEPAGE
#     -> 2M/anon becomes always; explain says it was left out (nh)
#
# Usage: optout.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init optout

[[ -e $THP/hugepages-2048kB/enabled ]] || rk_skip "no 2M anon knob ($THP/hugepages-2048kB/enabled)"
grep -q '^THP_enabled:' /proc/self/status || rk_skip "this kernel's /proc/PID/status has no THP_enabled line"
# A sanitizer-built workload is another program: its shadow memory reads as
# sparse, so the dense one holds 2M back itself (CI's ASan run: "uses 0.20 of
# each 16K block") and the opt-out of the other cannot show.
rk_sanitized "$WORKLOAD" && rk_skip "$WORKLOAD is built with a sanitizer: mthpd measures its shadow memory as sparse, so the dense workload itself holds 2M back"

# Density decides (MinProcessFaultRate within reach); only anon sizes, and
# no blind climbing: a raise needs a measured process.
CONF=$RK_TMP/mthpd.conf
rk_config "$CONF" MinProcessFaultRate=100 RaiseFaultRate=1000 ShmemSizes=none UnmeasuredMaxSize=16K \
        LowerTicks=1000 DensityConfirmTicks=2 VerifyTicks=100
sed -i 's/^Interval=.*/Interval=250ms/' "$CONF"

# run_case NAME REGEX SPARSE_OPTIONS...: mthpd, the dense workload and the
# sparse one, until `mthpctl explain 2M` matches REGEX (PID: the sparse
# one's) and 3 s more, or 40 s; leaves $LOG, $EXPLAIN (the last explain that
# matched, else the last one), $SPARSE_PID and the 2M/anon values seen in
# $SEEN. The /proc scan rotates (1024 stat files a tick at most): on a
# host with thousands of processes it takes a few seconds to find the two.
run_case() {
        local name=$1 regex=$2 i matched=-1
        shift 2
        LOG=$RK_TMP/mthpd-$name.log
        local state
        state=$(rk_state_dir)
        "$MTHPD" -c "$CONF" --state-dir "$state" --no-bus 2>"$LOG" &
        local mpid=$!
        rk_track $mpid
        rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $mpid || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"
        "$WORKLOAD" --kind anon --pattern dense --size 64M --seconds 45 --quiet >"$RK_TMP/$name-dense.out" 2>&1 &
        local dpid=$!
        rk_track $dpid
        "$WORKLOAD" --kind anon --pattern sparse --size 256M --seconds 45 --quiet "$@" >"$RK_TMP/$name-sparse.out" 2>&1 &
        SPARSE_PID=$!
        rk_track $SPARSE_PID
        regex=${regex//PID/$SPARSE_PID}
        SEEN=""
        EXPLAIN=$RK_TMP/explain-$name.txt
        : >"$EXPLAIN"
        local t0 t
        t0=$(rk_now_ms)
        for ((i = 0; i < 160; i++)); do
                SEEN+=" $(rk_get "$THP/hugepages-2048kB/enabled")"
                if ((matched < 0 && i % 4 == 0)); then
                        "$MTHPCTL" --state-dir "$state" explain 2M >"$EXPLAIN.new" 2>&1
                        grep THP_enabled "/proc/$SPARSE_PID/status" >"$RK_TMP/$name-status.txt" 2>&1
                        mv "$EXPLAIN.new" "$EXPLAIN"
                        if grep -qE -- "$regex" "$EXPLAIN"; then
                                matched=$i
                                t=$(($(rk_now_ms) - t0))
                                rk_log "$name: explain matched after ${t} ms"
                                SEEN=" $(rk_get "$THP/hugepages-2048kB/enabled")"   # from here on
                        fi
                fi
                ((matched >= 0 && i >= matched + 12)) && break
                sleep 0.25
        done
        ((matched >= 0)) || rk_fail "$name: explain never matched '$regex' in 40 s"
        rk_stop $dpid TERM 10
        rk_stop $SPARSE_PID TERM 10
        rk_stop $mpid TERM 10
        rk_log "$name: dense: $(grep summary "$RK_TMP/$name-dense.out" | head -1)"
        rk_log "$name: sparse: $(grep summary "$RK_TMP/$name-sparse.out" | head -1) ($(cat "$RK_TMP/$name-status.txt"))"
        rk_log "$name: 2M/anon seen from then on:$SEEN"
        sed 's/^/  /' "$EXPLAIN" | head -3 | cut -c1-700
        grep -E 'set (2M|1M|16K)/anon' "$LOG" | sed 's/^/  log: /' | cut -c1-400
}

# --- C: the sparse one has its say ----------------------------------------
run_case C "held back by pid PID \\(mthp-workload"
[[ $SEEN != *always* ]] || rk_fail "C: 2M/anon became always although a sparse process faulted beside the dense one"

# --- P: PR_SET_THP_DISABLE -------------------------------------------------
run_case P "pid PID \\(mthp-workload\\) left out: THP disabled for it \\(prctl\\)" --thp-disable
[[ $SEEN == *always* ]] || rk_fail "P: 2M/anon did not become always; log:"$'\n'"$(tail -5 "$LOG" | cut -c1-600)"
grep -q "held back by pid $SPARSE_PID " "$EXPLAIN" && rk_fail "P: the THP-disabled pid $SPARSE_PID still holds 2M back"

# --- N: MADV_NOHUGEPAGE ----------------------------------------------------
run_case N "pid PID \\(mthp-workload\\) left out: its anon memory is mostly MADV_NOHUGEPAGE" --madvise nohugepage
[[ $SEEN == *always* ]] || rk_fail "N: 2M/anon did not become always; log:"$'\n'"$(tail -5 "$LOG" | cut -c1-600)"
grep -q "held back by pid $SPARSE_PID " "$EXPLAIN" && rk_fail "N: the MADV_NOHUGEPAGE pid $SPARSE_PID still holds 2M back"
exit 0
