#!/bin/bash
# What mthpd cannot watch is said where an administrator looks, not only in
# its log: the real mthpd on a private bus and a fake host with more
# managed cgroups than its descriptor budget holds (a hard RLIMIT_NOFILE of
# 384, 64 of it kept free) and a cgroup directory whose path is longer than
# PATH_MAX (the guard cannot see it). Checked: the D-Bus properties, status
# (text and --json), explain (its note, and the rule behind each decision,
# text and --json), metrics; then the same from the status file alone.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"
command -v busctl >/dev/null || { echo "SKIP: busctl is not installed"; exit 77; }

N=60
for i in $(seq "$N"); do
        "$FAKEHOST" cgroup "$ROOT" "svc$i.service" >/dev/null || fail "fake cgroup svc$i.service"
done
P=$T/policy.d
mkdir -m 755 "$P"
printf '[Match]\nUnit=svc*.service\n[Policy]\nAnon=always\nSizes=16K-64K\n' > "$P/10-svc.policy"
chmod 644 "$P/10-svc.policy"
# 17 components of 250 characters: a path of over 4,250, which no call can name
DEEP=$ROOT/sys/fs/cgroup/kubepods.slice
LONG=$(printf 'p%.0s' $(seq 250))
D=$DEEP
for _ in $(seq 17); do D=$D/$LONG; done
mkdir -p "$D" || fail "mkdir of a path of ${#D} characters"

start_open_bus
: > "$LOG"
# the soft limit is raised to the hard one at start: both 384
( ulimit -n 384 && exec env LD_PRELOAD="$FAKESYSFS" "$MTHPD" --root "$ROOT" --state-dir "$STATE" -c "$FAST" \
        --policy-dir "$P" ) 2>"$LOG" &
PID=$!
OBJ=(org.mthpd.mthpd1 /org/mthpd/mthpd1 org.mthpd.Manager1)
prop() { busctl get-property "${OBJ[@]}" "$1" 2>/dev/null | cut -d' ' -f2-; }
degraded() { [ "$(prop ManagedCgroups)" = "$N" ] && [ "$(prop ManagedCgroupsReopened)" -gt 0 ] &&
        [ "$(prop GuardUnseenCgroups)" -gt 0 ]; }
wait_for 10 degraded || fail "properties: ManagedCgroups $(prop ManagedCgroups), reopened $(prop ManagedCgroupsReopened), unseen $(prop GuardUnseenCgroups)"
[ "$(prop DescriptorLimit)" = 384 ] || fail "DescriptorLimit $(prop DescriptorLimit)"
[ "$(prop DescriptorReserve)" = 64 ] || fail "DescriptorReserve $(prop DescriptorReserve)"
FDS=$(prop CgroupDescriptors)
[ "$FDS" -lt 320 ] && [ "$FDS" -lt $((5 * N)) ] || fail "CgroupDescriptors $FDS under a limit of 384 with 64 kept free"
[ "$(prop GuardScannedCgroups)" -gt "$N" ] || fail "GuardScannedCgroups $(prop GuardScannedCgroups)"
[ "$(prop GuardScanUSec)" -gt 0 ] || fail "GuardScanUSec $(prop GuardScanUSec)"
ok "properties: $N managed cgroups, $(prop ManagedCgroupsReopened) reopened each tick, $FDS descriptors held; the guard cannot see $(prop GuardUnseenCgroups)"

expect_rc 0 ctl --sample 0 status
grep -Eq "^note: [0-9]+ of $N managed cgroups have no descriptors of their own: [0-9]+ are opened, read and closed each tick.*soft RLIMIT_NOFILE 384" <<<"$OUT" ||
        fail "status does not say the descriptor budget is short: $OUT"
grep -Eq "^note: the guard cannot see [0-9]+ cgroup director(y|ies) \(a path longer than 4095 characters\)" <<<"$OUT" ||
        fail "status does not say what the guard cannot see: $OUT"
grep -Eq "^watching: $N managed cgroup\(s\), [0-9]+ descriptor\(s\) held \(soft RLIMIT_NOFILE 384\); guard: [0-9]+ cgroup\(s\) scanned" <<<"$OUT" ||
        fail "status has no watching line: $OUT"
