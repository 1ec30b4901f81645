#!/bin/bash
# 'mthpctl simulate --config CONF' and FaultCost=: the replay decides with
# CONF's fault cost. A set cost replaces the one the trace recorded (what
# if a 4K fault cost 40 us: RaiseFaultTime gives another raise rate), off
# makes it unknown (RaiseFaultRate alone decides), auto (the default) keeps
# the recorded cost. Simulate used to take the recorded cost whatever CONF
# said (fails so on the mthpctl before).
# Env: MTHPCTL (path from meson).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TRACE=$HERE/../engine/traces/pgbench-tpcb-unit.rec  # recorded at 13.55 us a 4K fault
[ -x "${MTHPCTL:-}" ] || { echo "SKIP: MTHPCTL is not set to a built mthpctl"; exit 77; }
T=$(mktemp -d /tmp/mthpd-simconf.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }

# simulate FAULTCOST: the replay under RaiseFaultRate=20000 (above the
# trace's shmem demand, ~8500 pages/s) and RaiseFaultTime=2.5% with that
# FaultCost= ("" for no FaultCost= line); output in $T/FAULTCOST.out
simulate() {
        local out=$T/${1:-none}.out
        {
                printf '[Engine]\nRaiseFaultRate=20000\nRaiseFaultTime=2.5%%\n'
                [ -z "$1" ] || printf 'FaultCost=%s\n' "$1"
        } > "$T/conf"
        "$MTHPCTL" simulate "$TRACE" --config "$T/conf" > "$out" || fail "simulate with FaultCost=$1 exited $?"
        echo "$out"
}
first_raise() { grep -m1 -E '^tick [0-9]+: [0-9]+[KM]/shmem: [a-z_]+ -> always: ' "$1" | cut -c1-200 || true; }

# auto, and no FaultCost= at all: the recorded 13.55 us (2.5% of a core is 1845 pages/s)
for fc in "" auto; do
        out=$(simulate "$fc")
        r=$(first_raise "$out")
        grep -q '^tick 4: 16K/shmem: never -> always: shmem fault demand 6745 pages/s >= 1845 (RaiseFaultTime 2.5% of a core at 13.55 us a 4K fault)' <<<"$r" ||
                fail "FaultCost=${fc:-(unset)}: not the recorded cost's raise: ${r:-no shmem raise}"
done
cmp -s "$T/none.out" "$T/auto.out" || fail "FaultCost=auto replays differently from no FaultCost="
ok "FaultCost=auto keeps the recorded fault cost"

# 40 us: 2.5% of a core is 625 pages/s
out=$(simulate 40us)
r=$(first_raise "$out")
grep -q '^tick 4: 16K/shmem: never -> always: shmem fault demand 6745 pages/s >= 625 (RaiseFaultTime 2.5% of a core at 40.00 us a 4K fault)' <<<"$r" ||
        fail "FaultCost=40us: the raise does not use the configured cost: ${r:-no shmem raise}"
grep -q '13\.55 us' "$out" && fail "FaultCost=40us: a reason quotes the recorded 13.55 us: $(grep -m1 '13\.55 us' "$out" | cut -c1-200)"
ok "FaultCost=40us replaces the recorded cost"

# off: no cost, RaiseFaultRate=20000 alone, above the demand: no shmem raise
out=$(simulate off)
r=$(first_raise "$out")
[ -z "$r" ] || fail "FaultCost=off: a shmem size raised below RaiseFaultRate: $r"
grep -q 'raise at 20000 ' "$out" || fail "FaultCost=off: no reason says 'raise at 20000': $(grep -m3 '^tick' "$out" | cut -c1-200)"
grep -q ' us a 4K fault' "$out" && fail "FaultCost=off: a reason quotes a fault cost: $(grep -m1 ' us a 4K fault' "$out" | cut -c1-200)"
ok "FaultCost=off replays with an unknown fault cost"
