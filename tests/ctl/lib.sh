# Shared by the mthpctl tests (sourced): a temp dir, a fake host tree, and
# helpers to run the real mthpctl and mthpd on it.
# Env: MTHPD, MTHPCTL, FAKEHOST, FAKESYSFS (paths from meson).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib/fakehost.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/fakehost.sh"

command -v python3 >/dev/null || { echo "SKIP: python3 is not installed"; exit 77; }

fakehost_setup mthpctl-test
chmod 755 "$T" # uid 65534 reads the fake host and reaches the bus socket
TMUX_SOCK=""
# under UBSan, undefined behaviour fails the command instead of scrolling past
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}halt_on_error=1:print_stacktrace=1"
# the real system bus, if this host has one, is none of the tests' business
export DBUS_SYSTEM_BUS_ADDRESS="unix:path=$T/no-bus"

fakehost_cleanup_hook() { [ -n "$TMUX_SOCK" ] && tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true; }

# mthpctl on the fake host; the preload gives its writes (restore) kernel semantics
ctl() { LD_PRELOAD="$FAKESYSFS" "$MTHPCTL" --root "$ROOT" --state-dir "$STATE" "$@"; }
# run CMD... and check its exit status: expect_rc RC CMD...; output in $OUT, stderr in $ERR
expect_rc() {
        local want=$1 rc=0; shift
        "$@" >"$T/out" 2>"$T/err" || rc=$?
        OUT=$(cat "$T/out") ERR=$(cat "$T/err")
        [ "$rc" = "$want" ] || fail "'$*' exited $rc, expected $want; stdout: $OUT; stderr: $ERR"
}
# JSON on stdin must parse; python3 CHECK (with d = the document) must hold
json_check() { python3 -c 'import json,sys; d=json.load(sys.stdin); exec(sys.argv[1])' "$1"; }

# Every non-comment line a sample, every family announced by HELP and TYPE first.
check_metrics() {
        python3 -c '
import re, sys
sample = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*(\{[^}]*\})? -?[0-9.eE+-]+(\s[0-9]+)?$")
helped, typed, seen = set(), {}, set()
for n, line in enumerate(sys.stdin, 1):
    line = line.rstrip("\n")
    if line.startswith("# HELP "):
        helped.add(line.split()[2]); continue
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split()
        assert name in helped, f"line {n}: TYPE before HELP for {name}"
        assert kind in ("counter", "gauge"), f"line {n}: type {kind}"
        typed[name] = kind; continue
    assert not line.startswith("#"), f"line {n}: stray comment {line!r}"
    assert sample.match(line), f"line {n}: not a sample: {line!r}"
    name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
    assert name in typed, f"line {n}: {name} without HELP/TYPE before it"
    assert typed[name] != "counter" or name.endswith("_total"), f"counter {name} lacks _total"
    seen.add(name)
print(" ".join(sorted(seen)))
'
}

"$FAKEHOST" create "$ROOT"
FAST=$T/fast.conf
fast_conf "$FAST" 100
