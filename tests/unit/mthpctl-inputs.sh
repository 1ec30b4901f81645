#!/bin/bash
# mthpctl's readers at their limits, without mthpd: every limit is lifted
# or refused with a message, never a silent cut or an unbounded read.
# - check with more policy files than mthpd loads still judges each one
#   (an invalid and a missing one among 1,100 were reported ok);
# - simulate on a file without newlines (/dev/zero) stops at its first
#   line with an error, in bounded memory (it grew to 1.27 GB in 5 s).
# - mthpd refuses a --state-dir longer than PATH_MAX at once, whole.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson), SANITIZE (b_sanitize).
# shellcheck source-path=SCRIPTDIR source=../ctl/lib.sh
. "$(dirname "$0")/../ctl/lib.sh"

# --- check: 1,100 policy files, one invalid, one missing
P=$T/many
mkdir -m 755 "$P"
for i in $(seq 1 1100); do
        printf '[Match]\nCgroup=/t%d.slice\n[Policy]\nAnon=always\n' "$i" > "$P/p$i.policy"
done
printf '[Match]\nCgroup=/x.slice\n[Policy]\nAnon=sometimes\n' > "$P/p500.policy"
chmod 644 "$P"/*.policy
rm "$P/p700.policy"
FILES=()
for i in $(seq 1 1100); do FILES+=("$P/p$i.policy"); done
expect_rc 1 "$MTHPCTL" check --json "${FILES[@]}"
json_check '
bad = {f["file"].rsplit("/", 1)[1]: f for f in d["files"] if not f["valid"]}
assert len(d["files"]) == 1100, len(d["files"])
assert sorted(bad) == ["p500.policy", "p700.policy"], sorted(bad)
assert "sometimes" in bad["p500.policy"]["errors"][0], bad["p500.policy"]
assert "No such file" in bad["p700.policy"]["errors"][0], bad["p700.policy"]
assert any("at most 1024" in e for e in d["errors"]), d.get("errors")
' <<< "$OUT" || fail "check --json of 1,100 files: ${OUT:0:400}"
expect_rc 1 "$MTHPCTL" check "${FILES[@]}"
grep -q "p500.policy:4: key 'Anon'" <<< "$ERR" || fail "check: no error for p500: $ERR"
grep -q "p700.policy: cannot open" <<< "$ERR" || fail "check: no error for p700: $ERR"
grep -q "1100 policy files, mthpd loads at most 1024" <<< "$ERR" || fail "check: the set's limit unsaid: $ERR"
! grep -q "p500.policy: ok\|p700.policy: ok" <<< "$OUT" || fail "check: an invalid file said ok"
[ "$(grep -c ': ok$' <<< "$OUT")" = 1098 ] || fail "check: not 1098 ok files"
ok "check: 1,100 files, the invalid and the missing one named"

# --- simulate: bounded reads
# at most 1 GB of address space (ASan reserves terabytes of shadow: there
# the time bound alone; an unbounded read takes GBs within seconds)
limit="ulimit -v 1000000;"
case ",${SANITIZE:-}," in *address*) limit="" ;; esac
expect_rc 1 bash -c "$limit"' exec timeout 20 "$0" simulate /dev/zero' "$MTHPCTL"
grep -q "/dev/zero:1: line longer than 65536 bytes" <<< "$ERR" || fail "simulate /dev/zero: $ERR"
{ printf 'mthp-record 1\n'; head -c 100000 /dev/zero | tr '\0' x; printf '\n'; } > "$T/long.rec"
expect_rc 1 "$MTHPCTL" simulate "$T/long.rec"
grep -q "long.rec:2: line longer than 65536 bytes" <<< "$ERR" || fail "simulate long line: $ERR"
ok "simulate: a line without end is refused at its line"

# --- mthpd: a --state-dir longer than PATH_MAX is refused whole, saying what was expected
long=/$(printf 'a%.0s' $(seq 1 5000))
expect_rc 2 "$MTHPD" --root "$ROOT" --no-bus --once -c "$FAST" --state-dir "$long"
grep -q -- "--state-dir /aaaa*\.\.\.: expected an absolute path of at most 223 bytes, got 5001 bytes" <<< "$ERR" ||
        fail "mthpd --state-dir of 5001 bytes: ${ERR:0:300}...${ERR: -200}"
[ ! -e "${long:0:200}" ] || fail "mthpd created a cut --state-dir"
expect_rc 2 "$MTHPD" --root "$ROOT" --no-bus --once -c "$FAST" --policy-dir "$long"
grep -q -- "--policy-dir /aaaa*\.\.\.: expected an absolute path of at most 255 bytes, got 5001 bytes" <<< "$ERR" ||
        fail "mthpd --policy-dir of 5001 bytes: ${ERR: -200}"
ok "mthpd: a 5001-byte --state-dir or --policy-dir is refused at once, saying what was expected"
