#!/bin/bash
# SPDX-License-Identifier: MIT
# burst-tick (fault burst wakeup): mthpd ticks every Interval, so a
# workload that starts faulting heavily right after a tick used to be seen
# only at the next one: its first raise came up to a whole Interval late.
# Now per-CPU perf counters of page faults wake mthpd when the host starts
# faulting fast, and when the host's fault rate since the last tick already
# meets the raise rate it ticks at once (at least 100 ms after the last
# tick) instead of waiting for the grid; with -v it logs "woken by a fault
# burst".
#
# At Interval=4s: the workload (dense anon faults in a map/unmap loop, no
# shared memory, so no fault sampling wait is involved) is started right
# after a tick begins; the time from its start to the first anon raise
# ("set <size>/anon: <old> -> always") must be under 1500 ms. The mthpd
# before the wakeup raises at the next regular tick, ~4000 ms after the
# workload started: this test fails so on it.
#
# Up to 3 attempts, each with a fresh mthpd and workload; the first one in
# time passes. A late attempt prints why from mthpd's own log (--verbose):
# when its ticks began, and whether it logged a fault burst. An attempt is
# not judged when anon was raised before the workload started (another
# process faulting at the raise rate), or when the workload could not be
# started within 1000 ms of the tick's start (a busy host: then even the
# old mthpd would be in time); none judged: SKIP. Also SKIP when mthpd
# says the wakeup is unavailable here (no perf counting events).
#
# Usage: burst-tick.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init burst-tick

rk_sanitized "$WORKLOAD" && rk_skip "$WORKLOAD is built with a sanitizer: its shadow memory is most of its anon"
[[ -n ${EPOCHREALTIME:-} ]] || rk_skip "bash ${BASH_VERSION} has no \$EPOCHREALTIME (bash 5 or later) to stamp mthpd's log lines"

# rk_sampling_config's engine (density decides, one tick confirms, no idle
# advise of shmem), with a raise rate the workload (2 threads, ~100k 4K
# pages/s each on an idle CPU) meets at once and a busy host's background
# does not (a build beside this test: ~36k pages/s on 2 CPUs; with the
# 1000 of rk_sampling_config it raised anon before every workload started):
# RaiseFaultRate=50000, not lowered by RaiseFaultTime= (0: no fault cost to
# measure). Interval=4s makes a raise at the next regular tick unmistakable.
INTERVAL_MS=4000
LIMIT_MS=1500
CONF=$RK_TMP/mthpd.conf
rk_config "$CONF" MinProcessFaultRate=100 RaiseFaultRate=50000 RaiseFaultTime=0 UnmeasuredMaxSize=16K \
        LowerTicks=1000 DensityConfirmTicks=1 VerifyTicks=100 ShmemAlign=no
sed -i "s/^Interval=.*/Interval=$((INTERVAL_MS / 1000))s/" "$CONF"

ATTEMPTS=3
RAISE='^[0-9]+ mthpd: set [0-9]+[KMG]/anon: [a-z_]+ -> always'

