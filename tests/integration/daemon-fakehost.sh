#!/bin/bash
# Integration: the real mthpd and mthpctl binaries on a fake host tree whose
# counters this script moves. The fakesysfs preload gives the tree the
# kernel's write semantics (bracketed selection, EINVAL for values not offered).
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"

fakehost_setup mthpd-it
export LD_PRELOAD="$FAKESYSFS"

"$FAKEHOST" create "$ROOT"
FAST=$T/fast.conf
fast_conf "$FAST" 100

# 1. --once --dry-run: probe logged, nothing written
"$MTHPD" --root "$ROOT" --state-dir "$STATE" --once --dry-run -c "$FAST" 2>"$LOG" || fail "dry run exited $?"
grep -q "probe: PMD size 2M; 9 mTHP sizes" "$LOG" || fail "probe not logged"
grep -q "8K(shmem)" "$LOG" || fail "8K should have only a shmem knob"
[ "$(knob hugepages-16kB/enabled)" = never ] || fail "dry run wrote a knob"
[ ! -e "$STATE/restore.journal" ] || fail "dry run left a journal"
ok "dry run probes and writes nothing"

# 2. manage: faults raise 16K, then 32K, then 64K anon; status and explain say why
start_mthpd -c "$FAST"
bump_faults 30 &
BUMP=$!
wait_for 5 knob_is hugepages-64kB/enabled always || fail "64K anon never raised"
wait "$BUMP"
[ "$(knob hugepages-16kB/enabled)" = always ] || fail "16K anon not raised with 64K"
[ "$(knob hugepages-128kB/enabled)" = never ] || fail "128K is outside the default ladder"
grep -q "set 16K/anon: never -> always: anon fault demand" "$LOG" || fail "change not logged with reason"
[ -s "$STATE/restore.journal" ] || fail "no restore journal while managing"
grep -q "original=never" "$STATE/restore.journal" || fail "journal lacks the original"
"$MTHPCTL" --root "$ROOT" --state-dir "$STATE" --sample 0 status > "$T/status" || fail "status failed"
grep -Eq "^64K +always +mthpd" "$T/status" || { cat "$T/status"; fail "status does not show 64K set by mthpd"; }
grep -Eq "^128K +never +original" "$T/status" || fail "status does not show 128K original"
"$MTHPCTL" --root "$ROOT" --state-dir "$STATE" --sample 0 --json status |
        python3 -c 'import json,sys; d=json.load(sys.stdin); k={x["id"]:x for x in d["knobs"]};
assert d["daemon"] is True, d
assert k["64K/anon"]["value"]=="always" and k["64K/anon"]["set_by"]=="mthpd", k["64K/anon"]
assert "8K/anon" not in k and k["8K/shmem"]["value"]=="never"
assert "always" in k["global/enabled"]["accepts"]' || fail "status --json wrong"
"$MTHPCTL" --state-dir "$STATE" explain 64K | grep -q "64K/anon: always" || fail "explain 64K"
ok "faults raise the anon ladder; status, --json and explain show it"

# 3. another writer takes 32K: mthpd backs off that knob
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled madvise
wait_for 3 grep -q "32K/anon was changed by someone else" "$LOG" || fail "foreign write not noticed"
"$MTHPCTL" --root "$ROOT" --state-dir "$STATE" --sample 0 status > "$T/status32" || fail "status failed"
grep -Eq "^32K +madvise +other" "$T/status32" ||
        fail "status does not show 32K set by other"
ok "a foreign write makes mthpd stop managing that knob"

# 4. SIGTERM restores all but the foreign knob, exit 0, journal gone
stop_mthpd TERM
[ "$RC" = 0 ] || fail "SIGTERM exit code $RC"
for s in 16 64; do [ "$(knob hugepages-${s}kB/enabled)" = never ] || fail "${s}K not restored"; done
for s in 16 32 64; do [ "$(knob hugepages-${s}kB/shmem_enabled)" = never ] || fail "${s}K shmem not restored"; done
[ "$(knob hugepages-32kB/enabled)" = madvise ] || fail "foreign 32K was overwritten"
[ ! -e "$STATE/restore.journal" ] || fail "journal left after clean stop"
"$FAKEHOST" write "$ROOT" /sys/kernel/mm/transparent_hugepage/hugepages-32kB/enabled never
ok "SIGTERM restores every knob it still owns"

# 5. kill -9, then mthpctl restore
start_mthpd -c "$FAST"
bump_faults 20 &
BUMP=$!
wait_for 5 knob_is hugepages-32kB/enabled always || fail "not raised before kill"
stop_mthpd 9
wait "$BUMP"
[ -s "$STATE/restore.journal" ] || fail "no journal after kill -9"
"$MTHPCTL" --state-dir "$STATE" restore | grep -q "restored" || fail "mthpctl restore"
for s in 16 32 64; do [ "$(knob hugepages-${s}kB/enabled)" = never ] || fail "${s}K not restored by mthpctl"; done
[ ! -e "$STATE/restore.journal" ] || fail "journal left after mthpctl restore"
ok "kill -9 then mthpctl restore"

# 6. kill -9, then the next start restores first
start_mthpd -c "$FAST"
bump_faults 20 &
BUMP=$!
wait_for 5 knob_is hugepages-16kB/enabled always || fail "not raised before kill"
stop_mthpd 9
wait "$BUMP"
start_mthpd -c "$FAST"
wait_for 3 grep -q "restored .* knobs from the previous run" "$LOG" || fail "restart did not restore"
grep -q "did not stop cleanly" "$LOG" || fail "restart did not say why"
stop_mthpd TERM
for s in 16 32 64; do [ "$(knob hugepages-${s}kB/enabled)" = never ] || fail "${s}K not restored by restart"; done
ok "kill -9 then restart restores first"

