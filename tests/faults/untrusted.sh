#!/usr/bin/env bash
# Issue 13, the daemon and mthpctl ends of it: the real mthpd and mthpctl on
# a fake host, given files, names and paths anyone could choose. Each check
# is named "itemNN: ..." after the item of the issue. Hermetic, suite
# 'faults'. Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS.
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

fakehost_setup "mthpd-untrusted"
"$FAKEHOST" create "$ROOT"
FAST=$T/fast.conf
fast_conf "$FAST" 2
snapshot_knobs "$T/orig.knobs"

# run_mthpd ARGS...: mthpd --once on the fake host, at most 15 s; RC, $LOG
run_mthpd() {
        RC=0
        LD_PRELOAD="$FAKESYSFS" timeout -s KILL 15 "$MTHPD" --root "$ROOT" --no-bus --once "$@" 2>"$LOG" || RC=$?
}
has() { grep -qF -- "$1" "$LOG"; }
hasnt() { ! grep -qF -- "$1" "$LOG"; }

# ---- item 5: special files never hang ----
mkfifo "$T/fifo.conf"
run_mthpd --state-dir "$STATE" -c "$T/fifo.conf"
check "item05: a FIFO mthpd.conf: mthpd returns (exit $RC, not 137 of the timeout)" test "$RC" != 137 -a "$RC" != 0
check "item05: ... and says it is a FIFO" has "fifo.conf: a FIFO, expected a regular file"
RC=0; timeout -s KILL 15 "$MTHPCTL" check /dev/zero >"$T/out" 2>&1 || RC=$?
check "item05: mthpctl check /dev/zero returns (exit $RC)" [ "$RC" = 1 ]
check "item05: ... and says it is a device" grep -qF "/dev/zero: a character device, expected a regular file" "$T/out"
mkdir -p "$STATE"
mkfifo "$STATE/restore.journal"
run_mthpd --state-dir "$STATE" -c "$FAST"
check "item05: a FIFO restore journal: mthpd does not start (exit $RC, expected 6)" [ "$RC" = 6 ]
check "item05: ... and says it is a FIFO" has "restore.journal: a FIFO, expected a regular file"
RC=0; LD_PRELOAD="$FAKESYSFS" timeout -s KILL 15 "$MTHPCTL" --root "$ROOT" --state-dir "$STATE" restore \
        >"$LOG" 2>&1 || RC=$?
check "item05: mthpctl restore of a FIFO journal returns (exit $RC)" [ "$RC" = 1 ]
check "item05: ... saying why, not 'invalid journal'" has "a FIFO, expected a regular file"
rm -f "$STATE/restore.journal"

# ---- item 6: symlinks and foreign owners in the state directory ----
echo precious > "$T/victim"
rm -f "$STATE/lock"
ln -s "$T/victim" "$STATE/lock"
run_mthpd --state-dir "$STATE" -c "$FAST"
check "item06: a symlink named lock: refused (exit $RC)" [ "$RC" != 0 ]
check "item06: ... saying so" has "$STATE/lock: a symbolic link, expected a regular file"
check "item06: ... and the file it names is untouched" [ "$(cat "$T/victim")" = precious ]
rm -f "$STATE/lock"
ln -s "$T/victim" "$STATE/restore.journal.tmp"
ln -s "$T/victim" "$STATE/status.tmp"
# a run that changes knobs (so it saves the journal), then stops and restores
fast_conf "$T/manage.conf" 2
start_mthpd -c "$T/manage.conf" --no-bus
bump_faults 20
check "item06: ... mthpd changed a knob, so it saved its journal" wait_for 10 grep -q ": set " "$LOG"
stop_mthpd TERM
check "item06: symlinks named restore.journal.tmp and status.tmp: the file they name is untouched" \
        [ "$(cat "$T/victim")" = precious ]
check "item06: ... a knob was changed and restored on the way (exit $RC)" [ "$RC" = 0 ]
check "item06: ... knobs as before" same_knobs "$T/orig.knobs"
chmod 0777 "$STATE"
run_mthpd --state-dir "$STATE" -c "$FAST"
check "item06: a state directory writable by everyone: refused (exit $RC)" [ "$RC" = 1 ]
check "item06: ... saying so" has "$STATE: directory writable by everyone (mode 0777)"
chmod 0755 "$STATE"
chown "$NOBODY" "$STATE"
run_mthpd --state-dir "$STATE" -c "$FAST"
check "item06: a state directory owned by nobody: refused (exit $RC)" [ "$RC" = 1 ]
check "item06: ... saying so" has "directory owned by uid $NOBODY, expected root"
chown 0 "$STATE"
"$FAKEHOST" write "$ROOT" "$THP/hugepages-64kB/enabled" always >/dev/null 2>&1 || true
cat > "$STATE/restore.journal" <<EOF
[journal]
root=$ROOT

[knob 64K/anon]
path=$THP/hugepages-64kB/enabled
original=never
written=always
previous=never
state=managed
EOF
chown "$NOBODY" "$STATE/restore.journal"
chmod 0666 "$STATE/restore.journal"
RC=0; LD_PRELOAD="$FAKESYSFS" timeout -s KILL 15 "$MTHPCTL" --root "$ROOT" --state-dir "$STATE" restore \
        >"$LOG" 2>&1 || RC=$?
check "item06: a journal owned by nobody, mode 0666: mthpctl restore refuses it (exit $RC)" [ "$RC" = 1 ]
check "item06: ... saying so" has "owned by uid $NOBODY, expected root"
run_mthpd --state-dir "$STATE" -c "$FAST"
check "item06: ... and so does mthpd (exit $RC, expected 6)" [ "$RC" = 6 ]
rm -f "$STATE/restore.journal" "$STATE/restore.journal.tmp" "$STATE/status.tmp"
"$FAKEHOST" write "$ROOT" "$THP/hugepages-64kB/enabled" never >/dev/null 2>&1 || true

# ---- item 7: a path that does not fit is an error ----
long=$T/$(printf 'd%.0s' $(seq 1 $((244 - ${#T} - 1))))
run_mthpd --state-dir "$long" -c "$FAST"
check "item07: a ${#long}-byte --state-dir: refused (exit $RC)" [ "$RC" != 0 ]
check "item07: ... saying so" has "--state-dir $long: expected an absolute path of at most 223 bytes"
check "item07: ... and nothing was created" test ! -e "$long" -a ! -e "${long:0:200}"
longp=/$(printf 'p%.0s' $(seq 1 300))
run_mthpd --state-dir "$STATE" --policy-dir "$longp" -c "$FAST"
check "item07: a 301-byte --policy-dir: refused (exit $RC)" [ "$RC" != 0 ]
check "item07: ... saying so" has "--policy-dir /ppp"

# ---- item 10: -c DIRECTORY ----
run_mthpd --state-dir "$STATE" -c "$T"
check "item10: -c DIRECTORY: refused (exit $RC)" [ "$RC" != 0 ]
check "item10: ... saying so" has "$T: a directory, expected a regular file"

# ---- item 14: a missing parent of the state directory ----
run_mthpd --state-dir "$T/no/such/state" -c "$FAST"
check "item14: a missing state-dir parent: refused (exit $RC)" [ "$RC" = 1 ]
check "item14: ... said as such" has "its parent directory does not exist"
check "item14: ... not blamed on the kernel" hasnt "this kernel does not have it"

same_knobs "$T/orig.knobs" || fail "knobs changed"
echo "untrusted: $CHECKS checks passed"