# now_ms: the time in ms, no fork
now_ms() { NOW=$((${EPOCHREALTIME//[!0-9]/} / 1000)); }

# wait_line LOG REGEX SECONDS PID: like rk_wait_for, polling every 20 ms
# (the start of a tick is caught within ~20 ms); bounded
wait_line() {
        local i
        for ((i = 0; i < $3 * 50; i++)); do
                grep -qE -- "$2" "$1" 2>/dev/null && return 0
                rk_alive "$4" || { grep -qE -- "$2" "$1" 2>/dev/null; return; }
                sleep 0.02
        done
        return 1
}

# tick_starts LOG SPAWN: "tick N at +X ms" for every tick, from its first
# line (-v logs every knob's decision each tick: "debug: tick N KNOB: ...")
tick_starts() {
        awk -v s="$2" '$2 == "mthpd:" && $3 == "debug:" && $4 == "tick" && $5 ~ /^[0-9]+$/ && !seen[$5]++ {
                printf "%stick %s at %+d ms", sep, $5, $1 - s; sep = ", " }' "$1"
}

# attempt N: 0 when the raise came in time; 1 when late (why logged); 2
# when not judged (why logged); dies when mthpd did not run
attempt() {
        local n=$1 log=$RK_TMP/mthpd.$1.log mpid wpid t1 spawn up
        rk_start_stamped "$log"
        mpid=$RK_MPID
        # tick 0 (the first sample) has passed; the workload starts right
        # after tick 1 begins (the first with rates), so the next regular
        # tick is a whole Interval after it
        wait_line "$log" '^[0-9]+ mthpd: debug: tick 0 ' 10 $mpid ||
                rk_die "mthpd -v logged no 'tick 0' line within 10 s"$'\n'"$(tail -5 "$log" | cut -c1-300)"
        wait_line "$log" '^[0-9]+ mthpd: debug: tick 1 ' $((INTERVAL_MS / 1000 + 6)) $mpid ||
                rk_die "mthpd -v logged no 'tick 1' line within $((INTERVAL_MS / 1000 + 6)) s of tick 0"$'\n'"$(tail -5 "$log" | cut -c1-300)"
        now_ms
        spawn=$NOW
        "$WORKLOAD" --kind anon --pattern dense --size 256M --threads 2 --seconds 15 --quiet \
                >"$RK_TMP/workload.$n.out" 2>&1 &
        wpid=$!
        rk_track $wpid
        t1=$(grep -m1 -E '^[0-9]+ mthpd: debug: tick 1 ' "$log" | cut -d' ' -f1)
        wait_line "$log" "$RAISE" $((INTERVAL_MS / 1000 + 6)) $mpid
        sleep 0.2
        rk_stop $wpid TERM 10
        rk_stop $mpid TERM 10

        # no perf counting events here (perf_event_open refused): nothing to judge
        grep -q 'fault-burst wakeup unavailable' "$log" &&
                rk_skip "$(grep -m1 -o 'fault-burst wakeup unavailable.*' "$log" | cut -c1-300)"
        grep -E "$RAISE|woken by a fault burst" "$log" | head -3 | cut -c1-300 | sed 's/^/  log: /'
        up=$(grep -m1 -E "$RAISE" "$log" | cut -d' ' -f1)
        if [[ -n $up ]] && ((up < spawn)); then
                rk_log "attempt $n: not judged: anon was raised $((spawn - up)) ms before the workload started (another process faulting at the raise rate)"
                return 2
        fi
        if ((spawn - t1 > 1000)); then
                rk_log "attempt $n: not judged: the workload started $((spawn - t1)) ms after tick 1 began, not right after it (a busy host)"
                return 2
        fi
        if [[ -z $up ]]; then
                rk_log "attempt $n: no anon size was raised within $((INTERVAL_MS / 1000 + 6)) s for a workload faulting anon densely (started $((spawn - t1)) ms after tick 1 began)"
                sed -n 's/^summary .*pages_per_s=\([0-9]*\).*/  workload: \1 pages\/s/p' "$RK_TMP/workload.$n.out"
                rk_log "attempt $n: ticks: $(tick_starts "$log" "$spawn")"
                grep -m1 -E '^[0-9]+ mthpd: debug: tick 2 [0-9]+[KMG]/anon:' "$log" | cut -c1-300 | sed 's/^/  log: /'
                return 1
        fi
        rk_log "attempt $n: first anon raise $((up - spawn)) ms after the workload started ($((spawn - t1)) ms after tick 1 began; Interval ${INTERVAL_MS} ms)"
        ((up - spawn < LIMIT_MS)) && return 0
        # why: when did the ticks come, and was mthpd woken by the burst?
        rk_log "attempt $n: ticks: $(tick_starts "$log" "$spawn")"
        if grep -q 'woken by a fault burst' "$log"; then
                grep 'woken by a fault burst' "$log" | head -2 | cut -c1-300 | sed 's/^/  log: /'
                rk_log "attempt $n: mthpd was woken by a fault burst, but its first anon raise still came $((up - spawn)) ms after the workload started"
        else
                rk_log "attempt $n: mthpd logged no 'woken by a fault burst': the raise waited for the next regular tick"
                # anything it said about the burst wakeup (e.g. why it is
                # off); not the lines naming this test's temp dir
                grep -i 'burst' "$log" | grep -vF "$RK_TMP" | head -3 | cut -c1-300 | sed 's/^/  log: /'
        fi
        return 1
}

rk_attempts "$ATTEMPTS" "no attempt of $ATTEMPTS could be judged: anon was raised before the workload started, or the workload could not be started right after a tick, each time" \
        "the first anon raise came ${LIMIT_MS} ms or more after the workload started (Interval ${INTERVAL_MS} ms: a fault burst should tick at once)"
