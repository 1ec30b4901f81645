#!/bin/bash
# Issue 13, mthpctl's end (items 3, 4, 5, 6, 7, 9): bytes anyone can choose
# (a comm or cgroup name with ESC[2J, a newline or byte 0xff, a policy file
# quoting them) reach the terminal escaped and JSON as valid UTF-8 (JSON
# strings carry the names themselves: control characters in JSON's own
# escapes, a byte of no valid UTF-8 as a surrogate "\udcXX"), from
# the bus, the host and the files alike; special files and over-long paths
# get an error at once, never a hang or a cut path. The bus side is a
# service that does not escape (raw-bus-service: an mthpd from before the
# fix, still running after an upgrade), so what is tested is mthpctl's own
# escaping. Env: MTHPCTL, MTHPD, FAKEHOST, FAKESYSFS, RAWBUS (from meson).
. "$(dirname "$0")/lib.sh"

# stdin is JSON in strict UTF-8 without raw control bytes; python3 CHECK (d) holds
json_strict() {
        python3 -c '
import json, sys
b = sys.stdin.buffer.read()
t = b.decode("utf-8", "strict")
assert not any(ord(c) < 0x20 and c != "\n" for c in t), "raw control byte in %r" % t
d = json.loads(t)
exec(sys.argv[1])' "$@"
}
# stdin is text in strict UTF-8 without ESC (terminal escapes) or other controls but newlines
text_clean() {
        python3 -c '
import sys
t = sys.stdin.buffer.read().decode("utf-8", "strict")
bad = [c for c in t if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) < 0xa0]
assert not bad, "raw control bytes %r in %r" % (bad, t)'
}

# ---- item 9: check --json DIR lists the errors of the files in it ----
mkdir -m 0755 "$T/pol"
printf '[Match]\nCgroup=/db*\n[Policy]\nAnon=always\n' > "$T/pol/good.policy"
printf '[Match]\nCgroup=/x\n[Policy]\nAnon=\xff\x1b[2J\n' > "$T/pol/bad.policy"
expect_rc 1 "$MTHPCTL" check --json "$T/pol"
json_strict '
f = d["files"]
assert len(f) == 1 and f[0]["file"] == sys.argv[2] and f[0]["valid"] is False, f
e = f[0]["errors"]
assert e and any(x.startswith(sys.argv[2] + "/bad.policy:") for x in e), e
assert any("\udcff\x1b[2J" in x for x in e), e' "$T/pol" <"$T/out" 2>"$T/py" ||
        fail "item09: check --json DIR: $(cat "$T/py"): $(cat -v "$T/out")"
ok "item09: check --json DIR lists the error of the bad file in it, bytes escaped, valid UTF-8"
expect_rc 1 "$MTHPCTL" check "$T/pol"
text_clean <"$T/err" 2>"$T/py" || fail "item04: check DIR on stderr: $(cat "$T/py")"
grep -qF 'got '"'"'\xff\x1b[2J'"'" "$T/err" || fail "item04: check DIR does not quote the bytes escaped: $(cat -v "$T/err")"
expect_rc 1 "$MTHPCTL" check --json "$T/pol/bad.policy" "$T/pol/good.policy"
json_strict '
f = {x["file"]: x for x in d["files"]}
assert f[sys.argv[2] + "/bad.policy"]["valid"] is False and f[sys.argv[2] + "/bad.policy"]["errors"], f
assert f[sys.argv[2] + "/good.policy"]["valid"] is True, f' "$T/pol" <"$T/out" 2>"$T/py" ||
        fail "item09: check --json FILES: $(cat "$T/py")"
ok "item04: check DIR quotes the bytes escaped on stderr; check --json FILES says which file is bad"
rm "$T/pol/bad.policy"

# ---- items 3, 4: a daemon on the bus that sends comms raw ----
start_open_bus
COMM=$'pid 4242 (x\e[2J\e]0;owned\a, 9000 faults/s)\n64K/anon: never\n    forged by a process name'
"$RAWBUS" "$COMM" >"$T/raw.out" 2>"$T/raw.err" &
RAW=$!
fakehost_cleanup_hook() { kill "$RAW" 2>/dev/null || true; }
wait_for 5 grep -q ready "$T/raw.out" || fail "raw-bus-service did not start: $(cat "$T/raw.err")"
expect_rc 0 ctl explain
text_clean <<<"$OUT" 2>"$T/py" || fail "item04: explain prints raw bytes: $(cat "$T/py")"
[ "$(grep -c '^64K/anon:' <<<"$OUT")" = 1 ] || fail "item04: explain shows a forged line: $OUT"
grep -qF 'pid 4242 (x\x1b[2J\x1b]0;owned\x07, 9000 faults/s)\x0a64K/anon: never' <<<"$OUT" ||
        fail "item04: explain does not show the reason escaped: $OUT"
