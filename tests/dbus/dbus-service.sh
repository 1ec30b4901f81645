#!/bin/bash
# The D-Bus service of the real mthpd (man/mthpd.dbus.5.scd) on a private
# system-like bus that lets everyone own and call everything: what is tested
# is mthpd's own check of the caller's UID, not the bus policy
# (dbus-policy.sh tests that). mthpd runs on a fake host whose counters this
# script moves. Env: MTHPD, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"

start_open_bus

# knob_json ID: ListKnobs' entry for ID as a JSON object
knob_json() {
        call_json ListKnobs | python3 -c 'import json, sys
f = ("id", "size_kb", "kind", "value", "set_by", "decision", "pinned")
k = {e[0]: dict(zip(f, e)) for e in json.load(sys.stdin)["data"][0]}
print(json.dumps(k[sys.argv[1]]))' "$1"
}
knob_field() { knob_json "$1" | python3 -c 'import json, sys; print(str(json.load(sys.stdin)[sys.argv[1]]).lower())' "$2"; }
knob_set_by() { [ "$(knob_field "$1" set_by)" = "$2" ]; }
# signals MEMBER: the payloads of the signals the monitor saw, one JSON array a line
signals() {
        grep '^{' "$T/signals" | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("member") == sys.argv[1]:
        print(json.dumps(m["payload"]["data"]))' "$1"
}
saw_signal() { signals "$1" | grep -qF -- "$2"; } # saw_signal MEMBER TEXT
status_tick() { sed -n 's/^tick=//p' "$STATE/status"; } # without a bus: the tick from the status file
tick_prop() { prop Tick; }
tick_above() { [ "$($1)" -gt "$2" ]; } # tick_above READER N
# ticks_pass N [READER]: wait until N more ticks have passed (by Tick, or by READER)
ticks_pass() {
        local reader=${2:-tick_prop} t0
        t0=$($reader)
        wait_for 5 tick_above "$reader" "$((t0 + $1))"
}

"$FAKEHOST" create "$ROOT" >/dev/null
LIVE=$T/live.conf
fast_conf "$LIVE" 1000

busctl monitor --json=short --match "type='signal',path='/org/mthpd/mthpd1'" >"$T/signals" 2>/dev/null &
MONITOR_PID=$!

# 1. mthpd owns the name and serves the interface the spec describes
start_mthpd -c "$LIVE"
wait_for 5 on_bus || fail "mthpd did not take org.mthpd.mthpd1"
grep -q "D-Bus: serving org.mthpd.mthpd1" "$LOG" || fail "serving not logged"
busctl introspect --no-legend "${OBJ[@]}" > "$T/introspect" || fail "introspect failed"
# name, kind, signature and (for methods) result; property values vary
awk '{ print $1, $2, $3, ($2 == "property" ? "" : $4) }' "$T/introspect" | sort > "$T/members"
sort > "$T/expected" <<'EOF'
.Explain method s a(sss)
.ExplainRules method s a(sssss)
.History method u a(tssssb)
.ListKnobs method - a(sussssb)
.ListCgroups method - a(ssssudttttdiib)
.Pin method sst -
.Reload method - s
.Restore method - -
.Resume method s -
.SetMode method s -
.Unpin method s -
.Version property s 
.Mode property s 
.NotWritable property s 
.IntervalUSec property t 
.Tick property t 
.FaultPagesPerSecond property d 
.Changes property t 
.WriteErrors property t 
.GuardTrips property t 
.KnobWrites property a(stt) 
.FaultCostNSec property d 
.RaiseFaultRate property d 
.LowerFaultRate property d 
.FaultRatesBy property s 
.ManagedCgroups property u 
.ManagedCgroupsReopened property u 
.ManagedCgroupsUnmonitored property u 
.CgroupDescriptors property u 
.DescriptorLimit property t 
.DescriptorReserve property u 
.GuardScannedCgroups property u 
.GuardLimitedCgroups property u 
.GuardWeighedCgroups property u 
.GuardUnseenCgroups property u 
.GuardScanUSec property t 
.HostBloat property a(sst) 
.HostBloatBudget property t 
.KnobChanged signal tssss -
EOF
diff -u "$T/expected" "$T/members" || fail "org.mthpd.Manager1 members differ from the spec"
for p in Mode IntervalUSec; do
        grep -Eq "^\.$p +property .* emits-change" "$T/introspect" || fail "$p does not say it emits changes"
