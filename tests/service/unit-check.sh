#!/bin/bash
# The installed mthpd.service: ExecStart names the installed daemon,
# `systemd-analyze verify` says nothing (binary, man pages and directives all
# resolve), and `systemd-analyze security --offline=yes` rates it at most
# MAX_EXPOSURE. PID 1 need not be systemd: both run offline.
# Env: MESON_BUILD_ROOT, UNITDIR, SBINDIR, MANDIR (absolute paths from meson).
set -euo pipefail
MAX_EXPOSURE=3.5

command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed (.ci/setup installs systemd)"; exit 77; }
T=$(mktemp -d /tmp/mthpd-unit.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }

D=$T/destdir
meson install -C "$MESON_BUILD_ROOT" --destdir "$D" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
        { cat "$T/install.log" >&2; fail "meson install --destdir failed"; }
UNIT=$D$UNITDIR/mthpd.service
[ -f "$UNIT" ] || fail "no $UNITDIR/mthpd.service in the installed tree"
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
[ "$EXEC" = "$SBINDIR/mthpd" ] || fail "ExecStart=$EXEC, not the installed daemon $SBINDIR/mthpd"
[ -x "$D$EXEC" ] || fail "ExecStart=$EXEC is not installed"
ok "ExecStart=$EXEC, installed"

# verify checks that ExecStart is executable, so the copy it reads points
# into the destdir; MANPATH lets it find the installed man pages.
mkdir "$T/v"
sed "s|^ExecStart=/|ExecStart=$D/|" "$UNIT" > "$T/v/mthpd.service"
verify() { MANPATH=$D$MANDIR systemd-analyze verify "$1" >"$T/verify.out" 2>&1; }
verify "$T/v/mthpd.service" || { cat "$T/verify.out" >&2; fail "systemd-analyze verify failed"; }
[ ! -s "$T/verify.out" ] || { cat "$T/verify.out" >&2; fail "systemd-analyze verify is not clean"; }
ok "systemd-analyze verify: clean"

# ...and it does find faults here: a misspelt directive and a missing man page
mkdir "$T/bad"
sed 's/^ProtectHome=/ProtectHomes=/; s/man:mthpd(8)/man:mthpd-missing(8)/' "$T/v/mthpd.service" > "$T/bad/mthpd.service"
verify "$T/bad/mthpd.service" || true
grep -q "ProtectHomes" "$T/verify.out" || { cat "$T/verify.out" >&2; fail "verify missed an unknown directive"; }
grep -q "mthpd-missing" "$T/verify.out" || { cat "$T/verify.out" >&2; fail "verify missed a missing man page"; }
ok "systemd-analyze verify reports a misspelt directive and a missing man page"

systemd-analyze security --offline=yes "$T/v/mthpd.service" >"$T/security.out" 2>&1 ||
        { cat "$T/security.out" >&2; fail "systemd-analyze security failed"; }
grep '^✗' "$T/security.out" | sed 's/^/  /'
LEVEL=$(sed -n 's/.*Overall exposure level for mthpd.service: \([0-9.]*\).*/\1/p' "$T/security.out")
[ -n "$LEVEL" ] || { cat "$T/security.out" >&2; fail "no exposure level in the security report"; }
echo "exposure: $LEVEL (limit $MAX_EXPOSURE)"
awk -v l="$LEVEL" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(l <= m) }' ||
        fail "systemd-analyze security --offline=yes: exposure $LEVEL > $MAX_EXPOSURE"
ok "systemd-analyze security --offline=yes: exposure $LEVEL <= $MAX_EXPOSURE"