ctl explain --json | json_strict '
k = d["knobs"]
assert len(k) == 1 and k[0]["reason"].startswith("pid 4242 (x\x1b[2J\x1b]0;owned\x07, 9000 faults/s)\n64K/anon"), k
assert "\x1b" in d["not_writable"], d' 2>"$T/py" || fail "item03: explain --json: $(cat "$T/py")"
ok "item04: explain escapes ESC[2J and a newline in a comm from the bus (text and JSON)"
expect_rc 0 ctl history
text_clean <<<"$OUT" 2>"$T/py" || fail "item04: history prints raw bytes: $(cat "$T/py")"
[ "$(grep -c '64K/anon' <<<"$OUT")" = 1 ] || fail "item04: history shows a forged line: $OUT"
ctl history --json | json_strict 'assert "\x1b[2J" in d["changes"][0]["reason"], d' 2>"$T/py" ||
        fail "item03: history --json: $(cat "$T/py")"
expect_rc 0 ctl --sample 0 status
text_clean <<<"$OUT" 2>"$T/py" || fail "item04: status prints raw bytes: $(cat "$T/py")"
ctl --sample 0 status --json | json_strict 'assert "\x1b[2J" in d["not_writable"], d
assert "raise_fault_rate" not in d and "fault_cost_ns" not in d, d' 2>"$T/py" ||
        fail "item03: status --json: $(cat "$T/py")"
! grep -q "mthpd raises a size at" <<<"$OUT" || fail "status shows rates from NaN and infinity: $OUT"
! ctl metrics | grep -q "^mthpd_raise_fault" || fail "metrics show a NaN rate"
ok "item04: history and status escape what the bus sends (text and JSON); NaN rates are not shown"
kill "$RAW"
wait "$RAW" 2>/dev/null || true

# ---- item 3: a cgroup named with byte 0xff, without mthpd ----
"$FAKEHOST" cgroup "$ROOT" "$(printf 'db\xff\x1b[2J')" >/dev/null || fail "cannot add a cgroup to the fake host"
expect_rc 0 ctl --sample 0 cgroups --policy-dir "$T/pol" --json
json_strict '
c = d["cgroups"]
assert d["source"] == "host" and len(c) == 1 and c[0]["path"] == "/db\udcff\x1b[2J", d
assert c[0]["path"].encode("utf-8", "surrogateescape") == b"/db\xff\x1b[2J", d' <"$T/out" 2>"$T/py" ||
        fail "item03: cgroups --json: $(cat "$T/py"): $(cat -v "$T/out")"
expect_rc 0 ctl --sample 0 cgroups --policy-dir "$T/pol"
text_clean <<<"$OUT" 2>"$T/py" || fail "item04: cgroups prints raw bytes: $(cat "$T/py")"
grep -qF '/db\xff\x1b[2J' <<<"$OUT" || fail "item04: cgroups does not show the name escaped: $OUT"
ctl --sample 0 status --json | json_strict 'assert d["daemon"] is False' 2>"$T/py" ||
        fail "item03: status --json: $(cat "$T/py")"
ok "item03: cgroups (text, JSON) with a cgroup named with 0xff and ESC: escaped, valid UTF-8"

# ---- item 8: without mthpd, cgroups decides as mthpd: Unit= not in delegated subtrees ----
mkdir -m 0755 "$T/pol8"
printf '[Match]\nUnit=postgresql@*.service\n[Policy]\nAnon=always\n' > "$T/pol8/db.policy"
"$FAKEHOST" cgroup "$ROOT" user.slice/user-1000.slice/user@1000.service/app.slice/postgresql@x.service >/dev/null
"$FAKEHOST" cgroup "$ROOT" system.slice/postgresql@y.service >/dev/null
# delegated by ownership: a directory owned by a user (mthp_cgroup_owned_by_user)
chown -R "$NOBODY" "$ROOT$("$FAKEHOST" cgroup "$ROOT" srv.slice/postgresql@z.service)"
expect_rc 0 ctl --sample 0 cgroups --policy-dir "$T/pol8" --json
json_strict '
p = [c["path"] for c in d["cgroups"]]
assert p == ["/system.slice/postgresql@y.service"], p' <"$T/out" 2>"$T/py" ||
        fail "item08: cgroups lists a cgroup in a delegated subtree: $(cat "$T/py")"