done
# into a file: grep -q ending the pipe early would fail busctl (SIGPIPE, pipefail)
busctl introspect --no-legend org.mthpd.mthpd1 /org/mthpd/mthpd1 > "$T/objects"
grep -q '^org.mthpd.Manager1 *interface' "$T/objects" ||
        fail "the object does not list org.mthpd.Manager1"
ok "introspection lists org.mthpd.Manager1 with every method, property and signal of the spec"

# 2. properties
[ "$(prop Version)" = "$("$MTHPD" --version | cut -d' ' -f2)" ] || fail "Version $(prop Version)"
[ "$(prop Mode)" = manage ] || fail "Mode $(prop Mode)"
[ "$(prop NotWritable)" = "" ] || fail "NotWritable $(prop NotWritable) on writable knobs"
[ "$(prop IntervalUSec)" = 100000 ] || fail "IntervalUSec $(prop IntervalUSec)"
ticks_pass 2 || fail "Tick does not advance"
prop FaultPagesPerSecond | grep -Eq '^[0-9.e+-]+$' || fail "FaultPagesPerSecond $(prop FaultPagesPerSecond)"
prop Changes | grep -Eq '^[0-9]+$' || fail "Changes $(prop Changes)"
[ "$(prop WriteErrors)" = 0 ] || fail "WriteErrors $(prop WriteErrors) on writable knobs"
[ "$(prop GuardTrips)" = 0 ] || fail "GuardTrips $(prop GuardTrips) without a limited cgroup"
busctl --json=short get-property "${OBJ[@]:0:2}" org.mthpd.Manager1 KnobWrites | python3 -c '
import json, sys
d = {k: (w, e) for k, w, e in json.load(sys.stdin)["data"]}
assert "64K/anon" in d and "global/enabled" in d and all(e == 0 for w, e in d.values()), d' ||
        fail "KnobWrites $(busctl get-property "${OBJ[@]:0:2}" org.mthpd.Manager1 KnobWrites)"
# the host's bloat budget: a byte count (UINT64_MAX: none), a figure per kind and size of the ladder
prop HostBloatBudget | grep -Eq '^[0-9]+$' || fail "HostBloatBudget $(prop HostBloatBudget)"
busctl --json=short get-property "${OBJ[@]:0:2}" org.mthpd.Manager1 HostBloat | python3 -c '
import json, sys
d = {(k, s): b for k, s, b in json.load(sys.stdin)["data"]}
assert ("anon", "64K") in d and ("shmem", "2M") in d and all(b >= 0 for b in d.values()), d' ||
        fail "HostBloat $(busctl get-property "${OBJ[@]:0:2}" org.mthpd.Manager1 HostBloat)"
# a fake host tree is not this machine: no fault cost, the configured rates
[ "$(prop FaultCostNSec)" = 0 ] || fail "FaultCostNSec $(prop FaultCostNSec) on a fake host"
[ "$(prop RaiseFaultRate)" = 1000 ] || fail "RaiseFaultRate $(prop RaiseFaultRate), configured 1000"
[ "$(prop LowerFaultRate)" = 10 ] || fail "LowerFaultRate $(prop LowerFaultRate), configured 10"
[ "$(prop FaultRatesBy)" = RaiseFaultRate ] || fail "FaultRatesBy $(prop FaultRatesBy) without a cost"
busctl --json=short call "${OBJ[@]:0:2}" org.freedesktop.DBus.Properties GetAll s org.mthpd.Manager1 |
        python3 -c 'import json, sys; d = json.load(sys.stdin)["data"][0]