ctl --sample 0 status --json | json_check '
m, g = d["cgroup_monitor"], d["guard"]
assert m["managed"] == '"$N"' and m["reopened"] > 0 and m["held"] + m["reopened"] + m["unmonitored"] == m["managed"], m
assert m["descriptor_limit"] == 384 and m["descriptor_reserve"] == 64 and m["descriptors"] < 320, m
assert g["unseen"] > 0 and g["scanned"] > '"$N"' and g["scan_seconds"] > 0, g' || fail "status --json: $(ctl --sample 0 status --json)"
ok "status says the descriptor budget is short and what the guard cannot see (text and --json)"

bump_faults 30 &
BUMP=$!
wait_for 10 knob_is hugepages-64kB/enabled always || fail "64K anon never raised"
wait "$BUMP"
expect_rc 0 ctl explain 64K
grep -q "^64K/anon: always" <<<"$OUT" || fail "explain 64K: $OUT"
grep -Eq "^    rule: [a-z-]+, size-in-use$" <<<"$OUT" || fail "explain 64K names no rule: $OUT"
grep -q "^note: the guard cannot see" <<<"$OUT" || fail "explain does not say what the guard cannot see: $OUT"
grep -q "^note: [0-9]* of $N managed cgroups have no descriptors" <<<"$OUT" || fail "explain: no descriptor note: $OUT"
ctl explain --json | json_check '
k = {x["id"]: x for x in d["knobs"]}
import re
assert re.fullmatch(r"[a-z]+(-[a-z]+)*", k["64K/anon"]["rule"]) and k["64K/anon"]["size_rule"] == "size-in-use", k["64K/anon"]
assert all(x["rule"] for x in k.values()), k
assert d["guard"]["unseen"] > 0 and d["cgroup_monitor"]["reopened"] > 0, d' || fail "explain --json: $(ctl explain --json)"
RULE=$(busctl --json=short call "${OBJ[@]}" ExplainRules s 64K | python3 -c 'import json, sys
print(json.load(sys.stdin)["data"][0][0][3])')
[ -n "$RULE" ] || fail "ExplainRules 64K gives no rule"
ok "explain names the rule ($RULE) behind each decision and what mthpd cannot watch (text and --json)"

ctl metrics > "$T/m.prom" || fail "metrics exit $?"
check_metrics < "$T/m.prom" >/dev/null || { cat "$T/m.prom"; fail "metrics format"; }
grep -Eq '^mthpd_managed_cgroups\{monitor="reopened"\} [1-9]' "$T/m.prom" || fail "no reopened cgroups: $(grep managed "$T/m.prom")"
grep -Eq '^mthpd_managed_cgroups\{monitor="held"\} [0-9]' "$T/m.prom" || fail "no held cgroups"
grep -Eq '^mthpd_managed_cgroups\{monitor="unmonitored"\} [0-9]' "$T/m.prom" || fail "no unmonitored cgroups"
grep -Eq '^mthpd_cgroup_monitor_descriptor_limit 384$' "$T/m.prom" || fail "descriptor limit: $(grep descriptor "$T/m.prom")"
grep -Eq '^mthpd_cgroup_monitor_descriptors [0-9]+$' "$T/m.prom" || fail "descriptors"
grep -Eq '^mthpd_guard_unseen_cgroups [1-9]' "$T/m.prom" || fail "unseen: $(grep guard "$T/m.prom")"
grep -Eq '^mthpd_guard_limited_cgroups\{state="weighed"\} [0-9]' "$T/m.prom" || fail "weighed"
grep -Eq '^mthpd_guard_scan_seconds 0\.[0-9]{6}$' "$T/m.prom" || fail "scan seconds"
ok "metrics: managed cgroups by how they are read, descriptors, the guard's scan and what it cannot see"

# without the bus: the same from the status file
kill "$BUS_PID"
BUS_PID=""
not_on_bus() { ! busctl get-property "${OBJ[@]}" Tick >/dev/null 2>&1; }
wait_for 5 not_on_bus || fail "the bus is still there"
expect_rc 0 ctl --sample 0 status
grep -q "(not on the bus: from status)" <<<"$OUT" || fail "status not from the status file: $OUT"
grep -q "^note: [0-9]* of $N managed cgroups have no descriptors" <<<"$OUT" || fail "status file: descriptors: $OUT"
grep -q "^note: the guard cannot see" <<<"$OUT" || fail "status file: guard: $OUT"
expect_rc 0 ctl explain 64K
grep -Eq "^    rule: [a-z-]+, size-in-use$" <<<"$OUT" || fail "explain from the status file names no rule: $OUT"
ok "from the status file alone: the same notes and rules"
