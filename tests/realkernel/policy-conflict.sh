#!/bin/bash
# SPDX-License-Identifier: MIT
# policy-conflict: two real cgroups this test creates (v1 memory and, on a
# hybrid host, the unified hierarchy for PSI), a dense anon workload in one
# and a sparse one (1 byte per 64K) in the other, with conflicting policy
# files. The documented outcome (mthpd.policy(5), ARBITRATION) must happen:
#
#  A. dense: Anon=always Priority=80; sparse: Anon=never Priority=20
#     -> 2M/anon becomes always (the never cgroup is outranked)
#  B. the priorities swapped (dense 20, sparse 80)
#     -> no anon size is always; 2M/anon becomes madvise (the always wish,
#        outranked, turns into madvise)
#
# and `mthpctl explain 2M` names both cgroups with their numbers, and
# `mthpctl cgroups --json` lists both with their policies.
#
# Usage: policy-conflict.sh MTHPD MTHPCTL WORKLOAD
set -uo pipefail
MTHPD=$1 MTHPCTL=$2 WORKLOAD=$3
. "$(dirname "$0")/lib.sh"
rk_init policy-conflict
rk_skip_sanitized_reads_allocate "$WORKLOAD"

DENSE=mthpd-test-dense-$$ SPARSE=mthpd-test-sparse-$$
ROOTS=()
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
        ROOTS=(/sys/fs/cgroup)
elif [[ -d /sys/fs/cgroup/memory ]]; then
        ROOTS=(/sys/fs/cgroup/memory)
        [[ -f /sys/fs/cgroup/unified/cgroup.procs ]] && ROOTS+=(/sys/fs/cgroup/unified)
else
        rk_skip "no memory cgroup controller"
fi

cg_remove() {
        local root name p
        for root in "${ROOTS[@]}"; do
                for name in $DENSE $SPARSE; do
                        [[ -d $root/$name ]] || continue
                        for p in $(cat "$root/$name/cgroup.procs" 2>/dev/null); do
                                kill -KILL "$p" 2>/dev/null # only what this test started lives there
                        done
                        for _ in $(seq 50); do [[ -s $root/$name/cgroup.procs ]] || break; sleep 0.05; done
                        rk_rmdir_cg "$root/$name"
                done
        done
}
trap 'rc=$?; cg_remove; (exit $rc); rk_cleanup' EXIT

for root in "${ROOTS[@]}"; do
        mkdir "$root/$DENSE" "$root/$SPARSE" || rk_die "cannot create cgroups under $root"
done
rk_log "created /$DENSE and /$SPARSE under ${ROOTS[*]}"

POLICY=$RK_TMP/policy.d
mkdir -p "$POLICY"
chmod 755 "$POLICY"
CONF=$RK_TMP/mthpd.conf
printf '[Daemon]\nInterval=250ms\n' >"$CONF"