assert set(d) == {"Version", "Mode", "NotWritable", "IntervalUSec", "Tick", "FaultPagesPerSecond", "Changes",
                  "WriteErrors", "GuardTrips", "KnobWrites", "FaultCostNSec", "RaiseFaultRate", "LowerFaultRate", "FaultRatesBy",
                  "ManagedCgroups", "ManagedCgroupsReopened", "ManagedCgroupsUnmonitored", "CgroupDescriptors",
                  "DescriptorLimit", "DescriptorReserve", "GuardScannedCgroups", "GuardLimitedCgroups",
                  "GuardWeighedCgroups", "GuardUnseenCgroups", "GuardScanUSec", "HostBloat", "HostBloatBudget"}, d' ||
        fail "GetAll"
ok "properties: Version, Mode, IntervalUSec, Tick advancing, FaultPagesPerSecond, Changes, WriteErrors, GuardTrips, the fault cost and rates"

# 3. the engine raises the anon ladder: KnobChanged, History, Explain, ListKnobs say so
bump_faults 30 &
BUMP=$!
wait_for 5 knob_is hugepages-64kB/enabled always || fail "64K anon never raised"
wait "$BUMP"
wait_for 2 saw_signal KnobChanged '"16K/anon", "never", "always", "anon fault demand' ||
        fail "no KnobChanged for 16K/anon: $(signals KnobChanged)"
[ "$(prop FaultPagesPerSecond | cut -d. -f1)" -ge 0 ] || fail "FaultPagesPerSecond"
[ "$(prop Changes)" -ge 3 ] || fail "Changes $(prop Changes) after three raises"
call_json History u 100 | python3 -c 'import json, sys, time
h = json.load(sys.stdin)["data"][0]
assert len(h) >= 3, h
t = [e[0] for e in h]
assert t == sorted(t), "not oldest first"
assert abs(t[-1] / 1e6 - time.time()) < 60, "times are not µs since the epoch"
c = [e for e in h if e[1] == "16K/anon" and e[2:4] == ["never", "always"]]
assert c and "anon fault demand" in c[0][4], h' || fail "History: $(call History u 100)"
[ "$(call_json History u 1 | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"][0]))')" = 1 ] ||
        fail "History 1 did not return one change"
call_json Explain s 16K | python3 -c 'import json, sys
e = {x[0]: x for x in json.load(sys.stdin)["data"][0]}
assert set(e) == {"16K/anon", "16K/shmem"}, e
assert e["16K/anon"][1] == "always" and e["16K/anon"][2], e' || fail "Explain 16K: $(call Explain s 16K)"
# ExplainRules: Explain's rows with the rules behind them (Explain kept for older clients)
# the two calls may fall on either side of a tick (a reason's streaks
# change then): the same rows within three tries
explain_rules_match() {
        paste <(call_json Explain s 16K) <(call_json ExplainRules s 16K) | python3 -c 'import json, sys
a, b = (json.loads(x)["data"][0] for x in sys.stdin.read().split("\t"))
assert [x[:3] for x in b] == a, (a, b)
r = {x[0]: x[3:] for x in b}
assert r["16K/anon"][0] and r["16K/anon"][1] == "size-in-use", r'
}
explain_rules_match 2>/dev/null || explain_rules_match 2>/dev/null || explain_rules_match ||
        fail "ExplainRules 16K: $(call ExplainRules s 16K)"
[ "$(call_json Explain s "" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["data"][0]))')" -ge 4 ] ||
        fail "Explain \"\" lists too few knobs"
call_error Explain string:3K | grep -q "^org.freedesktop.DBus.Error.InvalidArgs: no mTHP size '3K'" ||
        fail "Explain 3K: $(call_error Explain string:3K)"
call_json ListKnobs | python3 -c 'import json, sys
k = {e[0]: e for e in json.load(sys.stdin)["data"][0]}
assert k["16K/anon"][1:] == [16, "anon", "always", "mthpd", "always", False], k["16K/anon"]
assert k["128K/anon"][1:] == [128, "anon", "never", "original", "original", False], k["128K/anon"]
assert "8K/anon" not in k and k["8K/shmem"][1:3] == [8, "shmem"]
assert k["global/defrag"][1:3] == [0, "global"]
assert all(e[4] in ("original", "mthpd", "other", "pinned") for e in k.values())' ||
        fail "ListKnobs: $(call ListKnobs)"
