#!/bin/bash
# SPDX-License-Identifier: MIT
# cgroup-pressure: a dense workload grows steadily inside a memory-limited
# cgroup this test creates. mthpd (default engine, CgroupHeadroom=20%) must
# raise anon sizes while there is room and step them down, naming the
# cgroup, before the cgroup reaches its limit.
#
# Usage: cgroup-pressure.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init cgroup-pressure

LIMIT_MB=800 FILL_MB=760 FILL_S=6
CG_NAME=mthpd-test-pressure-$$
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        CG=/sys/fs/cgroup/$CG_NAME LIMIT_FILE=memory.max USAGE_FILE=memory.current
elif [[ -d /sys/fs/cgroup/memory ]]; then
        CG=/sys/fs/cgroup/memory/$CG_NAME LIMIT_FILE=memory.limit_in_bytes USAGE_FILE=memory.usage_in_bytes
else
        rk_skip "no memory cgroup controller"
fi

cg_remove() {
        [[ -d $CG ]] || return 0
        local p
        for p in $(cat "$CG/cgroup.procs" 2>/dev/null); do
                # only what this test started lives there
                kill -KILL "$p" 2>/dev/null
        done
        for _ in $(seq 50); do [[ -s $CG/cgroup.procs ]] || break; sleep 0.05; done
        rk_rmdir_cg "$CG"
        [[ -d $CG ]] || rk_log "cleanup: removed $CG"
}
trap 'rc=$?; cg_remove; (exit $rc); rk_cleanup' EXIT

mkdir "$CG" || rk_die "cannot create $CG"
echo $((LIMIT_MB * 1024 * 1024)) >"$CG/$LIMIT_FILE" || rk_die "cannot set $CG/$LIMIT_FILE"
rk_log "created $CG with a ${LIMIT_MB} MiB limit"

CONF=$RK_TMP/pressure.conf
# MaxBloat=50%: the cgroup headroom is under test here, not density; a
# compiler running beside the test (its heap ~0.8 dense) must not decide
printf '[Daemon]\nInterval=250ms\n[Engine]\nCgroupHeadroom=20%%\nMaxBloat=50%%\n' >"$CONF"
STATE=$(rk_state_dir)
LOG=$RK_TMP/mthpd.log
"$MTHPD" -c "$CONF" --state-dir "$STATE" 2>"$LOG" &
MPID=$!
rk_track $MPID
rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $MPID || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"

# the workload joins the cgroup before it execs
sh -c 'echo $$ > "$1/cgroup.procs" && exec "$2" --kind anon --pattern dense --size "$3"M --fill-seconds "$4" --seconds "$5" --quiet' \
        sh "$CG" "$WORKLOAD" $FILL_MB $FILL_S $((FILL_S + 2)) >"$RK_TMP/workload.out" 2>&1 &
WPID=$!
rk_track $WPID
peak=0
for ((i = 0; i < (FILL_S + 4) * 20; i++)); do
        u=$(cat "$CG/$USAGE_FILE" 2>/dev/null || echo 0)
        ((u > peak)) && peak=$u
        kill -0 $WPID 2>/dev/null || break
        sleep 0.05
done
wait $WPID 2>/dev/null
cat "$RK_TMP/workload.out"
rk_stop $MPID TERM 10

grep -E "^mthpd: set [0-9]+[KM]/anon: .* -> always: .*raise" "$LOG" | head -1 | sed 's/^/  /' ||
        true
grep -qE "^mthpd: set [0-9]+[KM]/anon: .* -> always: .*raise" "$LOG" ||
        rk_fail "mthpd never raised anon for the dense workload"
down=$(grep -E "^mthpd: set [0-9]+[KM]/anon: always -> .*memory pressure.*cgroup /$CG_NAME of pid [0-9]+ at [0-9]+% of its $LIMIT_MB MiB limit" "$LOG" | head -1)
if [[ -z $down ]]; then
        rk_fail "mthpd did not step anon down for the cgroup; log:"$'\n'"$(grep -v probe: "$LOG")"
else
        pct=$(sed -n 's/.* at \([0-9]*\)% of its .*/\1/p' <<<"$down")
        rk_log "stepped down at ${pct}% of the limit: ${down:0:200}"
        ((pct < 100)) || rk_fail "the step down came only at ${pct}% of the limit"
fi
rk_log "cgroup peak usage $((peak / 1048576)) MiB of $LIMIT_MB MiB"
if [[ -r $CG/memory.failcnt ]]; then
        rk_log "memory.failcnt (times the limit was hit): $(cat "$CG/memory.failcnt")"
fi
exit 0