# run_case NAME DENSE_PRIO SPARSE_PRIO: mthpd and both workloads; leaves
# $LOG, $EXPLAIN and $CGROUPS and the 2M/anon values seen in $SEEN
run_case() {
        local name=$1 dprio=$2 sprio=$3
        printf '[Match]\nCgroup=/%s\n[Policy]\nAnon=always\nPriority=%s\n' $DENSE "$dprio" >"$POLICY/dense.policy"
        printf '[Match]\nCgroup=/%s\n[Policy]\nAnon=never\nPriority=%s\n' $SPARSE "$sprio" >"$POLICY/sparse.policy"
        chmod 644 "$POLICY"/*.policy
        "$MTHPCTL" check "$POLICY" >/dev/null || rk_die "the test's own policy files are invalid"
        LOG=$RK_TMP/mthpd-$name.log
        local state
        state=$(rk_state_dir)
        "$MTHPD" -c "$CONF" --policy-dir "$POLICY" --state-dir "$state" --no-bus 2>"$LOG" &
        local mpid=$!
        rk_track $mpid
        rk_wait_for "$LOG" 'managing mTHP knobs every' 10 $mpid || rk_die "mthpd did not start"$'\n'"$(cat "$LOG")"
        local pids=() cg
        for cg in $DENSE $SPARSE; do
                local pattern=dense
                [[ $cg == "$SPARSE" ]] && pattern=sparse
                # the workload joins its cgroups (every hierarchy) before it execs
                sh -c 'for r in $3; do echo $$ > "$r/$1/cgroup.procs" || exit 1; done; exec "$2" --kind anon --pattern "$4" --size 64M --seconds 8 --quiet' \
                        sh "$cg" "$WORKLOAD" "${ROOTS[*]}" $pattern >"$RK_TMP/$name-$cg.out" 2>&1 &
                pids+=($!)
                rk_track $!
        done
        SEEN=""
        EXPLAIN=$RK_TMP/explain-$name.txt CGROUPS=$RK_TMP/cgroups-$name.json
        : >"$EXPLAIN"
        # sample the knob and mthpd's reasons while both run (bounded: 7 s)
        for ((i = 0; i < 28; i++)); do
                SEEN+=" $(rk_get "$THP/hugepages-2048kB/enabled")"
                if ((i == 20)); then
                        "$MTHPCTL" --state-dir "$state" explain 2M >"$EXPLAIN" 2>&1
                        "$MTHPCTL" --state-dir "$state" cgroups --policy-dir "$POLICY" --json >"$CGROUPS" 2>&1
                fi
                sleep 0.25
        done
        wait "${pids[@]}" 2>/dev/null
        rk_stop $mpid TERM 10
}

check_cgroups_json() {
        python3 - "$CGROUPS" "$DENSE" "$SPARSE" <<'PY' || rk_fail "mthpctl cgroups --json: $(cat "$CGROUPS")"
import json, sys
d = json.load(open(sys.argv[1]))
paths = {c["path"]: c for c in d["cgroups"]}
for name, anon in ((sys.argv[2], "always"), (sys.argv[3], "never")):
    c = paths["/" + name]
    assert c["anon"] == anon and c["policy"] in ("dense", "sparse"), c
PY
}

# --- A: the always cgroup outranks the never one --------------------------
run_case A 80 20
rk_log "A (dense always/80, sparse never/20): 2M/anon seen:${SEEN}"
[[ $SEEN == *always* ]] || rk_fail "A: 2M/anon never became always; log:"$'\n'"$(grep -v probe: "$LOG" | tail -20)"
sed 's/^/  /' "$EXPLAIN" | head -4
grep -q "wanted by cgroup /$DENSE ([0-9]* faults/s, policy dense: Anon=always, priority 80)" "$EXPLAIN" ||
        rk_fail "A: explain does not name /$DENSE as the cgroup that wants 2M"
grep -q "outranked: .*cgroup /$SPARSE ([0-9]* faults/s, policy sparse: Anon=never, priority 20)" "$EXPLAIN" ||
        rk_fail "A: explain does not name the outranked /$SPARSE with its numbers"
check_cgroups_json
for cg in $DENSE $SPARSE; do
        rk_log "A: $cg: $(grep summary "$RK_TMP/A-$cg.out" | head -1)"
done

# --- B: the never cgroup outranks the always one ---------------------------
run_case B 20 80
rk_log "B (dense always/20, sparse never/80): 2M/anon seen:${SEEN}"
[[ $SEEN != *always* ]] || rk_fail "B: 2M/anon became always although a priority-80 never cgroup faulted"
[[ $SEEN == *madvise* ]] || rk_fail "B: the outranked always wish did not become madvise"
sed 's/^/  /' "$EXPLAIN" | head -4
grep -q "held back by cgroup /$SPARSE ([0-9]* faults/s, policy sparse: Anon=never, priority 80)" "$EXPLAIN" ||
        rk_fail "B: explain does not say /$SPARSE held 2M back, with its numbers"
grep -q "outranked: .*cgroup /$DENSE ([0-9]* faults/s, policy dense: Anon=always, priority 20)" "$EXPLAIN" ||
        rk_fail "B: explain does not name the outranked /$DENSE with its numbers"
for cg in $DENSE $SPARSE; do
        rk_log "B: $cg: $(grep summary "$RK_TMP/B-$cg.out" | head -1)"
done
exit 0