ok "engine changes: KnobChanged signals, History oldest first, Explain and ExplainRules by size, ListKnobs"

# 4. Pin holds a knob against the engine, Unpin gives it back
call Pin sst 16K/anon never 0 || fail "Pin 16K/anon never"
knob_is hugepages-16kB/enabled never || fail "Pin did not write 16K/anon"
ticks_pass 2 || fail "no ticks"
knob_is hugepages-16kB/enabled never || fail "the engine overrode the pin on 16K/anon"
[ "$(knob_field 16K/anon set_by)/$(knob_field 16K/anon decision)/$(knob_field 16K/anon pinned)" = \
        pinned/always/true ] || fail "ListKnobs for pinned 16K/anon: $(knob_json 16K/anon)"
call Explain s 16K | grep -q '"16K/anon" "never" "pinned by uid 0 until unpinned"' ||
        fail "Explain does not give the pin as reason: $(call Explain s 16K)"
call ExplainRules s 16K | grep -q '"16K/anon" "never" "pinned by uid 0 until unpinned" "pinned" ""' ||
        fail "ExplainRules does not give the pin as rule: $(call ExplainRules s 16K)"
wait_for 2 saw_signal KnobChanged '"16K/anon", "always", "never", "pinned by uid 0 until unpinned"' ||
        fail "no KnobChanged for the pin"
call Pin sst 128K/anon always 0 || fail "Pin 128K/anon (outside the ladder)"
wait_for 2 knob_is hugepages-128kB/enabled always || fail "128K/anon did not take the pinned value"
grep -q "128K/anon: held at 'always', pinned by uid 0 until unpinned" "$LOG" || fail "pin not logged"
call Unpin s 16K/anon || fail "Unpin 16K/anon"
wait_for 3 knob_is hugepages-16kB/enabled always || fail "the engine did not take 16K/anon back"
call Unpin s 128K/anon || fail "Unpin 128K/anon"
wait_for 3 knob_is hugepages-128kB/enabled never || fail "128K/anon did not go back to its original"
[ "$(knob_field 128K/anon pinned)" = false ] || fail "128K/anon still pinned"
call_error Unpin string:128K/anon | grep -q "^org.freedesktop.DBus.Error.InvalidArgs: 128K/anon is not pinned" ||
        fail "Unpin of an unpinned knob: $(call_error Unpin string:128K/anon)"
call_error Pin string:7K/anon string:always uint64:0 |
        grep -q "^org.freedesktop.DBus.Error.InvalidArgs: no knob '7K/anon'" || fail "Pin of an unknown knob"
call_error Pin string:128K/anon string:sometimes uint64:0 |
        grep -q "^org.freedesktop.DBus.Error.InvalidArgs: 128K/anon does not accept 'sometimes': this kernel offers always, inherit, madvise, never" ||
        fail "Pin of a value the kernel does not offer: $(call_error Pin string:128K/anon string:sometimes uint64:0)"
call_error Pin string:128K/anon string:always uint64:5 |
        grep -q "^org.freedesktop.DBus.Error.InvalidArgs: until .* has passed" || fail "Pin until the past"
until=$(( $(date +%s%N) / 1000 + 500000 ))
call Pin sst 256K/anon madvise "$until" || fail "Pin with an expiry"
knob_is hugepages-256kB/enabled madvise || fail "Pin with an expiry did not write"
explain_says() { call Explain s "$1" | grep -q -- "$2"; } # explain_says SIZE REGEX
wait_for 2 explain_says 256K '"pinned by uid 0 until 20[0-9-]* [0-9:]*[^"]*"' ||
        fail "the reason does not say until when: $(call Explain s 256K)"
wait_for 3 grep -q "256K/anon: the pin to 'madvise' expired" "$LOG" || fail "expiry not logged"
wait_for 2 knob_is hugepages-256kB/enabled never || fail "256K/anon not given back after its pin expired"
ok "Pin holds a knob within a tick, ListKnobs/Explain say pinned, Unpin and expiry give it back"

