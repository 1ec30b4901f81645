#!/bin/bash
# SPDX-License-Identifier: MIT
# early-tick (faster first reaction): a process that holds shared memory
# and starts faulting has its faults split between anon and shmem by their
# sampled addresses (FaultSampling=), which are switched on at the tick
# that first sees it; until they are in, its faults are no kind's demand
# (the engine waits for them). mthpd used to wait a whole Interval for them:
# the raise came one tick (1 s) after "fault sampling on" (pgbench -S ran
# its first ~2 s at 4K). Now the tick that starts to wait asks for the next
# a quarter Interval later (mthp_tick_next), and the raise comes then.
#
# At Interval=1s: the workload (1 MiB of shared memory held, shmem faulted
# in a loop) starts while mthpd idles; the time from the log line saying
# sampling is on to the first shmem raise must be under 600 ms (it was
# ~1000 ms before: fails so on the mthpd before the early tick).
#
# Usage: early-tick.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init early-tick

# Skips without a 2M shmem knob or with a sanitizer-built workload; writes
# CONF: density decides, one tick confirms it, no idle advise of shmem
rk_sampling_config 1s

# each log line stamped with the time it was written (ms)
LOG=$RK_TMP/mthpd.log
STATE=$(rk_state_dir)
"$MTHPD" -c "$CONF" --state-dir "$STATE" --no-bus 2> >(while IFS= read -r l; do
        printf '%s %s\n' "$(($(date +%s%N) / 1000000))" "$l"; done >"$LOG") &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"
grep -q 'fault sampling unavailable' "$LOG" && rk_skip "$(grep -m1 -o 'fault sampling unavailable.*' "$LOG" | cut -c1-300)"
sleep 1.5

"$WORKLOAD" --kind shmem --pattern dense --size 64M --hold-shmem 1M --seconds 15 --quiet \
        >"$RK_TMP/workload.out" 2>&1 &
WPID=$!
rk_track $WPID
rk_wait_for "$LOG" '/shmem: [a-z_]+ -> always' 10 $MPID
sleep 0.2
rk_stop $WPID TERM 10
rk_stop $MPID TERM 10

grep -E 'fault sampling (on|off)|/shmem: [a-z_]+ -> always' "$LOG" | head -4 | cut -c1-300 | sed 's/^/  log: /'
on=$(grep -m1 "fault sampling on: pid $WPID " "$LOG" | cut -d' ' -f1)
up=$(grep -m1 -E '/shmem: [a-z_]+ -> always' "$LOG" | cut -d' ' -f1)
[[ -n $on ]] || rk_die "mthpd did not sample the faults of pid $WPID, which holds shared memory"
[[ -n $up ]] || rk_die "no shmem size was raised for a workload faulting shmem"
((up >= on)) || rk_die "the raise came before fault sampling was on: the test did not test the wait"
rk_log "first shmem raise $((up - on)) ms after fault sampling went on"
((up - on < 600)) || rk_fail "the raise came $((up - on)) ms after fault sampling went on (an early tick is due 250 ms after)"
exit 0
