#!/bin/bash
# SPDX-License-Identifier: MIT
# limited-cgroup (issue 16): default configuration, no policy files. A dense
# workload makes mthpd raise anon sizes; then a sparse program (1 GiB
# mapped, 1 byte per 64 KiB: 66 MB at 4K) starts in a v1 memory cgroup
# limited to 600 MB, created after the raise. Without the guard it is
# OOM-killed (exit 137, failcnt > 0); with it, it must exit 0 with no limit
# hit. PRE=1: the cgroup exists (with a sleeping process) before the dense
# workload starts, so the engine's invariant holds 2M back first. PRE=empty:
# it exists, empty, before the raise (2M is raised; the guard watches it).
# While anon 2M is always, mthpd must set the THP shrinker's safety net
# (khugepaged/max_ptes_none below 511, shrink_underused 1) and put both back
# when it stops. Prints the guard's step-down latency from mthpd's log.
#
# Usage: limited-cgroup.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init limited-cgroup

[[ -d /sys/fs/cgroup/memory ]] || rk_skip "no v1 memory hierarchy at /sys/fs/cgroup/memory (the v2 path is tested on a fake host)"
[[ -e $THP/hugepages-2048kB/enabled ]] || rk_skip "no hugepages-2048kB"
CG=/sys/fs/cgroup/memory/mthpd-test-limited-$$
MPN=$THP/khugepaged/max_ptes_none SU=$THP/shrink_underused
MPN0=$(cat "$MPN" 2>/dev/null) SU0=$(cat "$SU" 2>/dev/null)
cg_remove() {
        # lib.sh saves the selection knobs only: the shrinker's numbers here
        [[ -n $MPN0 && $(cat "$MPN") != "$MPN0" ]] && echo "$MPN0" >"$MPN"
        [[ -n $SU0 && $(cat "$SU") != "$SU0" ]] && echo "$SU0" >"$SU"
        [[ -d $CG ]] || return 0
        local p
        for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        rk_rmdir_cg "$CG"
}
trap 'rc=$?; cg_remove; (exit $rc); rk_cleanup' EXIT

CONF=$RK_TMP/empty.conf POL=$RK_TMP/policy.d
: >"$CONF"
mkdir "$POL"
STATE=$(rk_state_dir)
LOG=$RK_TMP/mthpd.log
"$MTHPD" -c "$CONF" -p "$POL" --state-dir "$STATE" --no-bus 2>"$LOG" &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"

if [[ -n ${PRE:-} ]]; then
        mkdir "$CG" && echo $((600 << 20)) >"$CG/memory.limit_in_bytes" || rk_die "cannot create $CG"
        if [[ $PRE != empty ]]; then
                sh -c 'echo $$ > "$1/cgroup.procs" && exec sleep 60' sh "$CG" &
                rk_track $!
        fi
fi
# A sanitizer-built workload is another program: its shadow memory reads as
# sparse (under ASan it "uses 0.81 of each 16K block"), so mthpd rightly
# steps it down and never holds 2M, which this test needs first.
rk_sanitized "$WORKLOAD" && rk_skip "$WORKLOAD is built with a sanitizer: mthpd measures its shadow memory as sparse and holds no 2M for it"
"$WORKLOAD" --kind anon --pattern dense --size 64M --seconds 40 --quiet >"$RK_TMP/dense.out" 2>&1 &
DPID=$!
rk_track $DPID
if [[ ${PRE:-} == 1 ]]; then
        rk_wait_value "$THP/hugepages-64kB/enabled" always 20 || rk_die "mthpd raised nothing"
        sleep 3
        [[ $(rk_get "$THP/hugepages-2048kB/enabled") != always ]] ||
                rk_fail "2M raised although an unsampled limited cgroup cannot afford it"
else
        rk_wait_value "$THP/hugepages-2048kB/enabled" always 20 || rk_die "mthpd did not raise anon to 2M"
        sleep 2
        if [[ -n $MPN0 ]]; then
                mpn=$(cat "$MPN")
                ((mpn < 511)) || rk_fail "anon 2M always but max_ptes_none is $mpn: no shrinker safety net"
                rk_log "safety net under 2M: max_ptes_none $MPN0 -> $mpn, shrink_underused $SU0 -> $(cat "$SU" 2>/dev/null)"
        fi
fi
rk_log "raised: $(for s in 64kB 256kB 2048kB; do printf '%s=%s ' $s "$(rk_get "$THP/hugepages-$s/enabled")"; done)"

[[ -d $CG ]] || { mkdir "$CG" && echo $((600 << 20)) >"$CG/memory.limit_in_bytes"; } || rk_die "cannot create $CG"
t0=$(rk_now_ms)
sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" --kind anon --pattern sparse --stride 64K --size 1G --hold --seconds 5 --quiet' \
        sh "$CG" "$WORKLOAD" >"$RK_TMP/sparse.out" 2>&1 &
SPID=$!
rk_track $SPID
for ((i = 0; i < 300; i++)); do rk_alive $SPID || break; sleep 0.05; done
wait $SPID 2>/dev/null
src=$?
peak=$(($(cat "$CG/memory.max_usage_in_bytes") >> 20))
failcnt=$(cat "$CG/memory.failcnt")
rk_log "sparse program: exit $src after $(($(rk_now_ms) - t0)) ms, max_usage ${peak} MiB, failcnt $failcnt (4K need: 66 MB, limit 600 MB)"
((src == 0)) || rk_fail "the sparse program exited $src (137: OOM-killed)"
((failcnt == 0)) || rk_fail "the cgroup hit its limit $failcnt times"
grep -h 'guard: limited cgroup' "$LOG" | sed 's/^/  /'
grep -q 'guard: limited cgroup' "$LOG" || rk_fail "no guard step-down logged"
rk_stop $DPID TERM 10
rk_log "dense: $(sed -n 's/^summary .*pages_per_s=\([0-9]*\).*/\1 pages\/s/p' "$RK_TMP/dense.out")"
rk_stop $MPID TERM 10
grep -h 'guard: .*trips' "$LOG" | sed 's/^/  /'
if [[ -n $MPN0 ]]; then
        [[ $(cat "$MPN") == "$MPN0" ]] || rk_fail "max_ptes_none is $(cat "$MPN") after mthpd stopped, was $MPN0"
        [[ $(cat "$SU") == "$SU0" ]] || rk_fail "shrink_underused is $(cat "$SU") after mthpd stopped, was $SU0"
        rk_log "after mthpd: max_ptes_none $(cat "$MPN"), shrink_underused $(cat "$SU")"
fi
exit 0
