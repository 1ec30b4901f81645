#!/bin/bash
# SPDX-License-Identifier: MIT
# guard-v2-fakehost: the limited-cgroup guard's cgroup v2 path (issue 16)
# on a fake v2 host, where nothing can poll: mthpd raises anon sizes, then
# a limited cgroup's memory.current crosses usage + GuardHeadroom of its
# headroom (then, separately, its memory.events 'max' counter moves), and
# mthpd must put every size back at once, between ticks, naming the cgroup.
. "$(dirname "$0")/../lib/fakehost.sh"
fakehost_setup guard-v2
"$FAKEHOST" create "$ROOT" --layout v2 >/dev/null
CGD=$ROOT$("$FAKEHOST" cgroup "$ROOT" mthpd-test-lim)
CG2=$ROOT$("$FAKEHOST" cgroup "$ROOT" mthpd-test-lim2)
for d in "$CGD" "$CG2"; do
        echo $((1000 << 20)) >"$d/memory.max"
        echo $((10 << 20)) >"$d/memory.current"
done
# long ticks; the guard names itself in the log (the tick would not)
cat >"$T/conf" <<CONF
[Daemon]
Interval=2s
[Engine]
RaiseFaultRate=1000
LowerFaultRate=10
LowerTicks=1000
ConfirmTicks=1
DwellTicks=0
CONF
start_mthpd -c "$T/conf" --no-bus -v

raise() { # bump faults until 64K/anon is always (blind climb: a size a tick)
        for _ in $(seq 120); do
                knob_is hugepages-64kB/enabled always && return 0
                bump_faults 1
        done
        return 1
}
raise || fail "mthpd did not raise 64K/anon"
ok "raised 16K-64K/anon with a populated 1000 MiB cgroup at 10 MiB"

# usage + 25% of 990 MiB = 257 MiB
t0=$(date +%s%N)
echo $((300 << 20)) >"$CGD/memory.current"
wait_for 3 knob_is hugepages-16kB/enabled never || fail "memory.current over the threshold: 16K/anon still $(knob hugepages-16kB/enabled)"
ms=$((($(date +%s%N) - t0) / 1000000))
knob_is hugepages-64kB/enabled never || fail "64K/anon not stepped down"
wait_for 3 grep -q 'guard: limited cgroup /mthpd-test-lim at 300 of 1000 MiB crossed its usage threshold' "$LOG" ||
        fail "no guard line naming the cgroup"
ok "memory.current past the threshold: every size back to never in ${ms} ms (ticks are 2 s)"

# the tripped cgroup holds sizes down for its backoff: it goes away
"$FAKEHOST" rmcgroup "$ROOT" mthpd-test-lim
raise || fail "mthpd did not raise 64K/anon again once the tripped cgroup was gone"
sed -i 's/^max 0$/max 1/' "$CG2/memory.events"
wait_for 3 knob_is hugepages-16kB/enabled never || fail "memory.events max moved: 16K/anon still $(knob hugepages-16kB/enabled)"
wait_for 3 grep -q 'cgroup /mthpd-test-lim2 at 10 of 1000 MiB crossed its memory.events max' "$LOG" || fail "no guard line for memory.events max"
ok "memory.events max: every size back to never"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "mthpd exited $RC"
grep -q 'guard: 2 trips' "$LOG" || fail "exit summary: $(grep 'guard: .*trips' "$LOG")"
ok "$(grep -o 'guard: 2 trips.*' "$LOG")"
