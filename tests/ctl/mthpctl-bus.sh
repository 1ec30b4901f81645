#!/bin/bash
# mthpctl against the real mthpd on a private dbus-daemon (DBUS_SYSTEM_BUS_ADDRESS)
# and a fake host tree: every command over the bus, JSON checked, uid 65534
# refused writes (exit 4) but allowed reads, top driven in tmux, the
# fallbacks once mthpd is gone, and an mthpd running without the bus.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"

# what it drives: the checks of uid 65534 and of top's terminal need them
for tool in setpriv tmux; do
        command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (.ci/setup installs it)"; exit 77; }
done
start_open_bus
# The checks below expect the raised sizes to stay raised once the faults
# stop: 1000 ticks of 100 ms, not lib.sh's 100, which a loaded host ran
# out of before the refused-pin check ("a refused pin changed the knob"
# when the engine had only stepped 64K down)
fast_conf "$FAST" 1000

AS_ROOT=0
[ "$(id -u)" = 0 ] && AS_ROOT=1
# uid 65534 runs copies: the build tree may be where it cannot go (/root)
if [ $AS_ROOT = 1 ]; then
        nobody_copy NOBODY_CTL "$MTHPCTL"
        nobody_copy NOBODY_FAKESYSFS "$FAKESYSFS"
fi
ctl_nobody() { as_nobody env LD_PRELOAD="$NOBODY_FAKESYSFS" "$NOBODY_CTL" --root "$ROOT" --state-dir "$STATE" "$@"; }
# a journalctl with nothing to say, for the fallbacks (the host's journal is not ours)
mkdir "$T/bin"
printf '#!/bin/sh\nexit 0\n' > "$T/bin/journalctl"
chmod +x "$T/bin/journalctl"

start_mthpd -c "$FAST"
bump_faults 30 &
BUMP=$!
wait_for 5 knob_is hugepages-64kB/enabled always || fail "64K anon never raised"
wait "$BUMP"

on_bus() { ctl mode >/dev/null; }
wait_for 5 on_bus || fail "mthpd never appeared on the bus"

# 1. status over the bus: set by and decisions from ListKnobs
expect_rc 0 ctl --sample 0 status
grep -q "^mthpd: running (manage), pid $PID, tick [0-9]*, [0-9]* change(s)" <<<"$OUT" || fail "status header: $OUT"
grep -Eq "^64K +always +mthpd +always +mthpd" <<<"$OUT" || fail "status 64K: $OUT"
grep -Eq "^128K +never +original" <<<"$OUT" || fail "status 128K: $OUT"
grep -qx "mthpd raises a size at 1000 4K pages/s of a kind's fault demand and steps down below 10 (set by RaiseFaultRate= and LowerFaultRate=; no 4K fault cost known)" <<<"$OUT" ||
        fail "status: the rates: $OUT"
ctl status --sample 100ms --json | json_check '
assert d["daemon"] is True and d["source"] == "bus" and d["mode"] == "manage", d
assert d["tick"] > 0 and d["changes"] >= 6 and d["version"] and d["dry_run"] is False, d
k = {x["id"]: x for x in d["knobs"]}
assert k["64K/anon"]["value"] == "always" and k["64K/anon"]["set_by"] == "mthpd", k["64K/anon"]
assert k["64K/anon"]["decision"] == "always" and k["64K/anon"]["pinned"] is False, k["64K/anon"]
assert k["128K/anon"]["decision"] == "original" and k["global/defrag"]["decision"] is not None
assert (d["raise_fault_rate"], d["lower_fault_rate"], d["fault_cost_ns"], d["fault_rates_by"]) == \
       (1000, 10, None, "RaiseFaultRate"), d' ||
        fail "status --json over the bus"
ok "status takes set-by and decisions from the bus"

