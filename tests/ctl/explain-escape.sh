#!/bin/bash
# A name is escaped once on its way to the terminal: the engine escapes the
# names it quotes in a reason (a backslash doubled, as mthp_escape does
# everywhere), so explain, history and top must print the reason as it is,
# not escape it again. A systemd unit's "\x2d" then reads "\\x2d" in the
# reason, as in every other place mthpctl names that cgroup, never
# "\\\\x2d". The real mthpd on a private bus, a policy for a faulting fake
# cgroup named like a systemd unit with an escaped dash.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
. "$(dirname "$0")/lib.sh"

start_open_bus
CG='db\x2dmain.service'
"$FAKEHOST" cgroup "$ROOT" "$CG" >/dev/null || fail "fake cgroup $CG"
D=$ROOT/sys/fs/cgroup/$CG
chmod u+w "$D/memory.stat" "$D/memory.current"
: > "$D/memory.stat"
echo 4096 > "$D/memory.current"
P=$T/policy.d
mkdir -m 755 "$P"
printf '[Match]\nUnit=db*.service\n[Policy]\nAnon=always\nSizes=16K-64K\nPriority=80\n' > "$P/10-db.policy"
chmod 644 "$P/10-db.policy"

FAULTS=1000000
fault_for() { # fault_for N: N ticks of faulting for the cgroup and the host, 50 ms apart
        for _ in $(seq "$1"); do
                FAULTS=$((FAULTS + 5000))
                printf 'anon %d\nfile 0\nshmem 0\npgfault %d\npgmajfault 0\n' $((FAULTS * 4096)) $FAULTS 1<>"$D/memory.stat"
                printf '%d\n' $((FAULTS * 4096)) 1<>"$D/memory.current"
                bump_faults 1
        done
}
start_mthpd -c "$FAST" --policy-dir "$P"
fault_for 200 &
F=$!
fakehost_cleanup_hook() { kill "$F" 2>/dev/null || true; }
wait_for 10 knob_is hugepages-64kB/enabled always || fail "64K/anon not raised for $CG"

# the name as mthpctl prints it anywhere: mthp_escape once
ONCE='/db\\x2dmain.service'
explain_names() { OUT=$(ctl explain 64K 2>&1) && grep -qF "cgroup $ONCE (" <<<"$OUT"; }
wait_for 5 explain_names || fail "explain 64K does not name $ONCE escaped once: $OUT"
! grep -qF 'db\\\\x2d' <<<"$OUT" || fail "explain escapes the reason's names twice: $OUT"
ctl explain --json | json_check '
r = {k["id"]: k for k in d["knobs"]}["64K/anon"]["reason"]
assert "cgroup /db\\\\x2dmain.service (" in r, r' || fail "explain --json: $(ctl explain --json)"
ok "explain prints a cgroup named with a backslash escaped once (text), as the engine quoted it (JSON)"

expect_rc 0 ctl history
grep -qF "$ONCE" <<<"$OUT" || fail "history does not name $ONCE escaped once: $OUT"
! grep -qF 'db\\\\x2d' <<<"$OUT" || fail "history escapes the reason's names twice: $OUT"
ok "history prints the reasons' names escaped once"
