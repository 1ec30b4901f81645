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

# systemctl reload must wait for mthpd's answer and fail on a rejected
# configuration: mthpctl reload does, a bare SIGHUP cannot
RELOAD=$(sed -n 's/^ExecReload=//p' "$UNIT")
[ "$RELOAD" = "$BINDIR/mthpctl reload" ] || fail "ExecReload=$RELOAD, not the installed '$BINDIR/mthpctl reload'"
[ -x "$D$BINDIR/mthpctl" ] || fail "ExecReload's $BINDIR/mthpctl is not installed"
ok "ExecReload=$RELOAD, installed"

# every exit status of daemon/daemon.h (MTHPD_EXIT_*: knobs not writable,
# an unrestorable journal, an invalid configuration) is one a restart cannot
# mend, so none is restarted; and a start limit that can trip at RestartSec=
# spacing ends a failing loop
CODES=$(sed -n 's/^#define MTHPD_EXIT_[A-Z_]* \([0-9]*\)$/\1/p' "$MESON_SOURCE_ROOT/daemon/daemon.h" | sort -n | tr '\n' ' ')
[ -n "$CODES" ] || fail "no MTHPD_EXIT_* codes found in daemon/daemon.h"
PREVENT=" $(sed -n 's/^RestartPreventExitStatus=//p' "$UNIT") "
for c in $CODES; do
        [[ "$PREVENT" == *" $c "* ]] || fail "exit status $c (daemon/daemon.h) is not in RestartPreventExitStatus=$PREVENT"
        grep -q "^\*$c\*" "$MESON_SOURCE_ROOT/man/mthpd.8.scd" || fail "exit status $c is not in mthpd(8) EXIT STATUS"
done
RSEC=$(sed -n 's/^RestartSec=\([0-9]*\)s$/\1/p' "$UNIT")
INT=$(sed -n 's/^StartLimitIntervalSec=\([0-9]*\)s$/\1/p' "$UNIT")
BURST=$(sed -n 's/^StartLimitBurst=\([0-9]*\)$/\1/p' "$UNIT")
[ -n "$RSEC" ] && [ -n "$INT" ] && [ -n "$BURST" ] || fail "RestartSec=, StartLimitIntervalSec= or StartLimitBurst= missing"
[ $((RSEC * BURST)) -lt "$INT" ] ||
        fail "StartLimitBurst=$BURST in ${INT}s cannot trip with RestartSec=${RSEC}s"
ok "RestartPreventExitStatus= lists every MTHPD_EXIT_* ($CODES); $BURST starts ${RSEC}s apart trip StartLimitIntervalSec=${INT}s"

# the watchdog cadence the unit, mthpd(8) and the README state is the code's
DIV=$(sed -n 's/.*sd_event_source_set_time(s, usec + watchdog_usec \/ \([0-9]*\)).*/\1/p' \
        "$MESON_SOURCE_ROOT/daemon/mthpd.c")
case "$DIV" in
2) WORD=half ;;
3) WORD=third ;;
*) fail "cannot find the watchdog period in daemon/mthpd.c (got '$DIV')" ;;
esac
grep -q "^# WATCHDOG=1 from the event loop every $WORD of WatchdogSec" "$UNIT" ||
        fail "the unit's comment does not say WATCHDOG=1 every $WORD of WatchdogSec (the code pings at WatchdogSec/$DIV)"
grep -q "WATCHDOG=1 every $WORD of \*WatchdogSec=\*" "$MESON_SOURCE_ROOT/man/mthpd.8.scd" ||
        fail "mthpd(8) does not say WATCHDOG=1 every $WORD of WatchdogSec= (the code pings at WatchdogSec/$DIV)"
grep -q "mthpd pings every $WORD of it" "$MESON_SOURCE_ROOT/README.md" ||
        fail "the README does not say mthpd pings every $WORD of WatchdogSec (the code: WatchdogSec/$DIV)"
ok "unit, mthpd(8) and README: WATCHDOG=1 every $WORD of WatchdogSec, as the code"

