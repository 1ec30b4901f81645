#!/bin/bash
# Integration: the real mthpd records (--record) on a fake host tree while
# this script moves its counters; 'mthpctl simulate' on the recording must
# make exactly the changes the daemon logged (knob, old -> new and reason,
# in order). Also: a kill -9 leaves a usable recording, a failing write stops
# only the recording, and bad recordings and usage give exit 1 and 2.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"

fakehost_setup mthpd-rec
REC=$T/run.rec
export LD_PRELOAD="$FAKESYSFS"
unset JOURNAL_STREAM  # the daemon's log goes to stderr, which we read

# "KNOB: OLD -> NEW: REASON" of every change, from mthpd's log / simulate's output
logged_changes() { sed -n 's/^mthpd: \(would \)\{0,1\}set //p' "$1"; }
simulated_changes() { sed -n 's/^tick [0-9]*: //p' "$1"; }

"$FAKEHOST" create "$ROOT"
FAST=$T/fast.conf
fast_conf "$FAST" 4

# 1. manage with --record: faults raise the ladder, idle ticks lower it; the
#    replay makes the same changes for the same reasons
start_mthpd -c "$FAST" --record "$REC"
wait_for 5 grep -q "managing mTHP knobs" "$LOG" || fail "mthpd did not start"
bump_faults 25
wait_for 8 grep -q "set 16K/anon: always -> never" "$LOG" || fail "idle ticks did not step anon down to 4K"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "mthpd exit code $RC"
head -1 "$REC" | grep -qx "mthp-record 1" || fail "recording lacks its version line"
logged_changes "$LOG" > "$T/daemon.changes"
[ "$(wc -l < "$T/daemon.changes")" -ge 6 ] || fail "expected >= 6 changes, got: $(cat "$T/daemon.changes")"
"$MTHPCTL" simulate "$REC" --config "$FAST" > "$T/sim.out" || fail "simulate exited $?"
simulated_changes "$T/sim.out" > "$T/sim.changes"
diff -u "$T/daemon.changes" "$T/sim.changes" || fail "simulated changes differ from the daemon's"
TICKS=$(grep -c '^tick ' "$REC")
grep -q "^$REC: $TICKS tick(s) (0 to $((TICKS - 1)), [0-9.]*s), $(wc -l < "$T/daemon.changes") change(s)$" "$T/sim.out" ||
        fail "summary wrong: $(grep "^$REC" "$T/sim.out")"
grep -q "^  16K/anon  *2 change(s)$" "$T/sim.out" || fail "16K/anon should change twice: $(cat "$T/sim.out")"
ok "simulate replays the $(wc -l < "$T/daemon.changes") changes mthpd made over $TICKS recorded ticks, reasons and all"

# 2. --json: one object per change, then the summary
"$MTHPCTL" --json simulate "$REC" -c "$FAST" > "$T/sim.json" || fail "simulate --json exited $?"
python3 - "$T/sim.json" "$T/daemon.changes" "$TICKS" <<'PY' || fail "simulate --json wrong"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
daemon = open(sys.argv[2]).read().splitlines()
*changes, last = lines
s = last["summary"]
assert [f'{c["knob"]}: {c["old"]} -> {c["new"]}: {c["reason"]}' for c in changes] == daemon, changes
assert s["ticks"] == int(sys.argv[3]) and s["changes"] == len(daemon), s
assert sum(s["changes_per_knob"].values()) == len(daemon), s
assert s["final"]["anon"] == {"level": 0, "levels": 8, "top": None}, s
PY
ok "simulate --json"

# 3. another configuration on the same recording: what other thresholds do
# ShmemAlign=no: its idle advise is no raise
printf '[Engine]\nRaiseFaultRate=100000000\nShmemAlign=no\n' > "$T/high.conf"
"$MTHPCTL" simulate "$REC" --config "$T/high.conf" > "$T/high.out" || fail "simulate with high.conf exited $?"
grep -q ", 0 change(s)$" "$T/high.out" || fail "an unreachable RaiseFaultRate still changed knobs"
printf '[Engine]\nRaiseFaultRate=lots\n' > "$T/bad.conf"
RC=0; "$MTHPCTL" simulate "$REC" --config "$T/bad.conf" 2> "$T/err" > /dev/null || RC=$?
[ "$RC" = 1 ] && grep -q "bad.conf:2: " "$T/err" || fail "bad --config: exit $RC, $(cat "$T/err")"
ok "simulate --config tries other thresholds on the same recording"