# 5. a foreign write makes mthpd let go of 32K/anon; Resume takes it back with the new baseline
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled madvise
wait_for 3 grep -q "32K/anon was changed by someone else" "$LOG" || fail "foreign write not noticed"
knob_set_by 32K/anon other || fail "ListKnobs does not say other: $(knob_json 32K/anon)"
call_error Pin string:32K/anon string:always uint64:0 |
        grep -q "^org.freedesktop.DBus.Error.Failed: 32K/anon was changed by someone else .* Resume it first" ||
        fail "Pin of a foreign knob"
call Resume s 32K/anon || fail "Resume 32K/anon"
grep -q "32K/anon: resumed by uid 0: .* restores it to 'madvise'" "$LOG" || fail "resume not logged"
wait_for 3 knob_is hugepages-32kB/enabled always || fail "the engine did not manage 32K/anon again"
knob_set_by 32K/anon mthpd || fail "32K/anon after resume: $(knob_json 32K/anon)"
grep -A3 "^\[knob 32K/anon\]" "$STATE/restore.journal" | grep -q "original=madvise" ||
        fail "the journal does not keep the other writer's value as the original"
call_error Resume string:32K/anon | grep -q "^org.freedesktop.DBus.Error.InvalidArgs: 32K/anon is not marked" ||
        fail "Resume of a managed knob"
ok "Resume: the other writer's value becomes the original, mthpd manages the knob again"

# 6. SetMode observe restores everything, manage takes over again; PropertiesChanged
call SetMode s observe || fail "SetMode observe"
[ "$(prop Mode)" = observe ] || fail "Mode after SetMode observe"
for s in 16 64; do knob_is hugepages-${s}kB/enabled never || fail "${s}K not restored by observe"; done
knob_is hugepages-32kB/enabled madvise || fail "32K not restored to its new original"
[ ! -e "$STATE/restore.journal" ] || fail "journal left in observe mode"
wait_for 2 saw_signal PropertiesChanged '"Mode": {"type": "s", "data": "observe"}' ||
        fail "no PropertiesChanged for Mode: $(signals PropertiesChanged)"
wait_for 2 saw_signal KnobChanged '"16K/anon", "always", "never", "original value restored: mode observe set by uid 0"' ||
        fail "no KnobChanged for the restore"
ticks_pass 2 || fail "no ticks while observing"
knob_is hugepages-16kB/enabled never || fail "observe wrote a knob"
call_error SetMode string:sometimes | grep -q "^org.freedesktop.DBus.Error.InvalidArgs: unknown mode 'sometimes'" ||
        fail "SetMode sometimes"
call SetMode s manage || fail "SetMode manage"
[ "$(prop Mode)" = manage ] || fail "Mode after SetMode manage"
wait_for 3 knob_is hugepages-16kB/enabled always || fail "manage did not raise 16K/anon again"
ok "SetMode observe restores every knob, manage writes again; PropertiesChanged for Mode"

# 7. Reload: all or nothing, InvalidConfig with FILE:LINE; IntervalUSec changes
printf '[Daemon]\nInterval=100ms\n[Engine]\nBogus=1\nRaiseFaultRate=x\n' > "$LIVE"
err=$(call_error Reload) || fail "Reload of a bad file succeeded"
grep -q "^org.mthpd.Error.InvalidConfig: $LIVE:4: unknown key 'Bogus' in \[Engine\]" <<<"$err" ||
        fail "InvalidConfig without FILE:LINE: $err"
grep -q "^$LIVE:5: key 'RaiseFaultRate' in \[Engine\]: expected" <<<"$err" || fail "second error missing: $err"
[ "$(prop IntervalUSec)" = 100000 ] || fail "a failed reload changed the interval"
printf '[Daemon]\nInterval=200ms\n[Engine]\nRaiseFaultRate=1000\nLowerFaultRate=10\nLowerTicks=1000\n' > "$LIVE"
call Reload || fail "Reload of a good file"
[ "$(prop IntervalUSec)" = 200000 ] || fail "IntervalUSec after reload: $(prop IntervalUSec)"
wait_for 2 saw_signal PropertiesChanged '"IntervalUSec": {"type": "t", "data": 200000}' ||
        fail "no PropertiesChanged for IntervalUSec"
