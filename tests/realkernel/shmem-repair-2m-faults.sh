#!/bin/bash
# SPDX-License-Identifier: MIT
# shmem-repair-2m-faults: a shmem repair starts for a process that keeps
# filling its segment after mthpd's 2M raise. Each of its faults then maps
# a 2M folio, 512 pages: pgbench TPC-B's backends, filling PostgreSQL's
# buffer pool, fault 10-50 times a second once 2M is on. The repair asked
# for MinProcessFaultRate= (100) faults a second, not pages, and so never
# started: in 5 of 6 TPC-B runs (2026-12-03) 114-196 MiB of the pool stayed
# outside 2M folios to the end.
#
# The workload maps 512 MiB of shared anonymous memory (2M-aligned) and
# fills it at an even pace over 24 s (about 5,500 pages a second at 4K,
# 11 faults a second at 2M). mthpd starts 2 s in, when ~43 MiB are in 4K
# folios: the probe (16 points over the mapping, 1 or 2 of them present
# then, sums halved each tick) cannot see 4 present pages, which a repair
# needs, before the raise; as under TPC-B, the repair cannot start on the
# raise's own tick. It raises 2M for shmem; the rest is filled with 2M
# folios; the 4K part must be collapsed while the workload faults at 2M:
# the whole segment PMD-mapped (smaps ShmemPmdMapped >= 496 MiB) within
# 40 s of mthpd's start. Skipped, with the reason, when the host holds
# every raise back, the density sampler does not reach the workload, or
# the repair began on the raise's own tick (then the old rule would have
# started it too: nothing judged).
#
# Usage: shmem-repair-2m-faults.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init shmem-repair-2m-faults

[[ $(rk_pmd_kb) == 2048 ]] || rk_skip "PMD size is not 2M"
rk_need_pagemap_scan
# every size starts off: the first part of the segment is filled at 4K
rk_sizes_never

CONF=$RK_TMP/mthpd.conf
rk_config "$CONF" AnonSizes=16K ShmemSizes=2M VerifyTicks=50 MinProcessFaultRate=100

rss_kb() {
        [[ -r /proc/$1/smaps_rollup ]] || { echo 0; return; }
        awk '/^Rss:/ { print $2 }' "/proc/$1/smaps_rollup" 2>/dev/null || echo 0
}

log=$RK_TMP/mthpd.log
rk_start_shm_4k 24 2
wl=$RK_WL t_wl=$RK_WL_MS
rk_log "before mthpd: the workload's RSS $(($(rss_kb $wl) >> 10)) MiB, none PMD-mapped"

# each line stamped with the ms it was read (rk_start_stamped)
rk_start_stamped "$log" 9>&-
mpid=$RK_MPID
t0=$(rk_now_ms)
rk_poll_shm_pmd $wl 507904 80
after=$RK_PMD_MAX
t1=$(rk_now_ms)
grep -qE '2M/shmem: [a-z]+ -> always' "$log" ||
        { rk_stop $mpid TERM 10; rk_skip "mthpd did not set 2M/shmem always on this host now (e.g. a memory-limited cgroup of another test holds raises back)"; }
grep -qE "pid $wl \\(mthp-workload" "$log" ||
        { rk_stop $mpid TERM 10; rk_skip "mthpd's density sampler never reached the workload among $(ls /proc | grep -c '^[0-9]') processes: nothing to judge"; }
# the old rule started a repair only while the process faulted 100 times a
# second: on the raise's own tick (the 4K rate): then nothing is judged
raised=$(grep -m1 -E '2M/shmem: [a-z]+ -> always' "$log" | cut -d' ' -f1)
first=$(grep -m1 -E "collapsed [0-9]+ region.*of pid $wl " "$log" | cut -d' ' -f1)
# (a tick is 100 ms; the repair's pass is logged at most ~40 ms after the
# raise in the same tick: 20 ms of CollapseCPU=20% and the scan)
if [[ -n $first ]] && ((first - raised < 60)); then
        rk_stop $mpid TERM 10
        rk_skip "the first collapse came $((first - raised)) ms after the 2M raise, on its own tick, where the workload still faulted at 4K: the old rule would have started it too, nothing to judge"
fi
passes=$(grep -cE "collapsed [0-9]+ region.*of pid $wl " "$log")
mib=$(grep -oE "region\\(s\\), [0-9]+ MiB, of pid $wl " "$log" | awk '{ s += $2 } END { print s + 0 }')
rk_log "ShmemPmdMapped MiB every 0.5 s after mthpd started: $RK_PMD_SERIES"
since=none
[[ -n $first ]] && since="$((first - raised)) ms"
rk_log "$passes collapse passes, $mib MiB, the first $since after the 2M raise; ShmemPmdMapped $((after >> 10)) MiB $((t1 - t0)) ms after mthpd started, $((t1 - t_wl)) ms after the workload"
rk_log "workload: $(grep -E 'pages_per_s' "$RK_TMP/workload.out" | head -5 | tr '\n' ' ' | cut -c1-300)"
alive="the workload still ran"
rk_alive $wl || alive="the workload was gone by then: $(tail -2 "$RK_TMP/workload.out" | tr '\n' ' ' | cut -c1-200)"
if ((after < 507904)); then
        rk_fail "the segment is not PMD-mapped (ShmemPmdMapped at most $((after >> 10)) MiB, want >= 496; $alive): no repair started for a process faulting 2M folios?"
        grep -E 'MADV_COLLAPSE|collapsed|2M/shmem: [a-z]+ ->' "$log" | tail -5 | cut -c1-400 | sed 's/^/    /'
fi
# khugepaged may collapse shmem too while 2M is always: the repair must have
((passes > 0)) || rk_fail "no repair pass collapsed any of the workload's shmem ($alive); the ShmemPmdMapped reached came from elsewhere (khugepaged?)"
rk_stop $mpid TERM 10
rk_stop $wl TERM 5
exit 0
