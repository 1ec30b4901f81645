#!/bin/bash
# SPDX-License-Identifier: MIT
# collapse-daemon: a policy file with Collapse=yes makes mthpd itself
# MADV_COLLAPSE a real cgroup's dense, long-lived memory. Every anon THP
# knob starts at 'never' and the policy says Anon=madvise (the workload does
# not madvise), so the workload faults at 4K; mthpd must collapse its dense
# region into 2M pages (AnonHugePages rises to most of it) within the
# CollapseBudget, log it, and leave a sparse process in the same cgroup
# alone.
#
# Usage: collapse-daemon.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init collapse-daemon

SIZE_MB=128
[[ $(rk_pmd_kb) == 2048 ]] || rk_skip "PMD size is not 2M"
CG_NAME=mthpd-test-collapse-$$
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        CG=/sys/fs/cgroup/$CG_NAME
elif [[ -d /sys/fs/cgroup/memory ]]; then
        CG=/sys/fs/cgroup/memory/$CG_NAME
else
        rk_skip "no memory cgroup controller"
fi
cg_remove() {
        [[ -d $CG ]] || return 0
        local p
        for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done
        for _ in $(seq 50); do [[ -s $CG/cgroup.procs ]] || break; sleep 0.05; done
        rk_rmdir_cg "$CG"
}
trap 'rc=$?; cg_remove; (exit $rc); rk_cleanup' EXIT
mkdir "$CG" || rk_die "cannot create $CG"

while read -r f; do
        case $f in
        */hugepages-*kB/enabled | "$THP/enabled") rk_set "$f" never || rk_die "writing never to $f: $RK_SET_ERR" ;;
        esac
done < <(rk_knob_files)

POLICY=$RK_TMP/policy.d
mkdir -p "$POLICY"
printf '[Match]\nCgroup=/%s\n[Policy]\nAnon=madvise\nCollapse=yes\n' "$CG_NAME" >"$POLICY/db.policy"
chmod 644 "$POLICY/db.policy"
# CollapseCPU=4%: the 20 ms a tick this test was written against (the
# default 2% is 10 ms at 500 ms ticks)
printf '[Daemon]\nInterval=500ms\n[Engine]\nCollapseBudget=32M\nCollapseCPU=4%%\n' >"$RK_TMP/mthpd.conf"

smaps_kb() { sed -n "s/^$2: *\([0-9]*\) kB/\1/p" "/proc/$1/smaps_rollup" 2>/dev/null; }
start_in_cg() { # NAME ARGS...: WL_PID
        local name=$1
        shift
        sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$CG" "$WORKLOAD" --kind anon --hold \
                --seconds 60 --quiet "$@" >"$RK_TMP/$name.out" 2>&1 &
        WL_PID=$!
        rk_track $WL_PID
}
start_in_cg dense --pattern dense --size ${SIZE_MB}M
DENSE=$WL_PID
start_in_cg sparse --pattern sparse --size ${SIZE_MB}M
SPARSE=$WL_PID
for ((i = 0; i < 100; i++)); do
        (($(smaps_kb $DENSE Anonymous) >= SIZE_MB * 1024)) && break
        sleep 0.05
done
rk_log "dense pid $DENSE: AnonHugePages $(smaps_kb $DENSE AnonHugePages) kB of $(smaps_kb $DENSE Anonymous) kB before mthpd"

LOG=$RK_TMP/mthpd.log
"$MTHPD" -c "$RK_TMP/mthpd.conf" --policy-dir "$POLICY" --state-dir "$(rk_state_dir)" --no-bus 2>"$LOG" &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"
t0=$(rk_now_ms)
want=$((SIZE_MB * 1024 * 9 / 10))
huge=0
for ((i = 0; i < 100; i++)); do # 25 s: two passes per process, 10 s apart, within the budget
        huge=$(smaps_kb $DENSE AnonHugePages)
        ((huge >= want)) && break
        sleep 0.25
done
t1=$(rk_now_ms)
sparse_huge=$(smaps_kb $SPARSE AnonHugePages)
rk_stop $MPID TERM 10
grep -E "collapsed" "$LOG" | head -3 | sed 's/^/  /'
rk_log "dense: AnonHugePages $huge kB of $((SIZE_MB * 1024)) kB after $(((t1 - t0) / 1000)) s of mthpd; sparse: ${sparse_huge:-?} kB"
((huge >= want)) || rk_fail "mthpd did not collapse the dense region (AnonHugePages $huge kB < $want kB)"
((${sparse_huge:-1} == 0)) || rk_fail "the sparse process got huge pages (${sparse_huge} kB): nothing of it is dense"
grep -qE "collapsed [0-9]+ region\(s\), [0-9]+ MiB, of pid $DENSE in cgroup /$CG_NAME \(policy db, Collapse=yes\)" "$LOG" ||
        rk_fail "mthpd did not log the collapse with pid, cgroup and policy"
over=$(sed -n 's/.*collapsed [0-9]* region(s), \([0-9]*\) MiB.*/\1/p' "$LOG" | awk '$1 > 32' | head -1)
[[ -z $over ]] || rk_fail "one tick collapsed $over MiB, over CollapseBudget=32M"
exit 0