[ "$(prop Mode)" = manage ] || fail "reload changed the mode"
# a set cost: RaiseFaultTime 2.5% of a core at 100 us a fault is 250 pages/s,
# under RaiseFaultRate; LowerFaultRate 10 is under a tenth of that (25)
printf '[Daemon]\nInterval=200ms\n[Engine]\nRaiseFaultRate=1000\nLowerFaultRate=10\nLowerTicks=1000\nFaultCost=100us\n' > "$LIVE"
call Reload || fail "Reload with FaultCost="
rates_are() { # rates_are COST RAISE LOWER BY
        [ "$(prop FaultCostNSec)" = "$1" ] && [ "$(prop RaiseFaultRate)" = "$2" ] &&
                [ "$(prop LowerFaultRate)" = "$3" ] && [ "$(prop FaultRatesBy)" = "$4" ]
}
rates_said() { echo "FaultCostNSec $(prop FaultCostNSec) RaiseFaultRate $(prop RaiseFaultRate) LowerFaultRate $(prop LowerFaultRate) FaultRatesBy $(prop FaultRatesBy)"; }
wait_for 2 rates_are 100000 250 10 RaiseFaultTime || fail "FaultCost=100us: $(rates_said)"
# a cost too small to matter: 2.5% of a core at 1 us is 25000 pages/s, over
# RaiseFaultRate=1000, which decides
printf '[Daemon]\nInterval=200ms\n[Engine]\nRaiseFaultRate=1000\nLowerFaultRate=10\nLowerTicks=1000\nFaultCost=1us\n' > "$LIVE"
call Reload || fail "Reload with FaultCost=1us"
wait_for 2 rates_are 1000 1000 10 RaiseFaultRate || fail "FaultCost=1us: $(rates_said)"
ok "Reload: a bad file fails whole with org.mthpd.Error.InvalidConfig and FILE:LINE; a good one applies, the rates too"

# 8. uid 65534 may read everything and change nothing
as_nobody busctl get-property "${OBJ[@]}" Mode | grep -qx 's "manage"' || fail "uid 65534 cannot read Mode"
as_nobody busctl call "${OBJ[@]}" ListKnobs | grep -q '"16K/anon" 16 "anon"' || fail "uid 65534 cannot ListKnobs"
as_nobody busctl call "${OBJ[@]}" Explain s "" >/dev/null || fail "uid 65534 cannot Explain"
as_nobody busctl call "${OBJ[@]}" History u 5 >/dev/null || fail "uid 65534 cannot read History"
as_nobody busctl introspect "${OBJ[@]}" >/dev/null || fail "uid 65534 cannot introspect"
denied() { # denied WHAT METHOD ARGS...
        local what=$1 out
        shift
        out=$(call_error --nobody "$@") || fail "uid $NOBODY could call $1"
        grep -qx "org.freedesktop.DBus.Error.AccessDenied: only root may $what; you are uid $NOBODY" <<<"$out" ||
                fail "$1 as uid $NOBODY: $out"
}
denied "reload the configuration" Reload
denied "pin knobs" Pin string:64K/anon string:never uint64:0
denied "unpin knobs" Unpin string:64K/anon
denied "change the mode" SetMode string:observe
denied "restore knobs" Restore
denied "resume knobs" Resume string:32K/anon
[ "$(prop Mode)" = manage ] && knob_is hugepages-64kB/enabled always && [ "$(knob_field 64K/anon pinned)" = false ] ||
        fail "a refused call changed something"
ok "uid $NOBODY: reads succeed, every write is refused with AccessDenied naming the uid"