ok "item08: cgroups without mthpd leaves Unit= out of user@1000.service and a user's cgroup, as mthpd does"

# ---- item 5: special files never hang ----
mkdir -p -m 0755 "$STATE"
mkfifo "$STATE/restore.journal"
t0=$(date +%s%N)
RC=0; timeout -s KILL 10 env LD_PRELOAD="$FAKESYSFS" "$MTHPCTL" --root "$ROOT" --state-dir "$STATE" restore \
        >"$T/out" 2>&1 || RC=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$RC" = 1 ] && [ "$ms" -lt 1000 ] || fail "item05: restore of a FIFO journal: exit $RC after $ms ms: $(cat "$T/out")"
grep -qF "a FIFO, expected a regular file" "$T/out" || fail "item05: restore does not say FIFO: $(cat "$T/out")"
rm "$STATE/restore.journal"
ok "item05: restore of a FIFO journal fails in $ms ms, saying why"
t0=$(date +%s%N)
RC=0; timeout -s KILL 10 "$MTHPCTL" check /dev/zero >"$T/out" 2>&1 || RC=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$RC" = 1 ] && [ "$ms" -lt 1000 ] || fail "item05: check /dev/zero: exit $RC after $ms ms: $(cat "$T/out")"
ok "item05: check /dev/zero fails in $ms ms"

# ---- item 6: the lock is not opened through a symlink ----
journal() { # journal DIR: a journal of 64K/anon (never, mthpd wrote always)
        cat > "$1/restore.journal" <<EOF
[journal]
root=$ROOT

[knob 64K/anon]
path=/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled
original=never
written=always
previous=never
state=managed
EOF
}
"$FAKEHOST" write "$ROOT" 64K/anon always >/dev/null
journal "$STATE"
echo precious > "$T/victim"
ln -s "$T/victim" "$STATE/lock"
expect_rc 1 ctl restore
grep -qF "$STATE/lock: a symbolic link, expected a regular file" <<<"$ERR" || fail "item06: restore with a lock symlink: $ERR"
knob_is hugepages-64kB/enabled always || fail "item06: restored although the lock is a symlink"
rm "$STATE/lock"
expect_rc 0 ctl restore
knob_is hugepages-64kB/enabled never || fail "restore did not restore: $OUT $ERR"
ok "item06: restore refuses a lock that is a symlink, and restores once it is gone"

# ---- item 7: a --state-dir that does not fit is an error, never cut ----
long=$T/$(printf 's%.0s' $(seq 1 200))/$(printf 't%.0s' $(seq 1 $((300 - ${#T} - 202))))
mkdir -p -m 0755 "$long"
"$FAKEHOST" write "$ROOT" 64K/anon always >/dev/null
journal "$long"
RC=0; LD_PRELOAD="$FAKESYSFS" "$MTHPCTL" --root "$ROOT" --state-dir "$long" restore >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" = 2 ] || fail "item07: a ${#long}-byte --state-dir: exit $RC: $(cat "$T/out" "$T/err")"
grep -qF -- "--state-dir $long: expected a path of at most 223 bytes" "$T/err" ||
        fail "item07: a ${#long}-byte --state-dir: $(cat "$T/err")"
RC=0; "$MTHPCTL" --root "$ROOT" explain --state-dir "$long" >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" = 2 ] || fail "item07: --state-dir after the command: exit $RC: $(cat "$T/out" "$T/err")"
RC=0; "$MTHPCTL" --root "$ROOT" cgroups --policy-dir "/$(printf 'p%.0s' $(seq 1 300))" >"$T/out" 2>"$T/err" || RC=$?
[ "$RC" = 2 ] && grep -qF -- "--policy-dir /ppp" "$T/err" || fail "item07: a 301-byte --policy-dir: exit $RC: $(cat "$T/err")"
ok "item07: a ${#long}-byte --state-dir and a 301-byte --policy-dir are refused (exit 2), not cut"
echo "mthpctl-untrusted: all checks passed"
