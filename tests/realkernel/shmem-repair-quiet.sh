#!/bin/bash
# SPDX-License-Identifier: MIT
# shmem-repair-quiet: a shmem repair goes on after the process stops
# faulting. A database's backends fault while they map the buffer pool and
# hardly at all after it, yet keep using it; the repair (MADV_COLLAPSE of
# the part its page cache filled at 4K before mthpd's 2M raise) stopped
# with them: under pgbench -S it collapsed 140 of ~400 MiB and stopped when
# the backends' fault rates fell below MinProcessFaultRate=.
#
# The workload maps 512 MiB of shared anonymous memory (2M-aligned) and
# fills it at an even pace over 6 s, then keeps re-reading it without a
# fault. mthpd starts halfway through the fill, so about half the segment
# is in 4K folios; it raises 2M for shmem, the second half gets 2M folios,
# and the repair (CollapseBudget=2M: one block a 100 ms tick) starts while
# the workload faults. Before the fix it stopped with the fill (112 of 256
# MiB PMD-mapped with a 256 MiB segment filled over 3 s); the whole segment
# must end PMD-mapped (smaps ShmemPmdMapped >= 480 MiB) within 30 s.
# Skipped, with the reason, when the host holds every raise back, the
# density sampler does not reach the workload, or no repair started while
# it faulted (nothing to judge).
#
# Usage: shmem-repair-quiet.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init shmem-repair-quiet

[[ $(rk_pmd_kb) == 2048 ]] || rk_skip "PMD size is not 2M"
[[ -r /proc/kpageflags ]] || rk_skip "/proc/kpageflags is not readable: mthpd's probe cannot see the page cache's folio sizes"
# every size starts off: the first half of the segment is filled at 4K
rk_sizes_never

rk_config "$RK_TMP/mthpd.conf" AnonSizes=16K ShmemSizes=2M VerifyTicks=50 MinProcessFaultRate=100 CollapseBudget=2M

log=$RK_TMP/mthpd.log
rk_start_shm_4k 6 3
wl=$RK_WL t_wl=$RK_WL_MS

"$MTHPD" -v -c "$RK_TMP/mthpd.conf" --state-dir "$(rk_state_dir)" --no-bus 2>"$log" 9>&- &
mpid=$!
rk_track $mpid
rk_wait_for "$log" 'managing mTHP knobs every' 10 $mpid || rk_die "mthpd did not start"$'\n'"$(cat "$log")"
t0=$(rk_now_ms)
rk_wait_shm_collapse "$log" $mpid $wl mthp-workload 512 20 || { rk_stop $mpid TERM 10; exit 1; }
# a repair starts only for a faulting process: it must have begun in the fill
first=$(rk_now_ms)
((first - t_wl < 6000)) || { rk_stop $mpid TERM 10; rk_skip "the first collapse came $((first - t_wl)) ms after the workload started, after its fill: this host was too slow to judge what happens when the faults stop"; }
# the fill ends 6 s after the workload started; from then on it faults no more
rk_poll_shm_pmd $wl 491520 60
after=$RK_PMD_MAX
t1=$(rk_now_ms)
passes=$(grep -cE "collapsed [0-9]+ region.*of pid $wl " "$log")
mib=$(grep -oE "region\\(s\\), [0-9]+ MiB, of pid $wl " "$log" | awk '{ s += $2 } END { print s + 0 }')
rk_log "ShmemPmdMapped MiB every 0.5 s after mthpd started: $RK_PMD_SERIES"
rk_log "$passes collapse passes, $mib MiB; ShmemPmdMapped $((after >> 10)) MiB $((t1 - t0)) ms after mthpd started"
rk_log "workload: $(grep -E 'pages_per_s' "$RK_TMP/workload.out" | head -5 | tr '\n' ' ' | cut -c1-300)"
((after >= 491520)) || rk_fail "the segment is not PMD-mapped after the repair (ShmemPmdMapped at most $((after >> 10)) MiB, want >= 480): the repair stopped when the workload stopped faulting?"
rk_stop $mpid TERM 10
rk_stop $wl TERM 5
exit 0
