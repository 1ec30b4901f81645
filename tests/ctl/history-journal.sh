#!/bin/bash
# mthpctl history without mthpd reads its change entries from the journal
# with sd-journal (MESSAGE_ID=6f2a1c3e9b8d4d0f8a5e7c1b2d3f4a5b, MTHP_* fields):
# real journal files under the fake host root's var/log/journal, written by
# systemd-journal-remote from the export format (journald is not needed).
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"

REMOTE=""
for p in /lib/systemd/systemd-journal-remote /usr/lib/systemd/systemd-journal-remote; do
        [ -x "$p" ] && REMOTE=$p && break
done
[ -n "$REMOTE" ] || { echo "SKIP: systemd-journal-remote is not installed (Debian: systemd-journal-remote; .ci/setup installs it)"; exit 77; }

ID=0123456789abcdef0123456789abcdef
JDIR=$ROOT/var/log/journal/$ID
NOW_US=$(($(date +%s) * 1000000))
SEQ=0
# entry USEC FIELD=VALUE...: one entry in the journal export format
entry() {
        local t=$1; shift
        SEQ=$((SEQ + 1))
        printf '__REALTIME_TIMESTAMP=%s\n__MONOTONIC_TIMESTAMP=%s\n_BOOT_ID=%s\n_MACHINE_ID=%s\n_HOSTNAME=fake\n' \
                "$t" "$SEQ" "$ID" "$ID"
        printf '%s\n' "$@"
        printf '\n'
}
# journal NAME: the export text on stdin becomes $JDIR/NAME.journal
journal() {
        mkdir -p "$JDIR"
        timeout 30 "$REMOTE" -o "$JDIR/$1.journal" - 2>"$T/remote.err" || fail "journal-remote: $(cat "$T/remote.err")"
}
MID=MESSAGE_ID=6f2a1c3e9b8d4d0f8a5e7c1b2d3f4a5b

# 1. no journal files under the root: an empty history, said so
expect_rc 0 ctl history
grep -q "the journal holds no knob changes" <<<"$OUT" || fail "no journal: $OUT"
grep -q "no journal files under $ROOT" <<<"$ERR" || fail "no journal files not said: $ERR"
ok "no journal: empty history"

# 2. two files, entries interleaved in time; one not a change, one without MTHP_KNOB
{
        entry $((NOW_US - 7200000000)) "MESSAGE=set 16K/anon: never -> always" "$MID" MTHP_KNOB=16K/anon \
                MTHP_SIZE=16K MTHP_KIND=anon MTHP_OLD=never MTHP_NEW=always \
                "MTHP_REASON=demand 12000 pages/s ≥ 1000, \"quoted\"" MTHP_DRY_RUN=0 _PID=42
        entry $((NOW_US - 30000000)) "MESSAGE=not a change entry" PRIORITY=6
        entry $((NOW_US - 20000000)) "$MID" "MESSAGE=no knob" MTHP_OLD=never
} | journal system
{
        entry $((NOW_US - 3600000000 * 3)) "$MID" MTHP_KNOB=2M/shmem MTHP_OLD=never MTHP_NEW=inherit MTHP_REASON=oldest
        entry $((NOW_US - 60000000)) "$MID" MTHP_KNOB=64K/anon MTHP_OLD=never MTHP_NEW=always MTHP_REASON=dense \
                MTHP_DRY_RUN=1
} | journal user-1000
ctl history --json | json_check '
c = d["changes"]
assert d["source"] == "journal", d
assert [x["id"] for x in c] == ["2M/shmem", "16K/anon", "64K/anon"], c
assert c[1]["old"] == "never" and c[1]["new"] == "always", c[1]
assert c[1]["reason"] == "demand 12000 pages/s \u2265 1000, \"quoted\"" and c[1]["dry_run"] is False, c[1]
assert c[2]["dry_run"] is True and c[0]["time_usec"] < c[1]["time_usec"] < c[2]["time_usec"], c' ||
        fail "history --json from the journal"
expect_rc 0 ctl history
grep -q "from the journal" <<<"$OUT" || fail "history human: $OUT"
grep -Eq "^[0-9-]+ [0-9:]+ +16K/anon +never +always +demand 12000" <<<"$OUT" || fail "history row: $OUT"
grep -q "(dry run, not written) dense" <<<"$OUT" || fail "history dry run: $OUT"
ok "history reads the MTHP_* fields of real journal files, oldest first across files"

# 3. --since (the one timestamp grammar) and -n
ctl history --since -1h -n 5 --json | json_check '
assert [c["id"] for c in d["changes"]] == ["64K/anon"], d' || fail "history --since -1h"
ctl history --since "150min ago" --json | json_check '
assert [c["id"] for c in d["changes"]] == ["16K/anon", "64K/anon"], d' || fail "history --since '150min ago'"
ctl history -n 1 --json | json_check 'assert [c["id"] for c in d["changes"]] == ["64K/anon"], d' ||
        fail "history -n 1"
ctl history -n 2 --json | json_check 'assert [c["id"] for c in d["changes"]] == ["16K/anon", "64K/anon"], d' ||
        fail "history -n 2"
expect_rc 0 ctl history --since now
grep -q "the journal holds no knob changes by mthpd since " <<<"$OUT" || fail "--since now: $OUT"
ok "history --since and -n on the journal"

# 4. journal files a user may not read: permission denied and what to do, not "no journal files"
if [ "$(id -u)" = 0 ]; then
        nobody_copy NOBODY_CTL "$MTHPCTL"
        chmod 0640 "$JDIR"/*.journal
        expect_rc 0 as_nobody "$NOBODY_CTL" --root "$ROOT" --state-dir "$STATE" history
        grep -q "history: permission denied: uid $NOBODY cannot read 2 of the journal's files" <<<"$ERR" &&
                grep -q "run as root, or as a member of the systemd-journal or adm group" <<<"$ERR" ||
                fail "a user's history of unreadable journal files: $ERR"
        grep -q "no journal files" <<<"$ERR" && fail "unreadable journal files called missing: $ERR"
        grep -q "the journal this user may read holds no knob changes" <<<"$OUT" || fail "a user's history: $OUT"
        ok "history as a user who cannot read the journal files: permission denied, and what to do"
fi
