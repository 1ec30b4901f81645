#!/bin/bash
# SPDX-License-Identifier: MIT
# fault-kinds (issue 12, item 2): a process's faults are split between anon
# and shmem by where they fall, not by the memory it holds. The workload is
# shaped like a database backend: it maps 1 GiB of shared anonymous memory,
# writes it once and keeps it, then faults only its heap (map, write,
# unmap 64 MiB in a loop). By memory held, ~97% of its faults read as shmem
# demand and mthpd raised shmem sizes for faults that never touch shmem
# (fails so on the mthpd before FaultSampling=). Now its fault addresses are
# sampled (perf) and only anon is raised. mthpd starts after the fill, so
# from its first tick the process holds shared memory and faults only anon
# (its anon RSS is 0 at the instants between an unmap and the next map:
# sampling must not wait for anon to be held; it failed so once the
# density sampler measured a process at first sight).
#
# Usage: fault-kinds.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init fault-kinds

# Skips without a 2M shmem knob or with a sanitizer-built workload; writes
# CONF: density decides, one tick confirms it, no idle advise of shmem
rk_sampling_config 250ms

# The workload first: its 1 GiB fill is a real shmem demand, and mthpd
# would be right to raise shmem for it. mthpd starts once the fill is done.
"$WORKLOAD" --kind anon --pattern dense --size 64M --hold-shmem 1G --seconds 40 --quiet >"$RK_TMP/workload.out" 2>&1 &
WPID=$!
rk_track $WPID
for ((i = 0; i < 100; i++)); do
        shm=$(awk '/^RssShmem:/ {print $2}' "/proc/$WPID/status" 2>/dev/null)
        ((${shm:-0} >= 1048576)) && break
        sleep 0.1
done
((${shm:-0} >= 1048576)) || rk_die "the workload did not fill its 1 GiB of shared memory in 10 s (RssShmem ${shm:-?} kB)"
sleep 0.5

LOG=$RK_TMP/mthpd.log
STATE=$(rk_state_dir)
"$MTHPD" -c "$CONF" --state-dir "$STATE" --no-bus 2>"$LOG" &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"
if grep -q 'fault sampling unavailable' "$LOG"; then
        rk_skip "$(grep -m1 -o 'fault sampling unavailable.*' "$LOG" | cut -c1-300)"
fi

# 20 s at most: until an anon size is always and has been for 3 s
declare -A SHM_SEEN=()
ANON_UP=-1
for ((i = 0; i < 80; i++)); do
        for f in "$THP"/hugepages-*kB/shmem_enabled; do
                v=$(rk_get "$f")
                [[ $v == always ]] && SHM_SEEN[${f#"$THP"/}]=always
        done
        if ((ANON_UP < 0)) && grep -qE '[0-9]+[KM]/anon: [a-z]+ -> always' "$LOG"; then
                ANON_UP=$i
                rk_log "anon raised within $((i * 250 + 250)) ms of mthpd's start"
        fi
        ((ANON_UP >= 0 && i >= ANON_UP + 12)) && break
        sleep 0.25
done
rk_stop $WPID TERM 10
rk_stop $MPID TERM 10

grep -E 'fault sampling (on|off)' "$LOG" | head -3 | cut -c1-300 | sed 's/^/  log: /'
grep -E '/(anon|shmem): [a-z_]+ -> ' "$LOG" | head -8 | cut -c1-300 | sed 's/^/  log: /'
grep -q "fault sampling on: pid $WPID " "$LOG" ||
        rk_fail "mthpd did not sample the faults of pid $WPID, which holds shared memory"
((ANON_UP >= 0)) || rk_fail "no anon size was raised for a workload faulting only anon"
((${#SHM_SEEN[@]} == 0)) || rk_fail "shmem sizes raised for faults that never touched shmem: ${!SHM_SEEN[*]}"
grep -qE '/shmem: [a-z_]+ -> always' "$LOG" && rk_fail "the log shows a shmem raise"
exit 0