# 4. kill -9 while recording (dry run): the file holds whole ticks and replays
start_mthpd -c "$FAST" --dry-run --record "$T/killed.rec"
bump_faults 12
stop_mthpd 9
"$MTHPCTL" simulate "$T/killed.rec" -c "$FAST" > "$T/killed.out" 2>&1 || fail "killed recording: $(cat "$T/killed.out")"
[ "$(tail -1 "$T/killed.rec")" = end ] || fail "the killed recording ends inside a tick"
logged_changes "$LOG" > "$T/killed.daemon"
simulated_changes "$T/killed.out" | head -n "$(wc -l < "$T/killed.daemon")" > "$T/killed.sim"
[ -s "$T/killed.daemon" ] || fail "the dry run logged no change"
diff -u "$T/killed.daemon" "$T/killed.sim" || fail "dry-run changes differ from the replay"
ok "kill -9 leaves a recording of whole ticks; a dry run replays the same"

# 5. a write that fails (file size limit) stops the recording, not mthpd
: > "$LOG"
(
        trap '' XFSZ   # then write(2) fails with EFBIG instead of killing
        ulimit -f 12   # KiB: the caps and a few ticks
        exec "$MTHPD" --root "$ROOT" --state-dir "$STATE" -c "$FAST" --dry-run --record "$T/full.rec" 2>"$LOG"
) &
PID=$!
wait_for 5 grep -q "recording to $T/full.rec failed: File too large; recording stops" "$LOG" ||
        fail "failed write not logged"
sleep 0.5
kill -0 "$PID" || fail "mthpd died when its recording failed"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit code $RC after a failed recording"
[ "$(grep -c "recording to" "$LOG")" = 1 ] || fail "the failed write was logged more than once"
"$MTHPCTL" simulate "$T/full.rec" > /dev/null || fail "the recording cut by the failed write does not replay"
ok "a failing write is logged once, recording stops, mthpd carries on"

# 6. malformed recordings name file and line; usage errors exit 2
sed '40s/.*/tock 3/' "$REC" > "$T/bad.rec"
RC=0; "$MTHPCTL" simulate "$T/bad.rec" > /dev/null 2> "$T/err" || RC=$?
[ "$RC" = 1 ] && grep -q "^mthpctl: $T/bad.rec:40: " "$T/err" || fail "malformed: exit $RC, $(cat "$T/err")"
head -n 45 "$REC" | sed '${/^end$/d}' > "$T/cut.rec"
RC=0; "$MTHPCTL" simulate "$T/cut.rec" > /dev/null 2> "$T/err" || RC=$?
[ "$RC" = 1 ] && grep -q "cut.rec:[0-9]*: the recording ends inside tick" "$T/err" || fail "cut: exit $RC, $(cat "$T/err")"
RC=0; "$MTHPCTL" simulate "$FAST" > /dev/null 2> "$T/err" || RC=$?
[ "$RC" = 1 ] && grep -q "fast.conf:1: not an mthpd recording" "$T/err" || fail "not a recording: exit $RC"
for args in "" "$REC $REC" "--bogus $REC" "$REC --config"; do
        RC=0; "$MTHPCTL" simulate $args > /dev/null 2>&1 || RC=$?
        [ "$RC" = 2 ] || fail "'simulate $args' exit $RC, expected 2"
done
RC=0; "$MTHPD" --record "$T/no/such/dir.rec" --root "$ROOT" --state-dir "$STATE" --dry-run --once 2>"$LOG" || RC=$?
[ "$RC" = 1 ] && grep -q "cannot record to $T/no/such/dir.rec" "$LOG" || fail "--record to a bad path: exit $RC"
ok "bad recordings: exit 1 with FILE:LINE; usage: exit 2"
echo "all record/replay checks passed"
