#!/bin/bash
# mthpd --config FILE reads FILE and then FILE.d/*.conf by name: the files in
# effect are logged at start and reload, an error in a drop-in names it and
# its line, and a reload applies every file or none.
# Env: MTHPD, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "$0")/../lib/fakehost.sh"

fakehost_setup mthpd-dropins
"$FAKEHOST" create "$ROOT"
CONF=$T/live.conf
fast_conf "$CONF" 100
mkdir "$CONF.d"
printf '[Daemon]\nMode=observe\n' > "$CONF.d/50-observe.conf"
printf '[Daemon]\nInterval=200ms\n' > "$CONF.d/10-slow.conf"
printf '[Bogus]\n' > "$CONF.d/20-not-a-drop-in.txt"

# 1. the main file, then the drop-ins by name; the last Interval= wins
start_mthpd -c "$CONF"
wait_for 3 grep -q "observing: deciding and explaining without writing every 0.2s" "$LOG" || fail "drop-ins not applied at start"
grep -q "configuration: $CONF, $CONF.d/10-slow.conf, $CONF.d/50-observe.conf$" "$LOG" ||
        fail "files in effect not logged in order: $(grep 'configuration:' "$LOG")"
ok "start: main file then drop-ins by name, listed in the log"

# 2. a bad drop-in: named with its line, and the good changes of the other
#    files are not applied either
printf '[Daemon]\nInterval=500ms\n' > "$CONF.d/10-slow.conf"
printf '[Engine]\nLowerTicks=3\nMaxBloat=lots\n' > "$CONF.d/30-bad.conf"
kill -HUP "$PID"
wait_for 3 grep -q "30-bad.conf:3: key 'MaxBloat' in \[Engine\]: expected" "$LOG" ||
        fail "drop-in error not named with its line"
grep -q "keeping the running configuration" "$LOG" || fail "bad reload not rejected"
! grep -q "at a 0.5 s interval" "$LOG" || fail "a refused reload applied another file's Interval="

# 3. fixed: the reload applies, and lists the files again
rm "$CONF.d/30-bad.conf"
kill -HUP "$PID"
wait_for 3 grep -q "reloaded" "$LOG" || fail "good reload not applied"
grep -q "at a 0.5 s interval" "$LOG" || fail "the reload did not apply 10-slow.conf's Interval="
[ "$(grep -c "configuration: $CONF, $CONF.d/10-slow.conf, $CONF.d/50-observe.conf$" "$LOG")" = 2 ] ||
        fail "reload did not list the files: $(grep 'configuration:' "$LOG")"
kill -0 "$PID" || fail "daemon died on reload"
stop_mthpd TERM
[ "$RC" = 0 ] || fail "exit after reloads $RC"
ok "reload: a bad drop-in refuses every file, its name and line logged; a good one applies"

# 4. at start a bad drop-in is a configuration error (78)
printf '[Engine]\nBogus=1\n' > "$CONF.d/40-bad.conf"
start_mthpd -c "$CONF" --once
RC=0; wait "$PID" || RC=$?; PID=""
[ "$RC" = 78 ] || fail "bad drop-in at start exited $RC, expected 78"
grep -q "40-bad.conf:2: unknown key 'Bogus' in \[Engine\]" "$LOG" || fail "start error does not name the drop-in"
ok "start: a bad drop-in exits 78 naming FILE:LINE"