# verify checks that ExecStart is executable, so the copy it reads points
# into the destdir; MANPATH lets it find the installed man pages.
mkdir "$T/v"
sed "s|^ExecStart=/|ExecStart=$D/|; s|^ExecReload=/|ExecReload=$D/|" "$UNIT" > "$T/v/mthpd.service"
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

# mthpd-metrics.service and .timer: the installed mthpctl writes Debian's
# node_exporter textfile directory, the one path README, mthpctl(8) and
# docs/metrics.md give; both units verify clean
PROM_DIR=/var/lib/prometheus/node-exporter
MUNIT=$D$UNITDIR/mthpd-metrics.service
[ -f "$MUNIT" ] && [ -f "$D$UNITDIR/mthpd-metrics.timer" ] || fail "mthpd-metrics.service or .timer not installed in $UNITDIR"
MEXEC=$(sed -n 's/^ExecStart=//p' "$MUNIT")
[ "$MEXEC" = "$BINDIR/mthpctl metrics --output $PROM_DIR/mthpd.prom" ] ||
        fail "mthpd-metrics.service: ExecStart=$MEXEC, not '$BINDIR/mthpctl metrics --output $PROM_DIR/mthpd.prom'"
grep -qx "ReadWritePaths=$PROM_DIR" "$MUNIT" || fail "mthpd-metrics.service cannot write $PROM_DIR"
for doc in README.md man/mthpctl.8.scd docs/metrics.md; do
        grep -q "$PROM_DIR" "$MESON_SOURCE_ROOT/$doc" || fail "$doc does not name $PROM_DIR"
        ! grep -n 'node_exporter/\|textfile_collector\|/var/lib/node' "$MESON_SOURCE_ROOT/$doc" ||
                fail "$doc names another textfile directory than $PROM_DIR"
done
sed "s|^ExecStart=/|ExecStart=$D/|" "$MUNIT" > "$T/v/mthpd-metrics.service"
cp "$D$UNITDIR/mthpd-metrics.timer" "$T/v/"
for u in mthpd-metrics.service mthpd-metrics.timer; do
        verify "$T/v/$u" || { cat "$T/verify.out" >&2; fail "systemd-analyze verify $u failed"; }
        [ ! -s "$T/verify.out" ] || { cat "$T/verify.out" >&2; fail "systemd-analyze verify $u is not clean"; }
done
ok "mthpd-metrics.service (ExecStart=$MEXEC) and .timer: verify clean; README, mthpctl(8), docs/metrics.md name $PROM_DIR"
MLEVEL=$(systemd-analyze security --offline=yes "$T/v/mthpd-metrics.service" 2>&1 |
        sed -n 's/.*Overall exposure level for mthpd-metrics.service: \([0-9.]*\).*/\1/p')
[ -n "$MLEVEL" ] && awk -v l="$MLEVEL" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(l <= m) }' ||
        fail "mthpd-metrics.service: exposure '$MLEVEL', limit $MAX_EXPOSURE"
ok "mthpd-metrics.service: exposure $MLEVEL <= $MAX_EXPOSURE"

systemd-analyze security --offline=yes "$T/v/mthpd.service" >"$T/security.out" 2>&1 ||
        { cat "$T/security.out" >&2; fail "systemd-analyze security failed"; }
grep '^✗' "$T/security.out" | sed 's/^/  /'
LEVEL=$(sed -n 's/.*Overall exposure level for mthpd.service: \([0-9.]*\).*/\1/p' "$T/security.out")
[ -n "$LEVEL" ] || { cat "$T/security.out" >&2; fail "no exposure level in the security report"; }
echo "exposure: $LEVEL (limit $MAX_EXPOSURE)"
awk -v l="$LEVEL" -v m="$MAX_EXPOSURE" 'BEGIN { exit !(l <= m) }' ||
        fail "systemd-analyze security --offline=yes: exposure $LEVEL > $MAX_EXPOSURE"
ok "systemd-analyze security --offline=yes: exposure $LEVEL <= $MAX_EXPOSURE"