# 7. a bad configuration is refused with FILE:LINE
printf '[Daemon]\nInterval=soon\n' > "$T/bad.conf"
RC=0; "$MTHPD" --root "$ROOT" --state-dir "$STATE" -c "$T/bad.conf" --once 2>"$LOG" || RC=$?
[ "$RC" = 78 ] || fail "bad config exit code $RC, expected 78 (MTHPD_EXIT_CONFIG)"
grep -q "bad.conf:2: key 'Interval' in \[Daemon\]: expected a duration" "$LOG" || fail "bad config message"
ok "bad config refused with file:line"

# 8. SIGHUP with a bad file keeps the running config; a good one applies
cp "$FAST" "$T/live.conf"
start_mthpd -c "$T/live.conf"
wait_for 3 grep -q "managing mTHP knobs every 0.1s" "$LOG" || fail "not started"
printf '[Engine]\nBogus=1\n' > "$T/live.conf"
kill -HUP "$PID"
wait_for 3 grep -q "live.conf:2: unknown key 'Bogus' in \[Engine\]" "$LOG" || fail "reload error not logged"
grep -q "keeping the running configuration" "$LOG" || fail "bad reload not rejected"
printf '[Daemon]\nInterval=200ms\n' > "$T/live.conf"
kill -HUP "$PID"
wait_for 3 grep -q "reloaded" "$LOG" || fail "good reload not applied"
kill -0 "$PID" || fail "daemon died on reload"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit after reloads $RC"
ok "SIGHUP: bad file rejected whole, good file applied"

# 8b. the MADV_COLLAPSE budget follows a reload: CollapseBudget= and
# Interval= x CollapseCPU= reach the running collapser (the line is what
# the collapser holds, read back from it); a bad CollapseCPU= is refused
# with file:line and changes nothing
cp "$FAST" "$T/live.conf"
start_mthpd -c "$T/live.conf"
wait_for 3 grep -q "managing mTHP knobs every 0.1s" "$LOG" || fail "not started"
grep -q "MADV_COLLAPSE budget: 64M and 10.0 ms a tick (CollapseCPU=10% of a core at a 0.1 s interval)" "$LOG" ||
        fail "startup budget not 64M and 100 ms x 10%: $(grep 'budget' "$LOG")"
printf '[Daemon]\nInterval=100ms\n[Engine]\nCollapseBudget=16M\nCollapseCPU=0.5%%\n' > "$T/live.conf"
kill -HUP "$PID"
wait_for 3 grep -q "reload: MADV_COLLAPSE budget: 16M and 0.5 ms a tick (CollapseCPU=0.5% of a core at a 0.1 s interval)" \
        "$LOG" || fail "reload did not give the collapser 16M and 100 ms x 0.5%: $(grep 'budget' "$LOG")"
printf '[Daemon]\nInterval=1s\n' > "$T/live.conf"
kill -HUP "$PID"
wait_for 3 grep -q "reload: MADV_COLLAPSE budget: 64M and 100.0 ms a tick (CollapseCPU=10% of a core at a 1 s interval)" \
        "$LOG" || fail "reload did not give the collapser 64M and 1 s x 10%: $(grep 'budget' "$LOG")"
printf '[Daemon]\nInterval=1s\n[Engine]\nCollapseCPU=0%%\n' > "$T/live.conf"
kill -HUP "$PID"
wait_for 3 grep -q "live.conf:4: key 'CollapseCPU' in \[Engine\]: expected a share of one core above 0% and at most 100%" \
        "$LOG" || fail "CollapseCPU=0% not refused with file:line"
[ "$(grep -c "MADV_COLLAPSE budget" "$LOG")" = 3 ] || fail "a refused reload changed the budget: $(grep 'budget' "$LOG")"
kill -0 "$PID" || fail "daemon died on reload"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit after budget reloads $RC"
ok "SIGHUP: CollapseBudget= and Interval= x CollapseCPU= reach the running collapser"

# 9. a host without PSI works, and says so
"$FAKEHOST" create "$T/nopsi" --no-psi
"$MTHPD" --root "$T/nopsi" --state-dir "$T/state2" --once --dry-run 2>"$LOG" || fail "no-PSI host failed"
grep -q "PSI memory: absent" "$LOG" || fail "PSI absence not reported"
ok "no PSI: degrades, does not die"
# 7. a leftover journal that cannot be restored: exit 6 (the unit's
# RestartPreventExitStatus=), one sentence saying so, the journal kept
start_mthpd -c "$FAST"
bump_faults 20 &
BUMP=$!
wait_for 5 knob_is hugepages-16kB/enabled always || fail "not raised before kill"
stop_mthpd 9
wait "$BUMP"
# written for another host root: mthpd must not apply it here, nor start
sed -i "s|^root=.*|root=$T|" "$STATE/restore.journal"
cp "$STATE/restore.journal" "$T/journal.before"
start_mthpd -c "$FAST"
RC=0; wait "$PID" || RC=$?; PID=""
[ "$RC" = 6 ] || fail "unrestorable journal: exit $RC, expected 6"
grep -q "not starting: the restore journal $STATE/restore.journal of a run that did not stop cleanly cannot be restored" "$LOG" ||
        fail "unrestorable journal: no sentence saying why it does not start"
cmp -s "$STATE/restore.journal" "$T/journal.before" || fail "unrestorable journal: the journal changed"
ok "an unrestorable leftover journal: exit 6, says why, keeps the journal"
echo "all integration checks passed"
