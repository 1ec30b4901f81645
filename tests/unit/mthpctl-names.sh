#!/bin/bash
# Names that could not be told apart: the escape character is escaped, so
# a cgroup named "n\x1b" (four characters) and one named n+ESC print
# differently, and JSON carries each name itself (JSON's escaping; a byte
# of no valid UTF-8 as "\udcXX", Python's surrogateescape), from the host
# and from mthpd over the bus alike.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS.
# shellcheck source-path=SCRIPTDIR source=../ctl/lib.sh
. "$(dirname "$0")/../ctl/lib.sh"

NAMES=$T/names
# one name a line, as bytes (printf escapes): literal backslash-x-1-b,
# ESC, a literal backslash, byte 0xff, literal backslash-x-f-f, a quote
printf '%s\n' 'n\\x1b' 'n\x1b' 'n\\\\' 'n\xff' 'n\\xff' 'n"q' | while IFS= read -r l; do printf "$l\n"; done > "$NAMES"
[ "$(wc -l < "$NAMES")" = 6 ] || fail "names file: $(cat -v "$NAMES")"
while IFS= read -r name; do
        "$FAKEHOST" cgroup "$ROOT" "$name" >/dev/null || fail "cannot add cgroup $(printf %q "$name")"
done < "$NAMES"
mkdir -m 755 "$T/pol"
printf '[Match]\nCgroup=/n*\n[Policy]\nAnon=always\n' > "$T/pol/n.policy"
chmod 644 "$T/pol/n.policy"

# every line of the text output distinct, and each name's JSON the exact bytes
check_names() { # check_names WHERE: $T/text and $T/json hold cgroups and cgroups --json
        local where=$1
        [ "$(grep -c '^/n' "$T/text")" = 6 ] || fail "$where: not 6 rows: $(cat -v "$T/text")"
        [ "$(grep '^/n' "$T/text" | awk '{print $1}' | sort -u | wc -l)" = 6 ] ||
                fail "$where: two names print the same: $(cat -v "$T/text")"
        grep -qF '/n\\x1b ' "$T/text" || fail "$where: literal \\x1b not shown as \\\\x1b: $(cat -v "$T/text")"
        grep -qF '/n\x1b ' "$T/text" || fail "$where: ESC not shown as \\x1b: $(cat -v "$T/text")"
        python3 -c '
import json, sys
want = sorted(b"/" + l for l in open(sys.argv[1], "rb").read().split(b"\n") if l)
d = json.load(open(sys.argv[2], encoding="utf-8"))
got = sorted(c["path"].encode("utf-8", "surrogateescape") for c in d["cgroups"])
assert got == want, (got, want)' "$NAMES" "$T/json" || fail "$where: JSON names are not the names: $(cat -v "$T/json")"
}

ctl --sample 0 cgroups --policy-dir "$T/pol" > "$T/text" || fail "cgroups (host)"
ctl --sample 0 cgroups --policy-dir "$T/pol" --json > "$T/json" || fail "cgroups --json (host)"
check_names host
ok "host: six names that printed alike print apart; JSON round-trips each name's bytes"

command -v dbus-daemon >/dev/null || { echo "SKIP: dbus-daemon is not installed (the host half passed)"; exit 77; }
start_open_bus
fast_conf "$FAST" 1000
start_mthpd -c "$FAST" --policy-dir "$T/pol"
has_six() { [ "$(ctl cgroups --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["cgroups"]))')" = 6 ]; }
wait_for 10 has_six || fail "mthpd never listed the six cgroups: $(ctl cgroups --json 2>&1 | cat -v)"
ctl cgroups > "$T/text" || fail "cgroups (mthpd)"
ctl cgroups --json > "$T/json" || fail "cgroups --json (mthpd)"
grep -q '"source":"mthpd"' "$T/json" || fail "not from mthpd: $(cat -v "$T/json")"
check_names mthpd
stop_mthpd TERM
ok "mthpd over the bus: the same"
