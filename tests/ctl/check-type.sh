#!/bin/bash
# mthpctl check --type config|policy FILE for any file name (a configuration
# management tool validates a temporary file such as /tmp/ansible.XXXX), the
# type told by the extension without it, and an unknown type refused.
# Env: MTHPCTL.
set -euo pipefail
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }
T=$(mktemp -d /tmp/mthpctl-check.XXXXXX)
trap 'rm -rf "$T"' EXIT
run() { # run RC ARGS...: mthpctl ARGS exits RC; output in $OUT, stderr in $ERR
        local want=$1 rc=0
        shift
        OUT=$("$MTHPCTL" "$@" 2>"$T/err") || rc=$?
        ERR=$(cat "$T/err")
        [ "$rc" = "$want" ] || fail "mthpctl $*: exit $rc, expected $want: $OUT $ERR"
}

printf '[Daemon]\nInterval=2s\n' > "$T/ansible.conf.tmp"
printf '[Match]\nUnit=db.service\n[Policy]\nAnon=always\n' > "$T/ansible.pol.tmp"
printf '[Daemon]\nInterval=forever\n' > "$T/bad.tmp"
chmod 0644 "$T"/*

# 1. by the name, as before: a policy file not named *.policy is read as an mthpd.conf
run 1 check "$T/ansible.pol.tmp"
grep -q "ansible.pol.tmp:1: unknown section \[Match\]: expected \[Daemon\] or \[Engine\]" <<<"$ERR" ||
        fail "without --type: $ERR"
run 0 check "$T/ansible.conf.tmp"

# 2. --type says the type whatever the name
run 0 check --type policy "$T/ansible.pol.tmp"
grep -q "ansible.pol.tmp: ok" <<<"$OUT" || fail "--type policy: $OUT"
run 0 check -t config "$T/ansible.conf.tmp"
run 1 check --type config "$T/bad.tmp"
grep -q "bad.tmp:2: key 'Interval' in \[Daemon\]: expected" <<<"$ERR" || fail "--type config error: $ERR"
run 1 check --type policy "$T/ansible.conf.tmp"
grep -q "ansible.conf.tmp:1: unknown section \[Daemon\]" <<<"$ERR" || fail "--type policy of a config: $ERR"
run 1 check --json --type config "$T/bad.tmp"
python3 -c 'import json,sys; d=json.load(sys.stdin); f=d["files"][0]
assert f["valid"] is False and ":2: key" in f["errors"][0], d' <<<"$OUT" || fail "--json --type: $OUT"
ok "check --type config|policy reads any file name as that type"

# 3. an unknown type is a usage error that says what is expected
run 2 check --type yaml "$T/ansible.conf.tmp"
grep -q "check: --type: expected config (an mthpd.conf) or policy (a policy file), got 'yaml'" <<<"$ERR" ||
        fail "unknown type message: $ERR"
run 0 check --help
grep -q -- "--type TYPE" <<<"$OUT" || fail "check --help lacks --type"
ok "check --type yaml refused (exit 2), --help says --type"