# 2. explain over the bus
expect_rc 0 ctl explain 64k
grep -q "^64K/anon: always" <<<"$OUT" || fail "explain 64K: $OUT"
! grep -q "^16K/" <<<"$OUT" || fail "explain 64K shows other sizes: $OUT"
# the rules behind the decision by name (ExplainRules): the kind's, then the size's
grep -Eq "^    rule: [a-z]+(-[a-z]+)*, size-in-use$" <<<"$OUT" || fail "explain 64K names no rule: $OUT"
ctl explain --json | json_check '
import re
k = {x["id"]: x for x in d["knobs"]}
assert d["source"] == "bus" and d["pid"] > 0 and d["tick"] > 0, d
assert k["64K/anon"]["decision"] == "always" and k["64K/anon"]["reason"], k
assert "2M/anon" in k and "global/defrag" in k
assert all(re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", x["rule"]) for x in k.values()), k
assert k["64K/anon"]["size_rule"] == "size-in-use" and k["global/defrag"]["size_rule"] is None, k' ||
        fail "explain --json: $(ctl explain --json)"
expect_rc 1 ctl explain 4M
grep -q "no mTHP size" <<<"$ERR" || fail "explain 4M: $ERR"
ok "explain asks the daemon, and names the rules behind its decisions"

# 3. history over the bus
expect_rc 0 ctl history
grep -Eq "^TIME +KNOB +OLD +NEW +REASON$" <<<"$OUT" || fail "history header: $OUT"
grep -Eq "^[0-9-]+ [0-9:]+ +16K/anon +never +always +anon fault demand" <<<"$OUT" || fail "history row: $OUT"
ctl history --since -1h --json | json_check '
c = d["changes"]
assert d["source"] == "bus" and len(c) >= 6, d
x = [e for e in c if e["id"] == "16K/anon"][0]
assert x["old"] == "never" and x["new"] == "always" and "demand" in x["reason"], x
assert all(a["time_usec"] <= b["time_usec"] for a, b in zip(c, c[1:]))' || fail "history --since -1h"
ctl history -n 2 --json | json_check 'assert len(d["changes"]) == 2, d' || fail "history -n 2"
ctl history --since +1h --json | json_check 'assert d["changes"] == [], d' || fail "history --since the future"
ok "history asks the daemon"

# 4. mode, metrics
expect_rc 0 ctl mode
[ "$OUT" = manage ] || fail "mode: $OUT"
ctl mode --json | json_check 'assert d == {"mode": "manage", "source": "bus"}, d' || fail "mode --json"
ctl metrics > "$T/metrics" || fail "metrics exit $?"
FAMILIES=$(check_metrics < "$T/metrics") || { cat "$T/metrics"; fail "metrics format"; }
for f in mthpd_up mthpd_ticks_total mthpd_knob_writes_total mthpd_knob_write_errors_total mthpd_guard_trips_total \
        mthpd_mode mthp_knob_info mthpd_knob_decision_info \
        mthpd_raise_fault_pages_per_second mthpd_lower_fault_pages_per_second; do
        grep -qw "$f" <<<"$FAMILIES" || fail "metrics lack $f"
done
grep -qx 'mthpd_up 1' "$T/metrics" || fail "mthpd_up"
grep -qx 'mthpd_raise_fault_pages_per_second 1000.0' "$T/metrics" &&
        grep -qx 'mthpd_lower_fault_pages_per_second 10.0' "$T/metrics" ||
        fail "metrics: the rates"
! grep -q '^mthpd_fault_cost_seconds' "$T/metrics" || fail "metrics: a fault cost on a fake host"
grep -qx 'mthpd_mode{mode="manage"} 1' "$T/metrics" || fail "mthpd_mode"
grep -qx 'mthp_knob_info{knob="64K/anon",size="64K",kind="anon",value="always",set_by="mthpd"} 1' "$T/metrics" ||
        fail "knob info set by mthpd"
ok "mode and metrics over the bus"

# 5. reads as uid 65534 work; writes are refused with exit 4
if [ $AS_ROOT = 1 ]; then
        expect_rc 0 ctl_nobody --sample 0 status --json
        json_check 'assert d["source"] == "bus" and d["restore_journal_knobs"] is None, d' <<<"$OUT" ||
                fail "status as nobody"
        expect_rc 0 ctl_nobody explain 64K
        expect_rc 0 ctl_nobody history --json
        expect_rc 0 ctl_nobody mode
        expect_rc 0 ctl_nobody metrics
        expect_rc 4 ctl_nobody pin 64K/anon never
        [ "$ERR" = "mthpctl: pin: permission denied: only root may pin knobs (run as root)" ] ||
                fail "pin as nobody: $ERR"
        for args in "unpin 64K/anon" "resume 64K/anon" "mode observe" "reload" "restore"; do
                # shellcheck disable=SC2086
                expect_rc 4 ctl_nobody $args
                grep -q "^mthpctl: ${args%% *}: permission denied: only root may .* (run as root)$" <<<"$ERR" ||
                        fail "$args as nobody: $ERR"
        done
        knob_is hugepages-64kB/enabled always || fail "a refused pin changed the knob"
        ok "uid 65534 reads, and is refused every write with exit 4"
fi
if [ $AS_ROOT = 0 ]; then
        expect_rc 4 ctl pin 64K/anon never
        grep -q "permission denied" <<<"$ERR" || fail "pin as non-root: $ERR"
        stop_mthpd TERM
        # it could not do its whole job: skipped, not passed
        echo "SKIP: needs root: the rest writes knobs through mthpd, which only root may ask"
        exit 77
fi

# 6. pin and unpin
expect_rc 0 ctl pin 128K/anon always --for 1h
grep -q "^pinned 128K/anon to always until .* (for 1h 0min)$" <<<"$OUT" || fail "pin output: $OUT"
wait_for 3 knob_is hugepages-128kB/enabled always || fail "pin not applied"
expect_rc 0 ctl --sample 0 status
grep -Eq "^128K +always +pinned" <<<"$OUT" || fail "status pinned: $OUT"
ctl --sample 0 status --json | json_check '
k = {x["id"]: x for x in d["knobs"]}["128K/anon"]
assert k["set_by"] == "pinned" and k["pinned"] is True, k' || fail "status --json pinned"
# off the bus mthpctl reads mthpd's status file: who set the knob and
# whether it is pinned as over the bus
offbus_pinned() {
        local bus
        bus=$(ctl --sample 0 status --json) || return 1
        DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/no-bus" ctl --sample 0 status --json | BUS=$bus json_check '
import os
b = {x["id"]: x for x in json.loads(os.environ["BUS"])["knobs"]}["128K/anon"]
k = {x["id"]: x for x in d["knobs"]}["128K/anon"]
assert d["source"] == "status-file", d["source"]
assert (k["set_by"], k["pinned"]) == (b["set_by"], b["pinned"]) == ("pinned", True), (k, b)
assert (d["raise_fault_rate"], d["lower_fault_rate"], d["fault_cost_ns"], d["fault_rates_by"]) == \
       (1000, 10, None, "RaiseFaultRate"), d'
}
wait_for 3 offbus_pinned || fail "status off the bus does not show the pin (status file)"
expect_rc 1 ctl pin 128K/anon bogus
grep -q "^mthpctl: pin: .*bogus" <<<"$ERR" || fail "pin bad value: $ERR"
expect_rc 1 ctl pin 3K/anon always
expect_rc 0 ctl unpin 128K/anon
wait_for 3 knob_is hugepages-128kB/enabled never || fail "unpin did not hand the knob back"
expect_rc 0 ctl pin global/defrag defer --until +1h
wait_for 3 knob_is defrag defer || fail "pin --until not applied"
expect_rc 0 ctl unpin global/defrag
ok "pin and unpin"

# 7. someone else writes a knob; resume hands it back
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled madvise
status_32k() { ctl --sample 0 status | grep -Eq "^32K +$1 +$2"; }
wait_for 3 status_32k madvise other || fail "foreign write not shown"
wait_for 3 grep -q "32K/anon was changed by someone else" "$LOG" || fail "mthpd did not notice the foreign write"
expect_rc 0 ctl resume 32K/anon
grep -q "manages 32K/anon again" <<<"$OUT" || fail "resume output: $OUT"
bump_faults 5
wait_for 3 status_32k always mthpd || fail "32K not managed again after resume"
ok "resume"

# 8. reload: all or nothing, errors with FILE:LINE
cp "$FAST" "$T/fast.good"
printf '[Engine]\nBogus=1\n' >> "$FAST"
expect_rc 1 ctl reload
grep -q "rejected the configuration and keeps running" <<<"$ERR" && grep -q "fast.conf:[0-9]*: unknown key 'Bogus'" <<<"$ERR" ||
        fail "reload error: $ERR"
cp "$T/fast.good" "$FAST"
expect_rc 0 ctl reload
ok "reload"

# 9. mode observe restores; manage resumes
expect_rc 0 ctl mode observe
wait_for 3 knob_is hugepages-64kB/enabled never || fail "observe did not restore 64K"
expect_rc 0 ctl mode
[ "$OUT" = observe ] || fail "mode after observe: $OUT"
ctl --sample 0 status | grep -q "^mthpd: running (observe" || fail "status in observe mode"
ctl metrics | grep -qx 'mthpd_mode{mode="observe"} 1' || fail "metrics in observe mode"
# what observing would set is in the history over the bus, marked as not written
observed() { ctl history --json | json_check '
c = [x for x in d["changes"] if x["dry_run"]]
assert d["source"] == "bus" and c and all(x["new"] != "never" for x in c), d'; }
bump_faults 10
wait_for 3 observed || fail "no observed change marked in history --json: $(ctl history --json)"
knob_is hugepages-16kB/enabled never || fail "observe wrote 16K"
ctl history --json | json_check '
w = [x for x in d["changes"] if x["reason"].startswith("original value restored")]
assert w and not any(x["dry_run"] for x in w), d' || fail "the restore by mode observe is marked as observed"
expect_rc 0 ctl history
grep -Eq "^[0-9-]+ [0-9:]+ +[0-9]+[KM]/anon +never +[a-z]+ +\(dry run, not written\) " <<<"$OUT" ||
        fail "history does not mark the observed changes: $OUT"
expect_rc 0 ctl mode manage
bump_faults 10
wait_for 3 knob_is hugepages-16kB/enabled always || fail "manage did not resume"
ok "mode observe and manage"

# 10. top in a terminal (tmux): the screen, q and Ctrl-C, the terminal restored
TMUX_SOCK=$T/tmux.sock
run_top() { # run_top NAME: top in a 120x40 tmux session; rc and stty -a afterwards to $T/NAME.*
        tmux -S "$TMUX_SOCK" new-session -d -s "$1" -x 120 -y 40 \
                "env LD_PRELOAD='$FAKESYSFS' '$MTHPCTL' --root '$ROOT' --state-dir '$STATE' top --interval 200ms;
                 echo \$? > '$T/$1.rc'; stty -a > '$T/$1.stty'; echo after-top; sleep 30"
}
screen() { tmux -S "$TMUX_SOCK" capture-pane -p -t "$1"; }
screen_has() { screen "$1" | grep -Eq "$2"; }
run_top q
wait_for 5 screen_has q "^KNOB +DECISION +REASON" || fail "top screen: $(screen q)"
screen q > "$T/top.screen"
grep -q "^mthpd: running (manage), pid $PID" "$T/top.screen" || fail "top header: $(cat "$T/top.screen")"
grep -q "^demand [0-9]* pages/s | PSI memory some" "$T/top.screen" || fail "top demand line"
grep -Eq "^SIZE +ANON +SET BY +SHMEM +SET BY +ANON/s" "$T/top.screen" || fail "top table header"
grep -Eq "^16K +always +mthpd" "$T/top.screen" || fail "top 16K row: $(cat "$T/top.screen")"
grep -Eq "^2M +inherit +original +inherit +original" "$T/top.screen" || fail "top 2M row"
grep -Eq "^16K/anon +always +" "$T/top.screen" || fail "top reasons"
awk 'length > 120 { exit 1 }' "$T/top.screen" || fail "top wider than the terminal"
tmux -S "$TMUX_SOCK" send-keys -t q q
wait_for 5 test -s "$T/q.rc" || fail "top did not quit on q"
[ "$(cat "$T/q.rc")" = 0 ] || fail "top exit status $(cat "$T/q.rc")"
# the shell writes the exit status first, then stty's output
wait_for 5 test -s "$T/q.stty" || fail "no stty output after top quit on q"
grep -Eq "(^|[ ;])icanon" "$T/q.stty" && grep -Eq "(^|[ ;])echo([ ;]|$)" "$T/q.stty" ||
        fail "terminal not restored: $(cat "$T/q.stty")"
wait_for 3 screen_has q "^after-top" || fail "top did not leave the alternate screen"
! screen q | grep -q "^SIZE" || fail "top's frame left on the main screen"
run_top intr
wait_for 5 screen_has intr "^SIZE" || fail "second top screen"
tmux -S "$TMUX_SOCK" send-keys -t intr C-c
wait_for 5 test -s "$T/intr.rc" || fail "top did not quit on Ctrl-C"
[ "$(cat "$T/intr.rc")" = 0 ] || fail "top exit status after Ctrl-C $(cat "$T/intr.rc")"
wait_for 5 test -s "$T/intr.stty" || fail "no stty output after top quit on Ctrl-C"
grep -Eq "(^|[ ;])icanon" "$T/intr.stty" || fail "terminal not restored after Ctrl-C"
ok "top in tmux: sizes, settings, reasons; q and Ctrl-C restore the terminal"

# 11. restore over the bus: everything back, mthpd observes
expect_rc 0 ctl restore
grep -q "restored every knob" <<<"$OUT" || fail "restore output: $OUT"
for s in 16 64; do knob_is hugepages-${s}kB/enabled never || fail "${s}K not restored"; done
# resumed after another writer set it: that writer's value is the original now
knob_is hugepages-32kB/enabled madvise || fail "32K not restored to the other writer's value"
[ "$(ctl mode)" = observe ] || fail "restore did not switch to observe"
ok "restore over the bus"

# 12. mthpd gone: reads fall back, writes exit 3
stop_mthpd TERM
[ "$RC" = 0 ] || fail "mthpd exit status $RC"
expect_rc 3 ctl pin 64K/anon always
grep -q "^mthpctl: pin: mthpd is not running" <<<"$ERR" || fail "pin after stop: $ERR"
expect_rc 3 ctl mode
expect_rc 3 ctl explain
ctl --sample 0 status --json | json_check 'assert d["daemon"] is False, d' || fail "status after stop"
PATH="$T/bin:$PATH" ctl history --json | json_check 'assert d["source"] == "journal", d' || fail "history after stop"
ctl metrics | grep -qx 'mthpd_up 0' || fail "metrics after stop"
ok "without mthpd: reads fall back, writes exit 3"

# 13. an mthpd without its D-Bus interface: reads come from its status file
start_mthpd -c "$FAST" --no-bus
bump_faults 20 &
BUMP=$!
wait_for 5 knob_is hugepages-32kB/enabled always || fail "--no-bus mthpd did not raise"
wait "$BUMP"
expect_rc 0 ctl --sample 0 status
grep -q "^mthpd: running (manage), pid $PID, tick [0-9]* (not on the bus" <<<"$OUT" || fail "status --no-bus: $OUT"
ctl --sample 0 status --json | json_check '
assert d["daemon"] is True and d["source"] == "status-file" and d["mode"] == "manage", d
k = {x["id"]: x for x in d["knobs"]}
assert k["32K/anon"]["set_by"] == "mthpd" and k["32K/anon"]["decision"] == "always", k["32K/anon"]' ||
        fail "status --json --no-bus"
expect_rc 0 ctl explain 32K
grep -q "^32K/anon: always" <<<"$OUT" || fail "explain from the status file: $OUT"
grep -Eq "^    rule: [a-z]+(-[a-z]+)*, size-in-use$" <<<"$OUT" || fail "explain from the status file names no rule: $OUT"
expect_rc 0 ctl mode
[ "$OUT" = manage ] || fail "mode from the status file: $OUT"
expect_rc 3 ctl pin 32K/anon never
expect_rc 1 ctl restore
grep -q "not on the bus; stop it first" <<<"$ERR" || fail "restore with a --no-bus mthpd: $ERR"
stop_mthpd TERM
ok "an mthpd without the bus: status file for reads, exit 3 for writes"
echo "all mthpctl bus checks passed"