# 9. Restore puts everything back, drops pins and observes
call Pin sst 128K/anon always 0 || fail "Pin before Restore"
call Restore || fail "Restore"
[ "$(prop Mode)" = observe ] || fail "Mode after Restore"
for s in 16 64 128; do knob_is hugepages-${s}kB/enabled never || fail "${s}K not restored"; done
knob_is hugepages-32kB/enabled madvise || fail "32K not restored to its new original"
[ ! -e "$STATE/restore.journal" ] || fail "journal left after Restore"
[ "$(knob_field 128K/anon pinned)" = false ] || fail "Restore kept the pin"
ticks_pass 2 || fail "no ticks after Restore"
knob_is hugepages-16kB/enabled never || fail "wrote after Restore"
printf '[Daemon]\nInterval=100ms\n' > "$LIVE"
call Reload || fail "Reload after Restore"
[ "$(prop Mode)" = observe ] || fail "a reload undid Restore's observe mode"
ok "Restore: every knob back, pins dropped, observe mode that a reload keeps"

# 10. SIGTERM: exit 0, the bus name goes away
stop_mthpd TERM
[ "$RC" = 0 ] || fail "SIGTERM exit code $RC"
on_bus && fail "name still owned after exit"
ok "SIGTERM: exit 0, name released"

# 11. without the bus: --no-bus, Bus=no, an unreachable bus, a bus that goes away
no_bus_run() { # no_bus_run DESCRIPTION ARGS...: mthpd ticks without owning the name, then stops cleanly
        local what=$1
        shift
        start_mthpd "$@"
        wait_for 5 test -s "$STATE/status" || fail "$what: mthpd does not tick"
        on_bus && fail "$what: mthpd took the name"
        kill -0 "$PID" || fail "$what: mthpd died"
        stop_mthpd TERM
        [ "$RC" = 0 ] || fail "$what: exit code $RC"
}
no_bus_run "--no-bus" -c "$LIVE" --no-bus
grep -q "D-Bus" "$LOG" && fail "--no-bus: mthpd still talked about D-Bus"
printf '[Daemon]\nInterval=100ms\nBus=no\n' > "$T/nobus.conf"
no_bus_run "Bus=no" -c "$T/nobus.conf"
grep -q "D-Bus" "$LOG" && fail "Bus=no: mthpd still talked about D-Bus"
DBUS_SYSTEM_BUS_ADDRESS=unix:path=$T/nothing-here no_bus_run "no bus" -c "$LIVE"
[ "$(grep -c "warning: D-Bus: cannot connect to the system bus: no bus listens" "$LOG")" = 1 ] ||
        fail "no bus: not exactly one warning"
# the system bus's address names no guid (a restarted bus has a new one)
DBUS_SYSTEM_BUS_ADDRESS=${DBUS_SYSTEM_BUS_ADDRESS%%,guid=*}
start_mthpd -c "$LIVE"
wait_for 5 on_bus || fail "mthpd did not take the name again"
kill "$BUS_PID"
BUS_PID=""
wait_for 3 grep -q "warning: D-Bus: lost the system bus; reconnecting" "$LOG" || fail "losing the bus not logged"
ticks_pass 2 status_tick || fail "no ticks after losing the bus"
kill -0 "$PID" || fail "mthpd died with the bus"
ok "without D-Bus (--no-bus, Bus=no, no bus, bus gone) mthpd runs on"

# while the bus is away, mthpctl says mthpd runs but is not on the bus
out=$("$MTHPCTL" --state-dir "$STATE" pin 64K/anon never 2>&1) && fail "pin without a bus succeeded: $out"
grep -q "mthpd runs (pid $PID) but is not on the system bus" <<<"$out" ||
        fail "mthpctl pin while mthpd is off the bus: $out"
ok "mthpctl: mthpd runs (pid $PID) but is not on the system bus"

# a new dbus-daemon at the same address (systemctl restart dbus): mthpd is
# back on it within seconds, with its object and the name
sleep 1 # a few failed attempts first: the backoff must not give up
start_open_bus
wait_for 6 on_bus || fail "mthpd did not come back on a restarted bus"
grep -q "notice: D-Bus: back on the system bus" "$LOG" || fail "reconnecting not logged"
[ "$(prop Mode)" = manage ] || fail "no manager object after reconnecting"
call Pin sst 64K/anon never 0 || fail "Pin after reconnecting"
call Unpin s 64K/anon || fail "Unpin after reconnecting"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit code $RC after losing the bus"
ok "a restarted bus: mthpd reconnects, owns the name and serves its object again"
echo "all D-Bus service checks passed"
